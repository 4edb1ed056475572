"""Hostile input never crashes or hangs the parsers."""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fencecall import StreamParser, parse, parse_codeblocks
from fencecall.parsing import FORMATS, parse_calls

from ..support import in_linear_time


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


Found = tuple[int, set[str], set[str]]
"""What a format finds in a text: the number of calls, their contents, the kinds of
diagnostics."""
MARKDOWN_READERS = ("markdown", "tool", "auto")
XML_READERS = ("xml", "auto")
AT_READERS = ("tool", "auto")
"""The formats that read ``@name(id): {json}`` calls."""
FOUND: dict[str, dict[str, Found]] = {
    "200-deep nesting": dict.fromkeys(MARKDOWN_READERS, (0, set(), {"unclosed", "swallowed"})),
    # one block: the 400 lines between the outer fences
    "200-deep equal nesting": dict.fromkeys(
        MARKDOWN_READERS, (1, {("```x\n" * 200 + "```\n" * 200)[:-1]}, set())),
    "huge fence line": dict.fromkeys(MARKDOWN_READERS, (1, {"body"}, set())),
    "unbalanced opens": dict.fromkeys(MARKDOWN_READERS, (0, set(), {"unclosed", "swallowed"})),
    "open xml": dict.fromkeys(XML_READERS, (0, set(), {"unclosed"})),
    "repeated xml openers": dict.fromkeys(XML_READERS, (1, {"ls"}, set())),
    "open cdata": dict.fromkeys(XML_READERS, (0, set(), {"unclosed"})),
    "open json": dict.fromkeys(AT_READERS, (0, set(), {"unclosed"})),
    "many cdata sections in one call": dict.fromkeys(XML_READERS, (1, {"x" * 100_000}, set())),
    "many broken json calls": dict.fromkeys(AT_READERS, (0, set(), {"unclosed", "unread"})),
    "many unclosed xml calls": dict.fromkeys(XML_READERS, (0, set(), {"unclosed", "unread"})),
    # every block is read; every format says that past the eighth block bare fences were
    # read as closing their blocks
    "many ambiguous file blocks": {**dict.fromkeys(FORMATS, (0, set(), {"ambiguous"})),
                                   **dict.fromkeys(MARKDOWN_READERS,
                                                   (20_000, {"x"}, {"ambiguous"}))},
}
"""What each format finds in each hostile input, where it finds anything at all."""


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_inputs_finish(name: str) -> None:
    """Each format reads the input in linear time and finds what it should; a stream of its
    first 200,000 characters finds what reading them whole finds."""
    text = HOSTILE[name]
    for fmt in FORMATS:
        with in_linear_time(len(text), f"{fmt} reading {name!r}"):
            parsed = parse(text, fmt)
        found = (len(parsed.calls), {call.content for call in parsed.calls},
                 {diagnostic.kind for diagnostic in parsed.diagnostics})
        assert found == FOUND.get(name, {}).get(fmt, (0, set(), set())), fmt
    chunks = [text[i : i + 997] for i in range(0, min(len(text), 200_000), 997)]
    fed = "".join(chunks)
    parser = StreamParser("tool")
    with in_linear_time(len(fed), f"streaming {name!r}"):
        streamed = [call for chunk in chunks for call in parser.feed(chunk)] + parser.finish()
    whole = parse(fed, "tool")
    assert (streamed, parser.diagnostics) == (whole.calls, whole.diagnostics)


def test_deep_nesting_result() -> None:
    [block] = parse_codeblocks(HOSTILE["200-deep equal nesting"])
    assert block.lang == "md"


def test_feed_after_finish_is_an_error() -> None:
    parser = StreamParser()
    parser.finish()
    with pytest.raises(RuntimeError):
        parser.feed("more")
