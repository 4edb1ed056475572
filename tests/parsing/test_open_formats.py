"""The formats open models are trained to write: hermes, qwen3-coder, pythonic, and auto,
which finds out per reply which one (or which of the others) the model used."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fencecall.execution import Session
from fencecall.parsing import (
    Diagnostic,
    StreamParser,
    ToolCall,
    UnrepresentableCall,
    get_format,
    parse,
    parse_calls,
    render,
)
from fencecall.parsing._pyscan import PyEndScanner
from fencecall.tools import Toolchain

from ..sample_tools import CATALOGUE
from ..support import F, in_linear_time
from .test_properties import chunked

HERMES_CALL = '<tool_call>\n{"name": "shell", "arguments": {"command": "ls"}}\n</tool_call>'
QWEN_CALL = ("<tool_call>\n<function=shell>\n<parameter=command>\nls\n</parameter>\n"
             "</function>\n</tool_call>")


def named(calls: list[ToolCall]) -> list[tuple[str, dict[str, object]]]:
    return [(c.name, dict(c.kwargs)) for c in calls]


def streamed(text: str, fmt: str, size: int = 1) -> tuple[list[ToolCall], list[Diagnostic]]:
    parser = StreamParser(fmt)
    calls = [c for i in range(0, len(text), size) for c in parser.feed(text[i : i + size])]
    return calls + parser.finish(), parser.diagnostics


def only(diagnostics: list[Diagnostic]) -> Diagnostic:
    [diagnostic] = diagnostics
    return diagnostic


# -- hermes ------------------------------------------------------------------------------


def test_hermes_several_calls_and_arguments_as_a_json_string() -> None:
    text = (f"Listing, then reading.\n{HERMES_CALL}\n"
            '<tool_call>{"name": "read", "arguments": "{\\"path\\": \\"a.py\\"}"}</tool_call>\n'
            '<tool_call>{"name": "now"}</tool_call>\n')
    parsed = parse(text, "hermes")
    assert named(parsed.calls) == [("shell", {"command": "ls"}), ("read", {"path": "a.py"}),
                                   ("now", {})]
    assert parsed.calls[0] == ToolCall("shell", kwargs={"command": "ls"},
                                       start=text.index("<tool_call>"), format="hermes")
    assert parsed.diagnostics == []
    assert streamed(text, "hermes") == (parsed.calls, [])


def test_hermes_strings_may_hold_raw_newlines_and_tabs() -> None:
    text = '<tool_call>{"name": "save", "arguments": {"content": "def f():\n\treturn 1"}}' \
        "</tool_call>"
    assert named(parse_calls(text, "hermes")) == [("save", {"content": "def f():\n\treturn 1"})]


def test_hermes_reads_llama_parameters_key() -> None:
    text = '<tool_call>{"name": "shell", "parameters": {"command": "ls"}}</tool_call>'
    assert named(parse_calls(text, "hermes")) == [("shell", {"command": "ls"})]


def test_hermes_calls_in_code_blocks_and_thinking_are_ignored() -> None:
    text = (f"<think>\n{HERMES_CALL}\n</think>\nExample:\n{F}xml\n{HERMES_CALL}\n{F}\n"
            '<tool_call>{"name": "read", "arguments": {"path": "x"}}</tool_call>\n')
    assert named(parse_calls(text, "hermes")) == [("read", {"path": "x"})]


@pytest.mark.parametrize(("body", "what"), [
    ('{"name": "shell", "arguments": {"command" "ls"}}',
     "holds JSON that could not be read (Expecting ':' delimiter"),
    ('{"arguments": {"command": "ls"}}', 'has no "name" string naming the tool'),
    ('{"name": "shell", "arguments": ["ls"]}',
     'for shell has "arguments" that is a list, not a JSON object'),
    ('{"name": "shell", "arguments": "ls -la"}',
     'for shell has "arguments" as a string that is not JSON (Expecting value'),
    ('{"name": "shell", "command": "ls"}',
     'for shell has no "arguments" but other keys (command); put the arguments inside '
     '"arguments"'),
    ('{"name": "a"} {"name": "b"}', "holds text after its JSON object; write one call per"),
    ('["shell", "ls"]', 'holds neither a JSON object like {"name": "TOOL"'),
    ("", 'is empty; write {"name": "TOOL", "arguments": {…}} inside it'),
    ("shell ls", 'holds neither a JSON object like {"name": "TOOL", "arguments": {…}} nor '
     "<function=TOOL>…</function>"),
])
def test_hermes_malformed_bodies_are_reported_and_the_next_call_runs(body: str,
                                                                     what: str) -> None:
    text = f"Trying.\n\n<tool_call>\n{body}\n</tool_call>\n{HERMES_CALL}\n"
    parsed = parse(text, "hermes")
    assert named(parsed.calls) == [("shell", {"command": "ls"})]
    diagnostic = only(parsed.diagnostics)
    assert (diagnostic.kind, diagnostic.line, diagnostic.start) == (
        "malformed", 3, text.index("<tool_call>"))
    assert diagnostic.message.startswith(f"The <tool_call> call on line 3 {what}")
    assert diagnostic.message.endswith("; it did not run.")
    assert streamed(text, "hermes", 7) == (parsed.calls, parsed.diagnostics)


def test_an_unclosed_tool_call_is_reported_and_the_rest_is_read() -> None:
    text = ('Here:\n<tool_call>\n{"name": "shell", "arguments": {"command": "rm -rf build"}}\n'
            f'Then:\n@read(c1): {{"path": "x"}}\n{F}shell\nls\n{F}\n')
    for fmt in ("hermes", "tool"):
        parsed = parse(text, fmt)
        assert only(parsed.diagnostics).message == (
            "The <tool_call> call opened on line 2 was never closed with </tool_call>, so it "
            "did not run.")
        assert streamed(text, fmt, 5) == (parsed.calls, parsed.diagnostics)
    assert [c.name for c in parse_calls(text, "tool")] == ["read", "shell"]


def test_a_tool_call_opened_again_before_closing_was_only_mentioned() -> None:
    text = ("Use the <tool_call> tag:\n"
            '<tool_call>{"name": "read", "arguments": {"path": "x"}}</tool_call>\n')
    parsed = parse(text, "hermes")
    assert named(parsed.calls) == [("read", {"path": "x"})]
    assert parsed.calls[0].start == text.index("<tool_call>{")
    assert parsed.diagnostics == []


def test_hermes_render_and_escapes_tags_inside_strings() -> None:
    call = ToolCall("save", kwargs={"path": "a.md", "content": "a </tool_call> b <tool_call>"})
    text = render(call, "hermes")
    assert text.startswith("<tool_call>\n{") and text.endswith("}\n</tool_call>")
    assert "\\u003c/tool_call>" in text
    [parsed] = parse_calls(text, "hermes")
    assert parsed.key() == call.key()
    with pytest.raises(UnrepresentableCall):
        render(ToolCall("save", "a.md", "text"), "hermes")


# -- qwen3-coder ---------------------------------------------------------------------------


def test_qwen3_coder_parameters_are_raw_text() -> None:
    text = ("I'll save it.\n<tool_call>\n<function=save>\n<parameter=path>\nsrc/a.py\n"
            "</parameter>\n<parameter=content>\ndef f(a, b):\n    return a < b and b > 0\n\n"
            "</parameter>\n</function>\n<function=shell>\n<parameter=command>\npytest -q\n"
            "</parameter>\n</function>\n</tool_call>\n" + QWEN_CALL)
    parsed = parse(text, "qwen3-coder")
    assert named(parsed.calls) == [
        ("save", {"path": "src/a.py", "content": "def f(a, b):\n    return a < b and b > 0\n"}),
        ("shell", {"command": "pytest -q"}),
        ("shell", {"command": "ls"}),
    ]
    assert parsed.calls[0].start == text.index("<function=save>")
    assert parsed.calls[0].format == "qwen3-coder"
    assert streamed(text, "qwen3-coder") == (parsed.calls, [])


def test_qwen3_coder_values_may_mention_the_closing_tag() -> None:
    text = ("<tool_call><function=save><parameter=content>\nwrite </parameter> to close\n"
            "</parameter></function></tool_call>")
    assert named(parse_calls(text, "qwen3-coder")) == [
        ("save", {"content": "write </parameter> to close"})]


@pytest.mark.parametrize(("body", "what"), [
    ("<function=shell>\n<parameter=command>\nls\n</parameter>",
     "has a <function=shell> that is never closed with </function>"),
    ("<function=shell>\nls -la\n</function>",
     "has a <function=shell> that holds text that is not a <parameter=NAME>…</parameter> "
     "element"),
    ("<function=shell>\n<parameter=a>1</parameter>\n<parameter=a>2</parameter>\n</function>",
     "has a <function=shell> that sets <parameter=a> twice"),
    ("<function=shell>\n<parameter=>1</parameter>\n</function>",
     "has a <function=shell> that has a <parameter=> with no name"),
    ("<function=>\n</function>", "has a <function=> that names no tool"),
    ("<function={{ tc.name }}>\n</function>",
     "has a <function={{ tc.name }}> that has a name no tool can have"),
    ("<function=shell>\n</function>\nthanks", "holds text that is not a <function=TOOL>"),
])
def test_qwen3_coder_malformed_bodies_are_reported(body: str, what: str) -> None:
    text = f"First:\n<tool_call>\n{body}\n</tool_call>\nThen:\n{QWEN_CALL}\n"
    parsed = parse(text, "qwen3-coder")
    assert named(parsed.calls)[-1] == ("shell", {"command": "ls"})
    diagnostic = only(parsed.diagnostics)
    assert (diagnostic.kind, diagnostic.line) == ("malformed", 2)
    assert diagnostic.message.startswith(f"The <tool_call> call on line 2 {what}")


def test_qwen3_coder_values_end_by_structure() -> None:
    """A value may quote the tags (a file about tool calls); it ends at the </parameter>
    that the next parameter or </function> follows and that closes no <parameter= it opened
    at a line's start itself."""
    content = ('doc = """\n<parameter=path>\nliteral\n</parameter>\n"""\n'
               'print("</parameter>\\n</function>")\n<function=shell> and </function>')
    for text in (f"<tool_call>\n<function=save>\n<parameter=path>\na.py\n</parameter>\n"
                 f"<parameter=content>\n{content}\n</parameter>\n</function>\n</tool_call>",
                 f"Saving:\n<function=save>\n<parameter=path>\na.py\n</parameter>\n"
                 f"<parameter=content>\n{content}\n</parameter>\n</function>\nDone."):
        for fmt in ("qwen3-coder", "hermes", "auto"):
            parsed = parse(text, fmt)
            assert named(parsed.calls) == [("save", {"path": "a.py", "content": content})]
            assert parsed.diagnostics == []
            for size in (1, 7):
                assert streamed(text, fmt, size) == (parsed.calls, [])


def test_qwen3_coder_a_value_never_closed_in_a_tag_ends_as_vllm_reads_it() -> None:
    text = ("<tool_call>\n<function=weather>\n<parameter=city>\nDallas\n<parameter=state>\nTX\n"
            "</parameter>\n<parameter=unit>\nF\n</function>\n</tool_call>")
    assert named(parse_calls(text, "qwen3-coder")) == [
        ("weather", {"city": "Dallas", "state": "TX", "unit": "F"})]


def test_bare_functions_are_read_at_the_start_of_a_line() -> None:
    text = (f"Looking first.\n<function=bash>\n<parameter=command>ls -la</parameter>\n"
            "</function>\nThen, as an example only: <function=bash> mid-line.\n"
            f"{F}xml\n<function=bash>\n<parameter=command>no</parameter>\n</function>\n{F}\n"
            "<think>\n<function=bash>\n<parameter=command>no</parameter>\n</function>\n</think>\n"
            "  <function=submit>\n</function>\n</tool_call>\n")
    for fmt in ("qwen3-coder", "hermes", "auto"):
        parsed = parse(text, fmt)
        assert named(parsed.calls) == [("bash", {"command": "ls -la"}), ("submit", {})]
        assert parsed.calls[0].start == text.index("<function=bash>")
        assert parsed.calls[0].format == ("hermes" if fmt == "hermes" else "qwen3-coder")
        assert parsed.diagnostics == []
        assert streamed(text, fmt, 3) == (parsed.calls, [])


@pytest.mark.parametrize(("body", "message"), [
    ("<function=bash>\nls -la\n</function>",
     "The <function=bash> call on line 2 holds text that is not a <parameter=NAME>…</parameter> "
     "element; it did not run."),
    ("<function={{ tc.name }}>\n<parameter={{ k }}>\nv\n</parameter>\n</function>",
     "The <function={{ tc.name }}> call on line 2 has a name no tool can have; it did not run."),
    # A bare element needs its closing tags: a reply cut off mid-call must not run.
    ("<function=bash>\n<parameter=command>\nls\n</function>",
     "The <function=bash> call on line 2 never ends"),
    ("<function=bash>\n<parameter=command>\nls\n</parameter>",
     "The <function=bash> call on line 2 never ends"),
])
def test_bare_functions_that_cannot_run_are_reported(body: str, message: str) -> None:
    text = f"Running:\n{body}\n"
    for fmt in ("qwen3-coder", "auto"):
        parsed = parse(text, fmt)
        assert parsed.calls == []
        assert only(parsed.diagnostics).message.startswith(message)
        assert streamed(text, fmt, 4) == ([], parsed.diagnostics)


def test_one_tag_reader_understands_both_bodies() -> None:
    text = f"{HERMES_CALL}\n{QWEN_CALL.replace('ls', 'pwd')}\n"
    for fmt in ("hermes", "qwen3-coder"):
        calls = parse_calls(text, fmt)
        assert named(calls) == [("shell", {"command": "ls"}), ("shell", {"command": "pwd"})]
        assert {c.format for c in calls} == {fmt}


def test_qwen3_coder_render() -> None:
    call = ToolCall("save", kwargs={"path": "a.py", "content": "\nx = 1\n", "n": 3})
    assert render(call, "qwen3-coder") == (
        "<tool_call>\n<function=save>\n<parameter=path>\na.py\n</parameter>\n"
        "<parameter=content>\n\nx = 1\n\n</parameter>\n<parameter=n>\n3\n</parameter>\n"
        "</function>\n</tool_call>")
    [parsed] = parse_calls(render(call, "qwen3-coder"), "qwen3-coder")
    assert parsed.kwargs == {"path": "a.py", "content": "\nx = 1\n", "n": "3"}
    for value in ("a </parameter>\n</function> b", "</tool_call>", "<tool_call>", "a\r\nb"):
        with pytest.raises(UnrepresentableCall):
            render(ToolCall("save", kwargs={"content": value}), "qwen3-coder")


# -- pythonic ------------------------------------------------------------------------------


def test_pythonic_several_calls_with_literal_values() -> None:
    text = ('Checking.\n[get_weather(city="Paris", days=3), shell(command=\'ls -la\'),\n'
            " mcp.fetch(url='https://x.org', opts={'a': [1, -2.5, (True, None)], 'b': false, "
            "'c': null, 'd': true})]\nDone.\n")
    parsed = parse(text, "pythonic")
    assert named(parsed.calls) == [
        ("get_weather", {"city": "Paris", "days": 3}),
        ("shell", {"command": "ls -la"}),
        ("mcp.fetch", {"url": "https://x.org",
                       "opts": {"a": [1, -2.5, [True, None]], "b": False, "c": None,
                                "d": True}}),
    ]
    assert {(c.start, c.end) for c in parsed.calls} == {(text.index("["), text.index("\nDone"))}
    assert parsed.diagnostics == []
    assert streamed(text, "pythonic") == (parsed.calls, [])


def test_pythonic_strings_hold_brackets_quotes_and_newlines() -> None:
    text = ("[save(path='a.py', content='''x = [1, (2]\n\"\"\"doc\"\"\"\n''', "
            'note="a \\" ] # not a comment", tag=r"\\d+"),  # a ] in a comment\n'
            " shell(command='echo \\'hi\\'')]\n[read(path='b')]\n")
    calls = parse_calls(text, "pythonic")
    assert named(calls) == [
        ("save", {"path": "a.py", "content": 'x = [1, (2]\n"""doc"""\n',
                  "note": 'a " ] # not a comment', "tag": "\\d+"}),
        ("shell", {"command": "echo 'hi'"}),
        ("read", {"path": "b"}),
    ]
    assert streamed(text, "pythonic")[0] == calls


def test_pythonic_lists_only_count_at_the_start_of_a_line_outside_blocks() -> None:
    text = (f"Call it like [shell(command='no')].\n{F}python\n[shell(command='no')]\n{F}\n"
            "<think>\n[shell(command='no')]\n</think>\n[x for x in y]\n"
            "  [shell(command='yes')]\n")
    assert named(parse_calls(text, "pythonic")) == [("shell", {"command": "yes"})]


@pytest.mark.parametrize(("line", "label", "what", "kept"), [
    ('[shell("ls")]', "shell(…)", "passes a positional argument to shell ('ls'); write every "
     "argument as NAME=VALUE", []),
    ("[shell(command=os.getcwd())]", "shell(…)", "passes command=os.getcwd() to shell, which is "
     "not a literal; values must be strings, numbers, True/False, None, lists or dicts", []),
    ("[read(path='a'), shell(**options)]", "shell(…)", "unpacks **options into shell",
     [("read", {"path": "a"})]),
    ("[shell(command=f'{x}')]", "shell(…)", "passes command=f'{x}' to shell, which is not a "
     "literal", []),
    ("[read(path={1: 'a'})]", "read(…)", "passes path=1 to read, which is not a literal", []),
    ("[shell(command='a', command='b'), read(path='a')]", "shell(…)", "sets command twice",
     [("read", {"path": "a"})]),
    ("[shell(command='ls') + 1]", "[shell(…)]", "holds shell(command='ls') + 1, which is not a "
     "call", []),
    ("[shell(command='ls')(1)]", "[shell(…)]", "calls shell(command='ls'), which is not a tool "
     "name", []),
    ("[shell(command='ls' 'x' 1)]", "shell(…)", "is not valid Python (invalid syntax", []),
    ("[read(path='a'), mcp.fetch(url=), read(path='c',)]", "mcp.fetch(…)",
     "is not valid Python (invalid syntax", [("read", {"path": "a"}), ("read", {"path": "c"})]),
    ("[shell(command='ls') for x in y]", "[shell(…)]", "is not a plain list of calls", []),
])
def test_pythonic_mistakes_are_reported_and_the_good_siblings_run(
        line: str, label: str, what: str, kept: list[tuple[str, dict[str, object]]]) -> None:
    text = f"Now:\n{line}\n[read(path='b')]\n"
    parsed = parse(text, "pythonic")
    assert named(parsed.calls) == [*kept, ("read", {"path": "b"})]
    diagnostic = only(parsed.diagnostics)
    assert (diagnostic.kind, diagnostic.line) == ("malformed", 2)
    assert diagnostic.message.startswith(f"The {label} call on line 2 {what}")
    assert streamed(text, "pythonic", 5) == (parsed.calls, parsed.diagnostics)


def test_an_unbalanced_pythonic_list_is_reported_and_the_rest_is_read() -> None:
    text = "[shell(command='ls'\nand prose\n[read(path='b')]\n"
    parsed = parse(text, "pythonic")
    assert named(parsed.calls) == [("read", {"path": "b"})]
    assert only(parsed.diagnostics).message == (
        "The [shell(…)] call on line 1 never ends (its brackets do not balance), so it did not "
        "run.")


QUOTE_HINT = "a quote inside a string must be escaped"


@pytest.mark.parametrize(("text", "kept", "what"), [
    ("[read(path='a'), shell(command='it's')]\n[read(path='b')]\n", [("read", {"path": "a"})],
     f"is not valid Python (unterminated string literal); {QUOTE_HINT}"),
    ("[read(path='a'),\n shell(command='sed -n '1,5p' a.py')]\n[read(path='b')]\n",
     [("read", {"path": "a"})], f"is not valid Python (invalid decimal literal); {QUOTE_HINT}"),
    ("[shell(command='echo 'hi''), read(path='a')]\n[read(path='b')]\n",
     [("read", {"path": "a"})], "is not valid Python (invalid syntax"),
])
def test_a_quote_left_unescaped_ends_the_list_at_its_last_bracket(
        text: str, kept: list[tuple[str, dict[str, object]]], what: str) -> None:
    """Python's reading would run on to the end of the reply, hiding the good sibling and
    every call after it; the broken call is named, with how to write the quote."""
    for reply in (text, text.removesuffix("\n[read(path='b')]\n")):  # ending the reply, too
        parsed = parse(reply, "pythonic")
        after = [("read", {"path": "b"})] if reply == text else []
        assert named(parsed.calls) == [*kept, *after]
        diagnostic = only(parsed.diagnostics)
        assert diagnostic.message.startswith(f"The shell(…) call on line 1 {what}")
        assert diagnostic.kind == "malformed"
        assert streamed(reply, "pythonic", 3) == (parsed.calls, parsed.diagnostics)


@pytest.mark.parametrize(("text", "names", "broken"), [
    ("[ls(path='/tmp'), f(a='x 'y', b='z')]", ["ls"], ["f"]),
    ("[b(y=2), broken(a='x 'y', b='z'), a(x=1)]", ["b", "a"], ["broken"]),
    ("[f(a='x 'y'), g(b='p 'q')]", [], ["f", "g"]),
    ("[f(a='echo 'hi', b='x')]", [], ["f"]),
])
def test_broken_siblings_of_vllms_salvage_tests(text: str, names: list[str],
                                                broken: list[str]) -> None:
    """The inputs of vLLM's salvage tests (``tests/tool_parsers/test_utils.py``): the good
    calls run in their order, and each broken one is named, never read into a sibling."""
    parsed = parse(text, "pythonic")
    assert [c.name for c in parsed.calls] == names
    assert [d.name for d in parsed.diagnostics] == broken
    assert all(QUOTE_HINT in d.message for d in parsed.diagnostics)


def test_a_string_no_quote_closes_is_a_list_that_never_ends() -> None:
    """No quote after it can end the string, so nothing tells the list from a reply cut off
    mid-string: nothing in it runs, and the model is told."""
    parsed = parse("[read(path='a'), shell(command='ls)]", "pythonic")
    assert parsed.calls == []
    assert only(parsed.diagnostics).kind == "unclosed"


@pytest.mark.parametrize("text", [
    "<|python_start|>[read(path='a'), shell(command='ls')]<|python_end|>\nDone.\n",
    "<|python_start|> [read(path='a'), shell(command='ls')]  <|python_end|> Done.\n",
    "<|python_start|>[read(path='a'),\n  shell(command='ls')]\n",
    "  <|python_start|>[read(path='a'), shell(command='ls')]",
])
def test_llama4_tokens_around_a_list_with_or_without_the_end_token(text: str) -> None:
    parsed = parse(text, "pythonic")
    assert named(parsed.calls) == [("read", {"path": "a"}), ("shell", {"command": "ls"})]
    list_end = text.index("]") + 1
    if "<|python_end|>" in text:  # on the list's line: part of the call, so a reply cut
        list_end = text.index("<|python_end|>") + len("<|python_end|>")  # there keeps it
    start = text.index("<|python_start|>")
    assert {(c.start, c.end, c.format) for c in parsed.calls} == {(start, list_end,
                                                                   "pythonic")}
    assert parsed.diagnostics == []
    for size in (1, 4, 100):
        assert streamed(text, "pythonic", size) == (parsed.calls, [])


def test_an_end_token_before_the_list_closes_ends_the_call() -> None:
    """The model said it was done: the calls it finished run, and the one it did not is
    named; the reply after it is read."""
    text = ("<|python_start|>[read(path='a'), shell(command='ls)]<|python_end|>\n"
            "[read(path='b')]\n<|python_start|>[read(path='c')<|python_end|>\n")
    parsed = parse(text, "pythonic")
    assert named(parsed.calls) == [("read", {"path": "a"}), ("read", {"path": "b"}),
                                   ("read", {"path": "c"})]
    assert only(parsed.diagnostics).message == (
        "The shell(…) call on line 1 is not valid Python (unterminated string literal); it "
        "did not run.")
    assert streamed(text, "pythonic", 2) == (parsed.calls, parsed.diagnostics)


def test_llama4_tokens_are_read_only_at_the_start_of_a_line_outside_blocks() -> None:
    text = (f"Next, <|python_start|>[shell(command='no')]<|python_end|>\n{F}\n"
            f"<|python_start|>[shell(command='no')]<|python_end|>\n{F}\n"
            "<|python_start|>shell(command='no')<|python_end|>\n<|python_start|>\n"
            "[shell(command='yes')]\n<|python_end|>\n")
    parsed = parse(text, "pythonic")
    assert named(parsed.calls) == [("shell", {"command": "yes"})]
    assert parsed.diagnostics == []


PYTHONIC_PIECES = ["<|python_start|>", "<|python_end|>", "[read(path='a'", "[shell(x=",
                   "'it's'", "'", '"', "'''", ", ", ")", "]", "(", "\n", " ", "#", "\\",
                   "prose", "```", ":"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PYTHONIC_PIECES), max_size=30).map("".join),
       st.lists(st.integers(min_value=0), max_size=12))
def test_pythonic_replies_read_the_same_in_any_chunks(text: str, cuts: list[int]) -> None:
    """Broken quotes, end tokens and lists that never close: streamed as parsed whole."""
    parsed = parse(text, "pythonic")
    parser = StreamParser("pythonic")
    calls = [call for chunk in chunked(text, cuts) for call in parser.feed(chunk)]
    assert (calls + parser.finish(), parser.diagnostics) == (parsed.calls, parsed.diagnostics)


def test_pythonic_render_writes_python_literals() -> None:
    call = ToolCall("mcp.fetch", kwargs={"url": "it's \"here\"\n", "n": -1, "ok": True,
                                         "opts": {"a": [None, 1.5]}})
    text = render(call, "pythonic")
    assert text == ("[mcp.fetch(url='it\\'s \"here\"\\n', n=-1, ok=True, "
                    "opts={'a': [None, 1.5]})]")
    [parsed] = parse_calls(text, "pythonic")
    assert parsed.key() == call.key()
    for bad in (ToolCall("my-tool"), ToolCall("x", kwargs={"class": 1}),
                ToolCall("x", kwargs={"v": float("nan")}), ToolCall("x", kwargs={"v": {1: 2}}),
                ToolCall("x", "argline")):
        with pytest.raises(UnrepresentableCall):
            render(bad, "pythonic")


@pytest.mark.parametrize("source", [
    "a=1)]", "a='])')]", 'a="\\"])")]', "a='''])\n''')]", 'a="""x""""])")]', "a='', b=1)]",
    "a=1)  # ])\n]", "a=[{(1,)}])]", "a=r'\\'')]", "a='''''', b=\"\")]",
    # a quote left unescaped in a string: the list ends at its last bracket all the same
    "a='it's')]", "a='x 'y', b='z')]", "a='' x', b=1)]", "a='x'  \n , b='y' )]",
    'a="say "hi"")]',
])
def test_the_bracket_end_finder_is_resumable(source: str) -> None:
    source = "f(" + source  # the finder starts after the list's "["
    whole = PyEndScanner().scan(source, 0)
    assert whole == ("end", len(source))
    finder = PyEndScanner()
    for i, ch in enumerate(source):
        status, at = finder.scan(ch, 0)
        if status == "end":
            assert (i + at, i + 1) == (len(source), len(source))
            return
        assert at == 1
    pytest.fail("no end found")


HOSTILE = {
    "open pythonic": "[a(" + "(" * 200_000,
    "deep pythonic": "[a(x=" + "[" * 100_000 + "]" * 100_000 + ")]\n",
    "open string": "[a(x='" + "\\'" * 100_000,
    "many quotes": "[a(x=" + "'" * 200_001 + ")]\n",
    "deep json": '<tool_call>{"name": "a", "arguments": ' + "[" * 100_000 + "]" * 100_000 +
                 "}</tool_call>",
    "deep arguments string": '<tool_call>{"name": "a", "arguments": "' + "[" * 100_000 +
                             "]" * 100_000 + '"}</tool_call>',
    "repeated openers": "<tool_call>" * 100_000 + "{}</tool_call>",
    "open tool call": "<tool_call>\n" * 50_000,
    "many parameters": "<tool_call><function=a>" + "".join(
        f"<parameter=p{i}>x</parameter>" for i in range(50_000)) + "</function></tool_call>",
    "parameter never closed": "<tool_call><function=a><parameter=p>" + "x</parameter>y" * 50_000
                              + "</function></tool_call>",
    "values never closed": "<tool_call>" + "<function=a><parameter=p>x\n" * 30_000
                           + "</function></tool_call>",
    "open bare functions": "<function=a>\n" * 50_000,
    "bare parameter never closed": "<function=a>\n<parameter=p>" + "x</parameter>y" * 50_000
                                   + "</function>",
    "bare value opening tags": "<function=a>\n<parameter=p>\n" + "<parameter=q>\n" * 50_000
                               + "</parameter>\n</function>",
    "bare many parameters": "<function=a>\n" + "".join(
        f"<parameter=p{i}>x</parameter>\n" for i in range(50_000)) + "</function>",
    "broken pythonic elements": "[" + "a(x=), " * 20_000 + "]\n",
    "open llama4 list": "<|python_start|>[a(x='" + "lorem ipsum " * 90_000,
    "llama4 lists never closed": "<|python_start|>[a(\n" * 50_000,
    "llama4 end tokens on open lists": "<|python_start|>[a(<|python_end|>\n" * 30_000,
    "llama4 end tokens in a string": "<|python_start|>[a(x='" + "<|python_end|>" * 70_000,
    "unescaped quotes": "[a(x='" + "it's " * 200_000 + "')]",
    "quotes then blanks": "[a(x='" + "'" + " " * 1_000_000,
}


Found = tuple[int, int, set[str]]
"""What a format finds in a text: the number of calls, of their arguments, the kinds of
diagnostics."""
TAG_READERS = ("hermes", "qwen3-coder", "tool", "auto")
"""The formats that read ``<tool_call>`` tags."""
BARE_READERS = ("hermes", "qwen3-coder", "auto")
"""The formats that read a bare ``<function=…>`` block."""
PYTHONIC_READERS = ("pythonic", "auto")
HOSTILE_FOUND: dict[str, dict[str, Found]] = {
    "open pythonic": dict.fromkeys(PYTHONIC_READERS, (0, 0, {"unclosed"})),
    "deep pythonic": dict.fromkeys(PYTHONIC_READERS, (0, 0, {"malformed"})),
    "open string": dict.fromkeys(PYTHONIC_READERS, (0, 0, {"unclosed"})),
    "many quotes": dict.fromkeys(PYTHONIC_READERS, (0, 0, {"unclosed"})),
    "deep json": dict.fromkeys(TAG_READERS, (0, 0, {"malformed"})),
    "deep arguments string": dict.fromkeys(TAG_READERS, (0, 0, {"malformed"})),
    "repeated openers": dict.fromkeys(TAG_READERS, (0, 0, {"malformed"})),
    "open tool call": dict.fromkeys(TAG_READERS, (0, 0, {"unclosed", "unread"})),
    "many parameters": dict.fromkeys(TAG_READERS, (1, 50_000, set())),
    "parameter never closed": dict.fromkeys(TAG_READERS, (0, 0, {"malformed"})),
    "values never closed": dict.fromkeys(TAG_READERS, (1, 1, set())),
    "open bare functions": dict.fromkeys(BARE_READERS, (0, 0, {"unclosed", "unread"})),
    "bare parameter never closed": dict.fromkeys(BARE_READERS, (0, 0, {"unclosed"})),
    "bare value opening tags": dict.fromkeys(BARE_READERS, (0, 0, {"unclosed"})),
    "bare many parameters": dict.fromkeys(BARE_READERS, (1, 50_000, set())),
    "broken pythonic elements": dict.fromkeys(PYTHONIC_READERS, (0, 0, {"malformed"})),
    "open llama4 list": dict.fromkeys(PYTHONIC_READERS, (0, 0, {"unclosed"})),
    "llama4 lists never closed": dict.fromkeys(PYTHONIC_READERS, (0, 0, {"unclosed", "unread"})),
    "llama4 end tokens on open lists": dict.fromkeys(PYTHONIC_READERS, (0, 0, {"malformed"})),
    "llama4 end tokens in a string": dict.fromkeys(PYTHONIC_READERS, (0, 0, {"malformed"})),
    "unescaped quotes": dict.fromkeys(PYTHONIC_READERS, (0, 0, {"malformed"})),
    "quotes then blanks": dict.fromkeys(PYTHONIC_READERS, (0, 0, {"unclosed"})),
}
"""What each format finds in each hostile input; a format not named finds nothing."""


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_inputs_finish(name: str) -> None:
    """Each format reads the input in linear time and finds what it should."""
    text = HOSTILE[name]
    for fmt in ("hermes", "qwen3-coder", "pythonic", "tool", "auto"):
        with in_linear_time(len(text), f"{fmt} reading {name!r}"):
            parsed = parse(text, fmt)
        found = (len(parsed.calls), sum(len(call.kwargs) for call in parsed.calls),
                 {diagnostic.kind for diagnostic in parsed.diagnostics})
        assert found == HOSTILE_FOUND[name].get(fmt, (0, 0, set())), fmt


TAGGED_HOSTILE = {
    "never closed": lambda n: "<|python_start|>[a(\n" * (n // 20),
    "end tokens on open lists": lambda n: "<|python_start|>[a(<|python_end|>\n" * (n // 34),
    "closed lists": lambda n: "<|python_start|>[a()]\n" * (n // 22),
    "unescaped quotes": lambda n: "<|python_start|>[a(x='it's " * (n // 25) + "<|python_end|>",
}


@pytest.mark.parametrize("name", sorted(TAGGED_HOSTILE))
def test_llama4_tokens_in_hostile_replies_read_in_linear_time(name: str) -> None:
    """Four times the text takes about four times as long, never sixteen (each list looks
    no further than the line it ends on)."""
    def seconds(size: int) -> float:
        text = TAGGED_HOSTILE[name](size)
        best = float("inf")
        for _ in range(3):
            began = time.perf_counter()
            parse(text, "pythonic")
            best = min(best, time.perf_counter() - began)
        return best

    small, large = seconds(50_000), seconds(200_000)
    assert large < 8 * small + 0.05, (small, large)


# -- the tool format -----------------------------------------------------------------------


def test_tool_format_recovers_tool_calls_left_in_the_content() -> None:
    text = (f"{HERMES_CALL}\n{QWEN_CALL.replace('ls', 'pwd')}\n"
            '@read(c1): {"path": "a"}\n<tool_call>{"name": }</tool_call>\n')
    parsed = parse(text, "tool")
    assert [(c.name, dict(c.kwargs), c.format) for c in parsed.calls] == [
        ("shell", {"command": "ls"}, "tool"), ("shell", {"command": "pwd"}, "tool"),
        ("read", {"path": "a"}, "tool")]
    assert only(parsed.diagnostics).message.startswith(
        "The <tool_call> call on line 12 holds JSON that could not be read")


# -- auto ----------------------------------------------------------------------------------

REPLIES = {
    "markdown": (f"Listing.\n{F}shell\nls\n{F}\n", {}),
    "xml": ("Listing.\n<tool-use>\n<shell>\nls\n</shell>\n</tool-use>\n", {}),
    "tool": ('Listing.\n@shell(c1): {"command": "ls"}\n', {"command": "ls"}),
    "hermes": (f"Listing.\n{HERMES_CALL}\n", {"command": "ls"}),
    "qwen3-coder": (f"Listing.\n{QWEN_CALL}\n", {"command": "ls"}),
    "pythonic": ("Listing.\n[shell(command='ls')]\n", {"command": "ls"}),
}
LATER = (f"Later:\n{F}md_later\n{F}\n<tool-use><xml_later/></tool-use>\n"
         '@tool_later(c9): {}\n<tool_call>{"name": "tag_later"}</tool_call>\n'
         "[py_later()]\n")
LATER_NAME = {"markdown": "md_later", "xml": "xml_later", "tool": "tool_later",
              "hermes": "tag_later", "qwen3-coder": "tag_later", "pythonic": "py_later"}


@pytest.mark.parametrize("fmt", sorted(REPLIES))
def test_auto_picks_the_format_of_the_first_call_and_ignores_the_others(fmt: str) -> None:
    reply, kwargs = REPLIES[fmt]
    text = reply + LATER
    parsed = parse(text, "auto")
    assert [c.name for c in parsed.calls] == ["shell", LATER_NAME[fmt]]
    assert (dict(parsed.calls[0].kwargs), parsed.calls[0].format) == (kwargs, fmt)
    assert parsed.diagnostics == []
    assert streamed(text, "auto") == (parsed.calls, [])
    # The call is given out as soon as the reply's format is certain, not at the end.
    assert StreamParser("auto").feed(reply + "\n") == parsed.calls[:1]


def test_auto_holds_calls_back_while_an_earlier_call_may_still_come() -> None:
    text = (f"I'll answer in a <tool_call> block, or not.\n{F}shell\nls\n{F}\nDone.\n")
    parser = StreamParser("auto")
    assert parser.feed(text) == []  # the <tool_call> could still close with a call in it
    [call] = parser.finish()
    assert (call.name, call.format) == ("shell", "markdown")
    # A tag that never closes is weak evidence: it loses to any call.
    assert parser.diagnostics == []


def test_auto_a_malformed_first_call_decides_the_format() -> None:
    text = f'<tool_call>{{"name": "shell", "arguments": {{"command" "ls"}}}}</tool_call>\n' \
        f"{F}shell\nls\n{F}\n"
    parsed = parse(text, "auto")
    assert parsed.calls == []
    assert only(parsed.diagnostics).message.startswith(
        "The <tool_call> call on line 1 holds JSON that could not be read")


def test_auto_reports_an_unclosed_call_when_nothing_else_was_found() -> None:
    parsed = parse('Running:\n<tool_call>\n{"name": "shell", "arguments": {}}\n', "auto")
    assert parsed.calls == []
    assert only(parsed.diagnostics).kind == "unclosed"
    assert parse("Just prose, [no(calls)] here.\n", "auto") == parse("", "auto")


def test_auto_teaches_and_renders_markdown() -> None:
    auto, markdown = get_format("auto"), get_format("markdown")
    assert (auto.preamble, auto.named_arguments, auto.by_langtag, auto.native) == (
        markdown.preamble, False, True, False)
    call = ToolCall("save", "a.py", "x = 1")
    assert render(call, "auto") == render(call, "markdown")


# -- instructions and execution ------------------------------------------------------------


@pytest.mark.parametrize(("fmt", "example"), [
    ("hermes", '<tool_call>\n{"name": "shell", "arguments": {"command": "ls"}}\n</tool_call>'),
    ("qwen3-coder", "<tool_call>\n<function=shell>\n<parameter=command>\nls\n</parameter>\n"
                    "</function>\n</tool_call>"),
    ("pythonic", "[shell(command='ls')]"),
])
def test_instructions_teach_each_format_with_examples_in_it(fmt: str, example: str) -> None:
    prompt = Toolchain.build(["shell"]).instructions(fmt)
    assert prompt.startswith(get_format(fmt).preamble)
    assert example in prompt
    assert ("shell", "ls") in [(c.name, c.kwargs.get("command")) for c in parse_calls(prompt, fmt)]


@pytest.mark.parametrize(("fmt", "reply"), [
    ("hermes", '<tool_call>{"name": "add", "arguments": {"a": 2, "b": 3}}</tool_call>\n'),
    ("qwen3-coder", "<tool_call>\n<function=add>\n<parameter=a>\n2\n</parameter>\n"
                    "<parameter=b>\n3\n</parameter>\n</function>\n</tool_call>\n"),
    ("pythonic", "[add(a=2, b=3)]\n"),
    ("auto", "[add(a=2, b=3)]\n"),
])
def test_each_format_runs_in_a_session(tmp_path: Path, fmt: str, reply: str) -> None:
    with Session(Toolchain.build(catalogue=CATALOGUE), workspace=tmp_path) as session:
        assert [m.content for m in session.execute(reply, fmt)] == ["5"]
