"""The xml and tool formats, and choosing a format per call."""

from __future__ import annotations

from fencecall import ToolCall
from fencecall.parsing import parse_calls

from ..support import F


def test_markdown_calls_take_name_from_first_word() -> None:
    [call] = parse_calls(f"{F}save my file.txt\nhello\n{F}\n")
    assert (call.name, call.argline, call.args, call.content) == (
        "save", "my file.txt", ("my", "file.txt"), "hello")
    assert call.format == "markdown"


def test_bare_blocks_are_not_calls() -> None:
    assert parse_calls(f"{F}\nplain\n{F}\n") == []


def test_xml_tool_use_with_args_and_angle_brackets_in_code() -> None:
    text = (
        "I'll write it.\n<tool-use>\n<save args=\"page.html\">\n"
        "<html><body>if a < b && c > d</body></html>\n</save>\n</tool-use>\n"
    )
    [call] = parse_calls(text, "xml")
    assert call.name == "save"
    assert call.argline == "page.html"
    assert call.content == "<html><body>if a < b && c > d</body></html>"
    assert call.start == text.index("<save")
    assert call.format == "xml"


def test_xml_child_ends_at_its_last_closing_tag() -> None:
    text = "<tool-use><shell>echo '</shell> not yet'</shell></tool-use>"
    [call] = parse_calls(text, "xml")
    assert call.content == "echo '</shell> not yet'"


def test_xml_several_children_and_blocks() -> None:
    text = "<tool-use><shell>ls</shell>\n<ipython>1+1</ipython></tool-use>\n" \
        "text\n<tool-use>\n<shell>pwd</shell>\n</tool-use>"
    assert [(c.name, c.content) for c in parse_calls(text, "xml")] == [
        ("shell", "ls"), ("ipython", "1+1"), ("shell", "pwd")]


def test_xml_cdata_protects_closing_tags() -> None:
    text = "<tool-use><save args='a.xml'><![CDATA[</save></tool-use>]]></save></tool-use>"
    [call] = parse_calls(text, "xml")
    assert call.content == "</save></tool-use>"


def test_xml_attributes_become_kwargs_and_entities_decode() -> None:
    [call] = parse_calls('<tool-use><patch args="a &amp; b.py" mode="strict">x</patch>'
                         "</tool-use>", "xml")
    assert call.argline == "a & b.py"
    assert call.kwargs == {"mode": "strict"}


def test_function_calls_invoke_form() -> None:
    text = (
        "<function_calls>\n<invoke name=\"shell\">\n"
        "<parameter name=\"command\">ls -la | grep '<x>'</parameter>\n"
        "<parameter name=\"timeout\">5</parameter>\n</invoke>\n"
        "<invoke name=\"read\"><parameter name=\"path\">a.py</parameter></invoke>\n"
        "</function_calls>"
    )
    calls = parse_calls(text, "xml")
    assert [(c.name, dict(c.kwargs)) for c in calls] == [
        ("shell", {"command": "ls -la | grep '<x>'", "timeout": "5"}),
        ("read", {"path": "a.py"}),
    ]


def test_xml_inside_code_block_or_thinking_is_ignored() -> None:
    text = (
        f"Example:\n{F}xml\n<tool-use><shell>rm -rf /</shell></tool-use>\n{F}\n"
        "<thinking><tool-use><shell>rm -rf ~</shell></tool-use></thinking>\n"
        "<tool-use><shell>ls</shell></tool-use>"
    )
    assert [c.content for c in parse_calls(text, "xml")] == ["ls"]


def test_mentioned_opener_does_not_hide_the_real_call() -> None:
    text = "I'll use the `<tool-use>` tag now.\n<tool-use><shell>ls</shell></tool-use>"
    [call] = parse_calls(text, "xml")
    assert (call.name, call.content, call.start) == ("shell", "ls", text.index("<shell>"))
    cdata = "<tool-use><save args='a'><![CDATA[x <tool-use> y]]></save></tool-use>"
    assert parse_calls(cdata, "xml")[0].content == "x <tool-use> y"


def test_xml_format_does_not_run_markdown_blocks() -> None:
    assert parse_calls(f"{F}shell\nls\n{F}\n", "xml") == []


def test_unclosed_xml_is_not_a_call() -> None:
    assert parse_calls("<tool-use><shell>ls</shell>", "xml") == []


def test_tool_format_json_with_braces_in_strings() -> None:
    text = 'Running it.\n@shell(call_1): {"command": "echo \\"}\\" {"}\nok'
    [call] = parse_calls(text, "tool")
    assert call == ToolCall("shell", kwargs={"command": 'echo "}" {'}, call_id="call_1",
                            start=text.index("@"), format="tool")


def test_tool_format_pretty_printed_json_and_several_calls() -> None:
    text = '@save(a): {\n  "path": "x.py",\n  "content": "{}"\n}\n@shell(b): {"command": "ls"}\n'
    calls = parse_calls(text, "tool")
    assert [(c.name, c.call_id) for c in calls] == [("save", "a"), ("shell", "b")]
    assert calls[0].kwargs == {"path": "x.py", "content": "{}"}


def test_tool_format_ignores_calls_in_code_blocks_and_mid_line() -> None:
    text = (
        f'{F}text\n@shell(x): {{"command": "rm -rf /"}}\n{F}\n'
        'write to me@shell(y): {"command": "no"}\n'
        '@shell(z): {"command": "ls"}\n'
    )
    assert [c.call_id for c in parse_calls(text, "tool") if c.format == "tool"] == ["z"]


def test_tool_format_also_reads_markdown_in_order() -> None:
    text = f'@shell(a): {{"command": "ls"}}\n{F}ipython\n1+1\n{F}\n@read(b): {{"path": "x"}}\n'
    assert [c.name for c in parse_calls(text, "tool")] == ["shell", "ipython", "read"]


def test_tool_format_incomplete_or_invalid_json_is_not_an_error() -> None:
    assert parse_calls('@shell(a): {"command": "l', "tool", streaming=True) == []
    assert parse_calls('@shell(a): {"command": "l', "tool") == []
    text = '@shell(a): {"command": "unterminated\n@shell(b): {"command": "ls"}\n'
    assert [c.call_id for c in parse_calls(text, "tool")] == ["b"]
    assert parse_calls('@shell(a): {"a" 1}\n', "tool") == []


def test_tool_call_without_id() -> None:
    [call] = parse_calls('@shell(): {"command": "ls"}', "tool")
    assert call.call_id is None


def test_format_accepts_strings_and_is_per_call() -> None:
    text = f"{F}shell\nls\n{F}\n<tool-use><shell>pwd</shell></tool-use>"
    assert [c.content for c in parse_calls(text, "markdown")] == ["ls"]
    assert [c.content for c in parse_calls(text, "xml")] == ["pwd"]
