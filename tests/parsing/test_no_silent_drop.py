"""No call is lost in silence: over generated replies (calls in backtick and tilde fences,
nested examples of both kinds, thinking, fences with junk after them, unclosed blocks,
prose), every block that a markdown viewer shows and that names a runnable tool runs, or a
diagnostic names it to the model, read whole and streamed alike. And the cases of the
grammar's edges, each as a markdown viewer shows it."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from fencecall import Message, Session, StreamParser, Toolchain, auto_yes, parse
from fencecall.agent._near_miss import near_misses
from fencecall.execution import resolve
from fencecall.parsing import Diagnostic, ToolCall
from fencecall.parsing._fences import holds_documents, is_langtag

from ..support import F

TOOLS = Toolchain.build(["shell", "save", "append", "read", "ipython"])

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


def _viewer_openers(text: str) -> set[int]:
    """The lines (0-based) where a person reading the markdown sees a block open: CommonMark's
    fence rules (a fence of the other kind, a shorter one or one with text after it is
    content; a bare one closes), with fencecall's departures from them, which the README
    states: a langtag fence inside a block opens a nested one (an example), and so does, in a
    document (a markdown-like file: ``.md``, ``.txt``, no extension; ``markdown``) or a block
    that held an example, a bare fence followed by a line of text;
    a bare fence longer than the opener is content; and a fence with thinking glued to it is
    thinking outside a block and closes a block of its exact length."""
    openers: set[int] = set()
    open_char, open_count, document, nested = "", 0, False, 0
    lines = text.split("\n")
    for number, line in enumerate(lines):
        stripped = line.lstrip(" \t")
        char = stripped[:1]
        if char not in ("`", "~"):
            continue
        info = stripped.lstrip(char)
        count = len(stripped) - len(info)
        thinking = info.lstrip().startswith(("<think>", "<thinking>", "think>", "thinking>"))
        if count < 3 or (char == "`" and "`" in info):
            continue
        if not open_char:
            if not thinking:
                open_char, open_count = char, count
                document, nested = count == 3 and holds_documents(info.strip()), 0
                openers.add(number)
        elif char != open_char or count < open_count:
            continue
        elif is_langtag(info):
            nested += 1  # an example: a block nested in the block
            document = True  # which may hold bare ones from now on
        elif document and not info.strip() and count == open_count and not nested \
                and number + 1 < len(lines) and lines[number + 1].strip() \
                and not lines[number + 1].lstrip().startswith(("```", "~~~")):
            nested += 1  # a bare example: a line of text follows
        elif not info.strip() and nested:
            nested -= 1
        elif count == open_count and (not info.strip() or thinking):
            open_char = ""  # (a longer bare fence is content, as fencecall reads it)
    return openers


def _silent(text: str, tool: str, line: int, calls: list[ToolCall],
            diagnostics: list[Diagnostic]) -> bool:
    """Whether the block naming ``tool`` that opens on ``line`` (0-based) neither ran nor
    was named to the model."""
    start = sum(len(before) + 1 for before in text.split("\n")[:line])
    start += len(text[start:]) - len(text[start:].lstrip(" \t"))
    if any(c.start == start and resolve(c, TOOLS) is not None for c in calls):
        return False
    return not any(d.line == line + 1 and d.name == tool for d in diagnostics)


@settings(max_examples=400, deadline=None)
@given(st.lists(segment, min_size=1, max_size=8), st.integers(1, 40))
def test_a_reply_that_names_a_runnable_tool_is_never_silent(
        segments: list[tuple[str, str]], size: int) -> None:
    text = "\n".join(part for part, _ in segments) + "\n"
    parsed = parse(text)
    openers = _viewer_openers(text)
    line = 0
    for part, tool in segments:
        if tool and line in openers:  # a block a person sees, naming a runnable tool
            assert not _silent(text, tool, line, parsed.calls, parsed.diagnostics), text
        line += part.count("\n") + 1
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
    # a markdown viewer ends the outer block at line 5 and shows the `pwd` block on its own
    shown = f"Usage:\n{F}\n{F}shell\nls\n{F}\n{F}shell\npwd\n{F}\n{F}\n"
    notes = parse(shown).diagnostics
    assert [(n.kind, n.name, n.line) for n in notes] == [("swallowed", "shell", 3),
                                                         ("swallowed", "shell", 6)]
    assert "inside a bare ``` block opened on line 2" in notes[1].message
    assert parse(f"{F}\n~~~shell\nls\n~~~\n{F}\n").diagnostics == []  # content to a viewer
    heredoc = f"{F}shell\ncat > a.md <<'EOF'\n{F}shell\nls\n{F}\nEOF\n{F}\n"
    parsed = parse(heredoc)
    assert [d.name for d in parsed.diagnostics] == ["shell"]  # the parser cannot know...
    with Session(TOOLS, workspace=tmp_path, confirm=auto_yes) as session:
        results = list(session.execute_calls(Message("assistant", heredoc), parsed.calls,
                                             parsed.diagnostics))
    assert (tmp_path / "a.md").read_text() == f"{F}shell\nls\n{F}\n"
    assert not any("diagnostic" in r.metadata for r in results)  # ...the agent does
    document = f"{F}markdown\n# Use\n{F}shell\nls\n{F}\n{F}\n"
    assert parse(document).diagnostics == []  # a document's examples are its text


def test_a_file_block_read_as_closing_at_an_ambiguous_fence_says_what_was_written() -> None:
    text = f"{F}save app.md\nx = 1\n{F}\nMore\n{F}\n"
    parsed = parse(text)
    [call] = parsed.calls
    assert call.content == "x = 1"
    [note] = parsed.diagnostics
    assert note.kind == "ambiguous" and note.name == "save"
    assert "it holds lines 2 to 2 only" in note.message and "````save app.md" in note.message


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
