"""The string searches of the compiled core find what ``str.find`` and ``str.startswith``
find, on texts dense enough in the needles' first characters to hand over to ``str.find``."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from fencecall.parsing._needles import NeedleFinder, needle_groups
from fencecall.parsing._strings import COMPILED, TOO_DENSE, find_first_of, find_literal, starts_at

NEEDLES = [("```",), ("<think", "<tool-use>", "<function_calls>"), ("<tool_call>", "<tool"),
           ("@",), ("é<",)]
pieces = st.sampled_from(["`", "``", "```", "<", "<t", "<think", "<tool-use>", "<tool_call>",
                          "<function_calls>", "@", "é", "é<", "a", " ", "\n", "x" * 40])
texts = st.lists(pieces, max_size=80).map("".join)


@settings(max_examples=500)
@given(texts, st.sampled_from(NEEDLES), st.integers(min_value=0, max_value=200))
def test_the_first_of_a_group_is_the_earliest_str_find(text: str, needles: tuple[str, ...],
                                                       pos: int) -> None:
    found = [(text.find(needle, pos), i) for i, needle in enumerate(needles)]
    hits = sorted((at, i) for at, i in found if at != -1)
    expected = (hits[0][0], needles[hits[0][1]]) if hits else (-1, "")
    assert find_first_of(text, needles, pos) in (expected, (TOO_DENSE, ""))
    if COMPILED and expected[0] != -1 and text.count(needles[0][0], pos, expected[0]) < 8:
        assert find_first_of(text, needles, pos) == expected  # too few misses to give up
    assert find_literal(text, needles[0], pos) == text.find(needles[0], pos)


@settings(max_examples=300)
@given(texts, st.lists(st.tuples(st.integers(min_value=0, max_value=60), st.booleans()),
                       max_size=30))
def test_the_scanners_needle_finder_finds_the_earliest_needle(
        text: str, steps: list[tuple[int, bool]]) -> None:
    needles = ("```", "<think", "<tool-use>", "<function_calls>", "@")
    finder = NeedleFinder(text, needle_groups(needles))
    pos = 0
    for step, past_fences in steps:
        pos += step
        wanted = [(text.find(needle, pos), i) for i, needle in enumerate(needles)
                  if not (past_fences and needle == "```")]
        hits = sorted((at, i) for at, i in wanted if at != -1)
        expected = (needles[hits[0][1]], hits[0][0]) if hits else None
        assert finder.find(pos, past_fences) == expected


def test_a_text_dense_in_first_characters_hands_over_to_str_find() -> None:
    text = "<" * 5000 + "<think>" + "<b" * 300 + "<tool-use>"
    if COMPILED:
        assert find_first_of(text, ("<tool-use>", "<think"), 0) == (TOO_DENSE, "")
    assert find_literal(text, "<tool-use>", 3) == len(text) - 10
    assert find_literal("``a" * 100, "```", 0) == -1
    finder = NeedleFinder(text, needle_groups(("<tool-use>", "<think")))
    assert finder.find(0) == ("<think", 5000)
    assert finder.find(5001) == ("<tool-use>", len(text) - 10)
@given(st.text(alphabet="ab<", max_size=12), st.text(alphabet="ab<", min_size=1, max_size=3),
       st.integers(min_value=-2, max_value=14))
def test_starts_at_is_startswith(text: str, prefix: str, i: int) -> None:
    if i >= 0:
        assert starts_at(text, prefix, i) == text.startswith(prefix, i)
