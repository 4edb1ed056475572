"""No call is lost in silence: over generated replies (calls in backtick and tilde fences,
nested examples of both kinds, thinking, fences with junk after them, unclosed blocks,
prose), every block that names a runnable tool runs, or the model is told (a diagnostic
about a tool, or near-miss feedback), read whole and streamed alike. And the cases of the
grammar's edges, each as a markdown viewer shows it."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from fencecall import Message, Session, StreamParser, Toolchain, auto_yes, parse
from fencecall.agent.near_miss import near_misses
from fencecall.execution import resolve
from fencecall.parsing import Diagnostic, ToolCall

TOOLS = Toolchain.build(["shell", "save", "append", "read", "ipython"])
F = "```"

prose = st.sampled_from(["Let me look.", "Done:", "", "a `b` c", "**Structure:**", "- item",
                         "x < y", "   indented prose"])
content_line = st.sampled_from([
    "ls -la", "echo hi", "x = 1", "# Title", "", '"""', "'''", f'{F}"""', "~~~ not a fence",
    f"{F}python", "~~~python", F, "~~~", "````", f"{F}<think>x</think>", "`inline`", "src/",
    "├── a.py",
])
content = st.lists(content_line, max_size=6).map("\n".join)
tool_tag = st.sampled_from(["shell", "save a.txt", "save notes.md", "append log.md", "read",
                            "ipython"])


# Thinking is closed where it opens: a call inside thinking is the model's musing and does not
# run by design (an unclosed thinking that hides a call is reported, see test_diagnostics).


@st.composite
def call_block(draw: st.DrawFn) -> tuple[str, str]:
    """A block that names a runnable tool, and that tool."""
    mark = draw(st.sampled_from(["`", "~"]))
    length = draw(st.integers(3, 5))
    tag = draw(tool_tag)
    fence = mark * length
    closed = draw(st.booleans() | st.just(True))
    text = f"{fence}{tag}\n{draw(content)}" + (f"\n{fence}" if closed else "")
    return text, tag.split()[0]


thinking = st.sampled_from(["<think>\nI will run ls\n</think>",
                            "<thinking>plan</thinking>",
                            f"{F}thinking>plan</thinking>", f"{F}<think>plan</think>"])
segment = st.one_of(call_block(), prose.map(lambda p: (p, "")), thinking.map(lambda t: (t, "")),
                    content.map(lambda c: (f"{F}\n{c}\n{F}", "")),
                    content.map(lambda c: (f"~~~text\n{c}\n~~~", "")))


def _streamed(text: str, size: int) -> tuple[list[ToolCall], list[Diagnostic]]:
    parser = StreamParser()
    calls = [c for i in range(0, len(text), size) for c in parser.feed(text[i : i + size])]
    return calls + parser.finish(), parser.diagnostics


def _heard(text: str, calls: list[ToolCall], diagnostics: list[Diagnostic]) -> bool:
    """What the agent does with a reply: it runs a call, or tells the model something."""
    if any(resolve(call, TOOLS) is not None for call in calls):
        return True
    if any(not d.codeblock or (d.name is not None and resolve(ToolCall(d.name), TOOLS))
           for d in diagnostics):
        return True
    return bool(near_misses(text, "markdown", TOOLS))


@settings(max_examples=400, deadline=None)
@given(st.lists(segment, min_size=1, max_size=8), st.integers(1, 40))
def test_a_reply_that_names_a_runnable_tool_is_never_silent(
        segments: list[tuple[str, str]], size: int) -> None:
    text = "\n".join(part for part, _ in segments) + "\n"
    parsed = parse(text)
    meant = [tool for _, tool in segments if tool]
    if meant:
        assert _heard(text, parsed.calls, parsed.diagnostics), text
    calls, diagnostics = _streamed(text, size)
    assert calls == parsed.calls
    assert diagnostics == parsed.diagnostics


def test_tilde_fences_open_and_close_blocks_as_in_commonmark() -> None:
    text = "~~~shell\nls\n```\nstill shell\n~~~~\n~~~\n\n~~~~save a.md\n~~~\nx\n~~~~\n"
    calls = parse(text).calls
    assert [(c.name, c.content) for c in calls] == [
        ("shell", "ls\n```\nstill shell\n~~~~"), ("save", "~~~\nx")]
    assert _streamed(text, 3)[0] == calls


def test_a_backtick_block_is_not_closed_by_tildes() -> None:
    text = f"{F}shell\necho ~~~\n~~~\n{F}\n"
    [call] = parse(text).calls
    assert call.content == "echo ~~~\n~~~"


def test_thinking_glued_to_a_fence_does_not_swallow_the_save_after_it() -> None:
    text = f"{F}thinking>I should save the file</thinking>\n{F}save a.txt\nhello\n{F}\n"
    [call] = parse(text).calls
    assert (call.name, call.argline, call.content) == ("save", "a.txt", "hello")


def test_a_call_inside_a_block_that_never_closes_is_reported() -> None:
    text = f"Here is the plan:\n{F}\nsteps\n{F}shell\nls\n{F}\n"
    parsed = parse(text)
    assert [c.name for c in parsed.calls if c.name == "shell"] == []
    [note] = [d for d in parsed.diagnostics if d.kind == "swallowed"]
    assert note.name == "shell" and note.line == 4
    assert "never closed" in note.message and "did not run" in note.message


def test_a_call_written_inside_another_block_is_named_unless_that_block_ran(
        tmp_path: Path) -> None:
    shown = f"Usage:\n~~~\n{F}shell\nls\n{F}\n~~~\n"
    [note] = parse(shown).diagnostics
    assert (note.kind, note.name, note.line) == ("swallowed", "shell", 3)
    assert "inside a bare ~~~ block opened on line 2" in note.message
    heredoc = f"{F}shell\ncat > a.md <<'EOF'\n~~~shell\nls\n~~~\nEOF\n{F}\n"
    parsed = parse(heredoc)
    assert [d.name for d in parsed.diagnostics] == ["shell"]  # the parser cannot know...
    with Session(TOOLS, workspace=tmp_path, confirm=auto_yes) as session:
        results = list(session.execute_calls(Message("assistant", heredoc), parsed.calls,
                                             parsed.diagnostics))
    assert (tmp_path / "a.md").read_text() == "~~~shell\nls\n~~~\n"
    assert not any("diagnostic" in r.metadata for r in results)  # ...the agent does
    document = f"{F}markdown\n# Use\n{F}shell\nls\n{F}\n{F}\n"
    assert parse(document).diagnostics == []  # a document's examples are its text


def test_a_file_block_read_as_closing_at_an_ambiguous_fence_says_what_was_written() -> None:
    text = f"{F}save app.py\nx = 1\n{F}\nMore\n{F}\n"
    parsed = parse(text)
    [call] = parsed.calls
    assert call.content == "x = 1"
    [note] = parsed.diagnostics
    assert note.kind == "ambiguous" and note.name == "save"
    assert "it holds lines 2 to 2 only" in note.message and "````save app.py" in note.message


def test_near_misses_see_the_blocks_the_parser_sees() -> None:
    indented = "Steps:\n\n    ```python\n    print(1)\n    ```\n"
    [miss] = near_misses(indented, "markdown", TOOLS)
    assert miss.kind == "language-tag"
    tilde = "~~~python\nprint(2)\n~~~\n"
    [miss] = near_misses(tilde, "markdown", TOOLS)
    assert miss.written == "The ~~~python block"
    unclosed = "```python\nprint(3)\n"
    [miss] = near_misses(unclosed, "markdown", TOOLS)
    assert "print(3)" in miss.fix
