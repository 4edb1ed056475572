"""Hostile input never crashes or hangs the parsers."""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fencecall import StreamParser, parse_calls, parse_codeblocks
from fencecall.parsing import FORMATS


@pytest.fixture(autouse=True)
def hang_guard() -> Iterator[None]:
    """Fail instead of hanging the suite if a parser ever loops (no speed claim is made)."""

    def fail(signum: int, frame: object) -> None:
        raise TimeoutError("parser did not finish")

    previous = signal.signal(signal.SIGALRM, fail)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


@settings(max_examples=300)
@given(st.text(), st.sampled_from(list(FORMATS)))
def test_arbitrary_text_never_raises(text: str, fmt: str) -> None:
    parse_calls(text, fmt)
    parse_calls(text, fmt, streaming=True)


@settings(max_examples=100)
@given(st.binary(max_size=2000))
def test_binary_decoded_text_never_raises(data: bytes) -> None:
    text = data.decode("utf-8", errors="replace")
    for fmt in FORMATS:
        parse_calls(text, fmt)


HOSTILE = {
    "huge line": "x" * 3_000_000,
    "huge fence line": "```" + "a" * 1_000_000 + "\nbody\n```\n",
    "backticks on one line": "a" + "```" * 300_000,
    "only fences": "```\n" * 200_000,
    "unbalanced opens": "```python\n" * 100_000,
    "200-deep nesting": "\n".join("`" * (3 + i) + "x" for i in range(200)) + "\n",
    "200-deep equal nesting": "```md\n" + "```x\n" * 200 + "```\n" * 201,
    "open xml": "<tool-use>" + "<shell>" * 100_000,
    "repeated xml openers": "<tool-use>" * 100_000 + "<shell>ls</shell></tool-use>",
    "open cdata": "<tool-use><![CDATA[" + "x\n" * 100_000,
    "open json": "@a(b): " + "{" * 200_000,
    "many thinking opens": "<thinking>" * 100_000,
    "nul bytes": "\x00```shell\n\x00\n```\n" * 1000,
    "many cdata sections in one call": "<tool-use><shell>" + "<![CDATA[x]]>" * 100_000
                                       + "</shell></tool-use>",
    "many broken json calls": '@a(b): {"x": 1\n' * 100_000,
    "many unclosed xml calls": "<tool-use>\n" * 100_000,
    "many ambiguous file blocks": "```save a.txt\nx\n```\nprose\n" * 20_000,
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_inputs_finish(name: str) -> None:
    text = HOSTILE[name]
    for fmt in FORMATS:
        parse_calls(text, fmt)
    parser = StreamParser("tool")
    for i in range(0, min(len(text), 200_000), 997):
        parser.feed(text[i : i + 997])
    parser.finish()


def test_deep_nesting_result() -> None:
    [block] = parse_codeblocks(HOSTILE["200-deep equal nesting"])
    assert block.lang == "md"


def test_feed_after_finish_is_an_error() -> None:
    parser = StreamParser()
    parser.finish()
    with pytest.raises(RuntimeError):
        parser.feed("more")
