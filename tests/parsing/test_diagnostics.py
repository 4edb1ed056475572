"""Nothing is lost in silence: every call that cannot run is reported, and never hides the
calls after it."""

from __future__ import annotations

from fencecall.parsing import StreamParser, parse, parse_calls

from ..support import F


def test_an_unclosed_tool_block_is_reported_with_its_line() -> None:
    parsed = parse(f"Here goes.\n\n{F}shell\nrm -rf build\n")
    assert parsed.calls == []
    [diagnostic] = parsed.diagnostics
    assert (diagnostic.kind, diagnostic.line, diagnostic.name, diagnostic.codeblock) == (
        "unclosed", 3, "shell", True)
    assert diagnostic.message == (f"The {F}shell block opened on line 3 was never closed, so it "
                                  f"did not run; end it with a line of {F}.")


def test_a_longer_fence_is_named_in_the_hint() -> None:
    [diagnostic] = parse("````save a.md\n# doc\n```\n").diagnostics
    assert "````save a.md block opened on line 1" in diagnostic.message
    assert diagnostic.message.endswith("end it with a line of ````.")


def test_a_call_in_unclosed_thinking_is_reported() -> None:
    [diagnostic] = parse(f"<think>\nI will list.\n{F}shell\nls\n{F}\n").diagnostics
    assert diagnostic.kind == "hidden"
    assert "<think> section opened on line 1 was never closed" in diagnostic.message
    assert parse("<thinking>\nonly musing, no calls\n").diagnostics == []


def test_malformed_json_is_reported_and_the_next_call_still_runs() -> None:
    parsed = parse('@shell(a): {"command" "ls"}\n@read(b): {"path": "x"}\n', "tool")
    assert [c.call_id for c in parsed.calls] == ["b"]
    [diagnostic] = parsed.diagnostics
    assert (diagnostic.kind, diagnostic.line, diagnostic.name) == ("malformed", 1, "shell")
    assert diagnostic.message.startswith(
        "The @shell(a) call on line 1 has arguments that are not valid JSON (")


def test_unbalanced_braces_do_not_swallow_the_calls_after() -> None:
    text = '@shell(a): {"command": "ls"\nNow the next.\n@read(b): {"path": "y"}\n'
    parsed = parse(text, "tool")
    assert [c.call_id for c in parsed.calls] == ["b"]
    [diagnostic] = parsed.diagnostics
    assert diagnostic.kind == "unclosed" and diagnostic.line == 1
    assert "never ends (its brackets do not balance)" in diagnostic.message


def test_json_strings_may_hold_raw_newlines_and_tabs() -> None:
    [call] = parse_calls('@save(c): {"path": "a.py", "content": "def f():\n\treturn 1\n"}\n',
                         "tool")
    assert call.kwargs == {"path": "a.py", "content": "def f():\n\treturn 1\n"}


def test_text_after_the_object_is_prose() -> None:
    text = '@shell(a): {"command": ["ls"]} \n@shell(b): {}{\n'
    parsed = parse(text, "tool")
    assert [c.call_id for c in parsed.calls] == ["a", "b"]
    assert parsed.diagnostics == []


def test_an_unclosed_xml_call_is_reported_and_the_rest_is_read() -> None:
    text = ('<function_calls><invoke name="read">\n'
            "Meanwhile:\n<tool-use><shell>pwd</shell></tool-use>\n")
    parsed = parse(text, "xml")
    assert [c.content for c in parsed.calls] == ["pwd"]
    [diagnostic] = parsed.diagnostics
    assert diagnostic.message == ("The <function_calls> call opened on line 1 was never closed "
                                  "with </function_calls>, so it did not run.")


def test_streaming_reports_the_same_diagnostics() -> None:
    text = ('@a(1): {"x" 1}\n<think>\n@b(2): {"y": 2\n'
            '@c(3): {"z": 3}\n')
    whole = parse(text, "tool")
    parser = StreamParser("tool")
    calls = [c for i in range(0, len(text), 3) for c in parser.feed(text[i : i + 3])]
    calls += parser.finish()
    assert calls == whole.calls
    assert parser.diagnostics == whole.diagnostics
    assert [d.kind for d in whole.diagnostics] == ["malformed", "hidden"]


def test_carriage_returns_never_reach_a_command() -> None:
    for text in (f"{F}shell\r\nls\r\npwd\r\n{F}\r\n", f"{F}shell\rls\rpwd\r{F}\r"):
        [call] = parse_calls(text)
        assert call.content == "ls\npwd"
        parser = StreamParser()
        streamed = [c for ch in text for c in parser.feed(ch)] + parser.finish()
        assert streamed == [call]


def test_after_too_many_broken_calls_the_rest_is_reported_unread() -> None:
    text = '@a(1): {"x": 1\n' * 10 + '@ok(2): {}\n'
    parsed = parse(text, "tool")
    assert parsed.calls == []
    assert [d.kind for d in parsed.diagnostics] == ["unclosed"] * 9 + ["unread"]
    assert parsed.diagnostics[-1].message == (
        "After line 9 the reply was not read for more calls: it holds more than 8 broken ones.")


def test_xml_invoke_with_raw_text_fills_the_content() -> None:
    text = '<function_calls><invoke name="shell">\nls -la\n</invoke></function_calls>'
    [call] = parse_calls(text, "xml")
    assert (call.name, call.content, dict(call.kwargs)) == ("shell", "ls -la", {})


def test_xml_that_cannot_be_read_is_reported() -> None:
    cases = {
        '<function_calls><invoke>x</invoke></function_calls>': "has no name attribute",
        '<function_calls><invoke name="a"><parameter name="p">x</invoke></function_calls>':
            'has a <parameter name="p"> that is never closed',
        '<function_calls><invoke name="a"><parameter name="p">x</parameter> y</invoke>'
        '</function_calls>': "mixes <parameter> elements with other text",
        "<tool-use>\nI will run\n<shell>ls</shell></tool-use>": "holds text that is not a tool",
        "<tool-use><shell>ls</tool-use>": "is never closed with </shell>",
    }
    for text, what in cases.items():
        parsed = parse(text, "xml")
        assert parsed.calls == [], text
        [diagnostic] = parsed.diagnostics
        assert what in diagnostic.message and diagnostic.kind == "malformed", text
