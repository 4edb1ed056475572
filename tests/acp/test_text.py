"""Thinking told apart from the reply however the stream is cut, and fences that hold."""

from __future__ import annotations

import pytest

from fencecall.acp._text import ThinkingSplitter, fenced

REPLY = "Sure.<think>weigh <b> it</think>Then <thinking>more</thinking> done <thi"


def _split(chunks: list[str]) -> list[tuple[str, str]]:
    splitter = ThinkingSplitter()
    pieces = [piece for chunk in chunks for piece in splitter.feed(chunk)] + splitter.flush()
    merged: list[tuple[str, str]] = []
    for kind, text in pieces:
        if merged and merged[-1][0] == kind:
            merged[-1] = (kind, merged[-1][1] + text)
        else:
            merged.append((kind, text))
    return merged


@pytest.mark.parametrize("size", [1, 2, 3, 5, 8, len(REPLY)])
def test_thinking_is_split_out_at_any_chunk_size(size: int) -> None:
    chunks = [REPLY[i:i + size] for i in range(0, len(REPLY), size)]
    assert _split(chunks) == [("message", "Sure."), ("thought", "weigh <b> it"),
                              ("message", "Then "), ("thought", "more"),
                              ("message", " done <thi")]


def test_a_fence_outlasts_the_backticks_inside() -> None:
    assert fenced("a ```` b") == "`````\na ```` b\n`````"
    assert fenced("x\n", "bash") == "```bash\nx\n```"
