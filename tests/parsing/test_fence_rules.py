"""Fence lines that are not langtags, and file blocks that hold fenced examples."""

from __future__ import annotations

import pytest

from fencecall.parsing import StreamParser, ToolCall, parse, parse_calls

from ..support import F


def streamed(text: str, size: int = 1) -> list[ToolCall]:
    parser = StreamParser()
    calls = [c for i in range(0, len(text), size) for c in parser.feed(text[i : i + size])]
    return calls + parser.finish()


@pytest.mark.parametrize("info", ["\'\'\'", '"""', "<tool-use>", "!", "=== x"])
def test_a_fence_followed_by_what_is_no_langtag_is_content(info: str) -> None:
    """As a markdown viewer shows it: a closing fence has nothing after it."""
    text = f"{F}shell\necho 1\n{F}{info}\necho 2\n{F}\n"
    [call] = parse_calls(text)
    assert call.content == f"echo 1\n{F}{info}\necho 2"
    assert streamed(text) == [call]


@pytest.mark.parametrize("info", ["<think>", "thinking>", "<thinking>", " think>"])
def test_a_fence_with_thinking_glued_to_it_closes_and_the_thinking_is_skipped(info: str) -> None:
    text = f"{F}shell\necho 1\n{F}{info}plans</{info.strip().strip('<>')}>\n{F}shell\necho 2\n{F}\n"
    calls = parse_calls(text)
    assert [c.content for c in calls] == ["echo 1", "echo 2"]
    assert streamed(text) == calls


def test_a_python_block_with_a_fence_and_quotes_inside_leaves_the_next_call_whole() -> None:
    text = (f'Here:\n{F}python\nx = """\n{F}"""\nmore\n{F}\n\nNow run:\n{F}shell\nls\n{F}\n')
    calls = parse_calls(text)
    assert [(c.name, c.content) for c in calls] == [("python", f'x = """\n{F}"""\nmore'),
                                                    ("shell", "ls")]
    assert streamed(text) == calls


def test_a_closing_fence_with_a_tag_glued_to_it_closes_and_the_rest_is_read() -> None:
    text = f"{F}shell\nls\n{F}<think>\nshould I?\n</think>\n{F}shell\npwd\n{F}\n"
    calls = parse_calls(text)
    assert [c.content for c in calls] == ["ls", "pwd"]
    assert streamed(text) == calls
    hidden = f"{F}shell\nls\n{F}<think>\n{F}shell\nrm -rf /\n{F}\n"
    assert [c.content for c in parse_calls(hidden)] == ["ls"]  # the rest was thinking


def test_a_bare_fence_longer_than_the_opener_is_content() -> None:
    text = f"{F}shell\necho a\n`````\necho b\n{F}\n"
    [call] = parse_calls(text)
    assert call.content == "echo a\n`````\necho b"


@pytest.mark.parametrize("path", ["README.txt", "docs/guide.rst", "notes.md", "README",
                                  "docs/intro.markdown"])
def test_a_file_block_keeps_a_fenced_example_whole(path: str) -> None:
    body = f"Install it:\n{F}\npip install fencecall\n{F}\nThen run it.\n{F}python\nrun()\n{F}"
    text = f"{F}save {path}\n{body}\n{F}\n\nSaved.\n"
    [call] = parse_calls(text)
    assert (call.argline, call.content) == (path, body)
    for size in (1, 7, 100):
        assert streamed(text, size) == [call]


def test_a_file_block_followed_by_prose_closes_where_every_fence_closes() -> None:
    text = f"{F}save notes.txt\nfirst line\n{F}\nSaved the notes.\n{F}shell\ncat notes.txt\n{F}\n"
    parsed = parse(text)
    assert [(c.name, c.content) for c in parsed.calls] == [("save", "first line"),
                                                           ("shell", "cat notes.txt")]
    [note] = parsed.diagnostics  # the model is told what the file got
    assert note.kind == "ambiguous" and note.name == "save"
    assert "it holds lines 2 to 2 only" in note.message
    assert streamed(text) == parsed.calls


def test_while_streaming_an_ambiguous_file_block_waits_for_the_end() -> None:
    text = f"{F}save a.txt\none\n{F}\nprose after it\n"
    parser = StreamParser()
    assert parser.feed(text) == []  # either reading is still possible: nothing is written yet
    [call] = parser.finish()
    assert call.content == "one"


def test_plain_code_blocks_still_close_at_a_bare_fence() -> None:
    text = f"{F}python\nx = 1\n{F}\nThat sets x.\n"
    parser = StreamParser()
    [call] = parser.feed(text)
    assert call.content == "x = 1"
