"""A block closes where a markdown viewer closes it, prose right after it or not (issue 45).

Models write a sentence on the line after a closing fence all the time. Only where there is
real reason to read a bare fence as an inner one (a markdown-like target, or a block that
already opened an inner fence) may it open an example, and only then is the block ambiguous.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from fencecall.parsing import StreamParser, parse

from ..support import F

RUNNABLE = st.sampled_from(["shell", "python", "save src/app.py", "append lib/util.js",
                            "save tests/test_a.py", "ipython", "save config/settings.toml"])
BODY = st.lists(st.from_regex(r"[a-z0-9 =()+.,:'\"#-]{0,30}", fullmatch=True), max_size=4)
PROSE = st.from_regex(r"[A-Za-z][A-Za-z0-9 ,.:;'()!?-]{0,60}", fullmatch=True)


@st.composite
def replies(draw: st.DrawFn) -> tuple[str, list[tuple[str, str]]]:
    """A reply of runnable blocks, each followed directly by a line of prose (no blank line
    between) or by the next block; and the blocks it holds, as (langtag, content)."""
    parts: list[str] = [draw(PROSE)] if draw(st.booleans()) else []
    blocks = []
    for _ in range(draw(st.integers(1, 8))):
        lang, content = draw(RUNNABLE), "\n".join(draw(BODY))
        parts.append(f"{F}{lang}\n{content}\n{F}" if content else f"{F}{lang}\n{F}")
        blocks.append((lang, content))
        if draw(st.booleans()):
            parts.append(draw(PROSE))
    return "\n".join(parts) + draw(st.sampled_from(["", "\n"])), blocks


def _streamed(text: str, size: int) -> tuple[list[tuple[str, str]], int]:
    parser = StreamParser()
    calls = [c for i in range(0, len(text), size) for c in parser.feed(text[i : i + size])]
    calls += parser.finish()
    return [(f"{c.name} {c.argline}".strip(), c.content) for c in calls], len(parser.diagnostics)


@settings(max_examples=300, deadline=None)
@given(replies(), st.integers(1, 23))
def test_every_block_followed_by_prose_runs_in_order_without_a_diagnostic(
        reply: tuple[str, list[tuple[str, str]]], size: int) -> None:
    text, blocks = reply
    parsed = parse(text)
    assert [(f"{c.name} {c.argline}".strip(), c.content) for c in parsed.calls] == blocks
    assert parsed.diagnostics == []
    assert _streamed(text, size) == (blocks, 0)


def test_the_issues_reply_runs_both_calls_without_an_error() -> None:
    text = f"{F}save a.py\nprint(1)\n{F}\nNow I run it.\n{F}shell\npython3 a.py\n{F}\nIt printed 1."
    parsed = parse(text)
    assert [(c.name, c.content) for c in parsed.calls] == [("save", "print(1)"),
                                                           ("shell", "python3 a.py")]
    assert parsed.diagnostics == []


def test_a_save_block_is_final_at_its_closing_fence_while_streaming() -> None:
    """The agent cuts the stream at the first runnable call: the save call must be out as
    soon as its closing fence's line is complete, not at the end of the reply."""
    parser = StreamParser()
    assert parser.feed(f"{F}save a.py\nprint(1)\n") == []
    [call] = parser.feed(f"{F}\n")
    assert (call.name, call.content) == ("save", "print(1)")


def test_twenty_save_blocks_followed_by_prose_all_run() -> None:
    text = "".join(f"{F}save f{i}.py\nx = {i}\n{F}\nSaved file {i}.\n" for i in range(20))
    parsed = parse(text)
    assert [c.content for c in parsed.calls] == [f"x = {i}" for i in range(20)]
    assert parsed.diagnostics == []


def test_a_markdown_like_target_still_waits_for_the_line_after_a_bare_fence() -> None:
    for path in ("notes.md", "README", "docs/guide.rst", "todo.txt", "docs/intro.markdown"):
        text = f"{F}save {path}\none\n{F}\nprose after it\n"
        parser = StreamParser()
        assert parser.feed(text) == [], path  # an example may open: nothing is written yet
        [call] = parser.finish()
        assert call.content == "one"
        [note] = parser.diagnostics
        assert note.kind == "ambiguous", path


def test_a_block_that_opened_an_inner_fence_reads_a_bare_fence_by_the_next_line() -> None:
    body = f'"""Use it:\n{F}python\nrun()\n{F}\nThen:\n{F}\nmore()\n{F}\n"""'
    text = f"{F}save src/app.py\n{body}\n{F}\n\nSaved.\n"
    parsed = parse(text)
    [call] = parsed.calls
    assert call.content == body
    assert parsed.diagnostics == []


def test_ambiguous_blocks_that_ran_do_not_stop_the_reading() -> None:
    """Past eight ambiguous file blocks every bare fence closes its block: all run, the reply
    is read once more at most, and the shell block at the end still runs."""
    text = "".join(f"{F}save n{i}.md\nline {i}\n{F}\nprose {i}\n" for i in range(12))
    text += f"{F}shell\nls\n{F}\n"
    parsed = parse(text)
    assert [c.name for c in parsed.calls] == ["save"] * 12 + ["shell"]
    assert [c.content for c in parsed.calls[:12]] == [f"line {i}" for i in range(12)]
    kinds = [d.kind for d in parsed.diagnostics]
    assert "unread" not in kinds
    assert kinds == ["ambiguous"] * 10  # eight, the ninth, and the note on reading as a viewer
    assert "every bare fence was read as closing its block" in parsed.diagnostics[-1].message


def test_broken_calls_still_stop_the_reading_past_the_limit() -> None:
    text = "".join(f"<tool-use>\nline {i}\n" for i in range(12))
    kinds = [d.kind for d in parse(text, "xml").diagnostics]
    assert kinds[-1] == "unread"
