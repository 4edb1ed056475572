"""The fast path of the scanner (fence lines read by one regex iterator, see
``Scanner._scan_fences``) finds exactly what the general rules find, whole or streamed."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from fencecall.parsing._jsonscan import JsonEndScanner
from fencecall.parsing._scanner import Found, Scanner
from fencecall.parsing.model import Diagnostic, ToolCall

from .test_properties import chunked, texts

FAST, GENERAL = True, False
"""Scanners with their fast paths, and with every step taken by the general rules."""


FENCES = ["```", "````", "`````", "``````", "```shell", "````shell", "```save a.md",
          "```save src/a.py", "```patch x/y.py", "```markdown", "```md", "````save d.md",
          "``````shell", "```x```", "```<think>", "  ```", "\t```python", "   ````", "``` ",
          "```shell extra words", "``````", "```````"]
PROSE = ["text", "", " ", "  indented", "a ``` b", "`` not a fence", "<think>", "</think>",
         "<thinking>", "</thinking>", "<tool-use>", "</tool-use>", "<shell>ls</shell>",
         "<![CDATA[", "]]>", "<![CDATA[</tool-use>]]>", '@shell(1): {"command": "ls"}',
         "@x(2): {", "}", "# title", "- item"]
ENDS = ["\n", "\r\n", "\r"]
line = st.sampled_from(FENCES) | st.sampled_from(PROSE) | st.text(max_size=6)
# A block: an opening fence, a few lines, a bare fence, and the line after it (which decides
# whether a bare fence in a document block closes it).
block = st.builds(lambda opener, inside, closer, after: [opener, *inside, closer, after],
                  st.sampled_from(FENCES), st.lists(line, max_size=4),
                  st.sampled_from(["```", "````", "  ```", "``````"]), line)
pieces = st.lists(line.map(lambda text: [text]) | block, max_size=12).map(
    lambda parts: [text for part in parts for text in part])
lines = st.tuples(pieces, st.lists(st.sampled_from(ENDS), min_size=1, max_size=3)).map(
    lambda both: "".join(text + both[1][i % len(both[1])] for i, text in enumerate(both[0])))
fence_texts = lines | texts
kinds = st.sampled_from(["codeblock", "call", "none"])
syntaxes = st.sampled_from(["markdown", "xml", "tool"])


def _scanner(fast: bool, blocks: str, syntax: str) -> Scanner:
    from fencecall.parsing.formats._tool import AT_CALLS, LEFT_IN_CONTENT
    from fencecall.parsing.formats._xml import TAGS

    tags = {"markdown": (), "xml": TAGS, "tool": LEFT_IN_CONTENT}[syntax]
    spans = (AT_CALLS,) if syntax == "tool" else ()
    return Scanner(blocks=blocks, tags=tags, spans=spans,  # type: ignore[arg-type]
                   fast_paths=fast)


def _run(scanner: Scanner, chunks: list[str]) -> tuple[list[Found], list[Diagnostic], list[int]]:
    found: list[Found] = []
    for chunk in chunks:
        found += scanner.feed(chunk)
    found += scanner.finish()
    ends = [item.end for item in found if isinstance(item, ToolCall)]  # not in equality
    return found, scanner.diagnostics, ends


def _parse(scanner: Scanner, text: str) -> tuple[list[Found], list[Diagnostic], list[int]]:
    found = scanner.parse(text)
    return found, scanner.diagnostics, [item.end for item in found if isinstance(item, ToolCall)]


@settings(max_examples=500)
@given(fence_texts, kinds, syntaxes)
def test_whole_text_fast_path_equals_the_general_rules(text: str, blocks: str,
                                                       syntax: str) -> None:
    general = _run(_scanner(GENERAL, blocks, syntax), [text])
    assert _run(_scanner(FAST, blocks, syntax), [text]) == general
    # a text known to be whole is one final region: the same calls, ends and diagnostics
    assert _parse(_scanner(FAST, blocks, syntax), text) == general
    assert _parse(_scanner(GENERAL, blocks, syntax), text) == general


@settings(max_examples=300)
@given(fence_texts, kinds, syntaxes, st.lists(st.integers(min_value=0), max_size=20))
def test_streamed_fast_path_equals_the_general_rules(text: str, blocks: str, syntax: str,
                                                     cuts: list[int]) -> None:
    chunks = chunked(text, cuts)
    general = _run(_scanner(GENERAL, blocks, syntax), [text])
    assert _run(_scanner(FAST, blocks, syntax), chunks) == general
    by_line = text.replace("\r\n", "\n").replace("\r", "\n").splitlines(keepends=True)
    assert _run(_scanner(FAST, blocks, syntax), by_line) == general


def test_a_block_that_outlives_its_region_keeps_its_line() -> None:
    scanner = Scanner(blocks="call")
    scanner.feed("intro\n\n```shell\nls\n")
    scanner.feed("more\n")
    scanner.finish()
    [diagnostic] = scanner.diagnostics
    assert diagnostic.line == 3 and "line 3" in diagnostic.message


@given(st.lists(st.sampled_from(['{', '}', '"', '\\', 'a', ' ', '\n', '\\"', '{"a": "}"}']),
                max_size=30), st.lists(st.integers(min_value=0), max_size=8))
def test_json_end_is_the_same_in_any_pieces(parts: list[str], cuts: list[int]) -> None:
    text = "{" + "".join(parts)

    def one_char_at_a_time() -> tuple[str, int]:
        scanner = JsonEndScanner()
        for i in range(len(text)):
            status, index = scanner.scan(text[i], 0)
            if status == "end":
                return status, i + index
        return "more", len(text)

    def in_pieces() -> tuple[str, int]:
        scanner = JsonEndScanner()
        points = sorted({c % (len(text) + 1) for c in cuts})
        done = 0
        for a, b in itertools.pairwise([0, *points, len(text)]):
            status, index = scanner.scan(text[a:b], 0)
            if status == "end":
                return status, a + index
            done = b
        return "more", done

    assert in_pieces() == one_char_at_a_time()


# Streaming: lines that cannot complete anything wait unscanned, and single fence lines are
# taken one at a time (``Scanner._step_line``). Each feed must return what the general rules
# return for the same chunk, and ``settled`` (which the auto format uses) must agree.

def _feeds(scanner: Scanner, chunks: list[str]) -> tuple[list[list[Found]], list[int],
                                                          list[Found], list[Diagnostic]]:
    per_feed = [scanner.feed(chunk) for chunk in chunks]
    settled = [scanner.settled]
    rest = scanner.finish()
    ends = [item.end for found in [*per_feed, rest] for item in found
            if isinstance(item, ToolCall)]
    return per_feed, [*settled, *ends], rest, scanner.diagnostics


def _fixed(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


@settings(max_examples=400)
@given(fence_texts, kinds, syntaxes, st.integers(min_value=1, max_value=12))
def test_each_feed_returns_what_the_general_rules_return(text: str, blocks: str, syntax: str,
                                                         size: int) -> None:
    for chunks in (_fixed(text, size), text.splitlines(keepends=True)):
        fast = _feeds(_scanner(FAST, blocks, syntax), chunks)
        assert fast == _feeds(_scanner(GENERAL, blocks, syntax), chunks)


@settings(max_examples=300)
@given(fence_texts, kinds, syntaxes, st.lists(st.integers(min_value=0), max_size=20))
def test_settled_agrees_after_every_feed(text: str, blocks: str, syntax: str,
                                         cuts: list[int]) -> None:
    chunks = chunked(text, cuts)
    fast, general = _scanner(FAST, blocks, syntax), _scanner(GENERAL, blocks, syntax)
    for chunk in chunks:
        assert fast.feed(chunk) == general.feed(chunk)
        assert fast.settled == general.settled
    assert fast.finish() == general.finish()
    assert fast.diagnostics == general.diagnostics


def test_thinking_opened_by_a_waiting_line_hides_the_block_after_it() -> None:
    lines = ["intro\n", "<think>\n", "plan\n", "```shell\n", "ls\n", "```\n", "</think>\n",
             "```shell\n", "pwd\n", "```\n", "end\n"]
    scanner = Scanner(blocks="call")
    found = [call for line in lines for call in scanner.feed(line)]
    assert [call.content for call in found] == ["pwd"]
    assert scanner.finish() == []


def test_a_block_is_reported_with_the_chunk_that_ends_its_closing_fence() -> None:
    scanner = Scanner(blocks="call")
    text = "Intro.\n```shell\nls -la\n```\n\nMore prose.\n```save a.py\nx = 1\n```\n\nEnd.\n"
    reported = {}
    for i in range(0, len(text), 8):
        for call in scanner.feed(text[i : i + 8]):
            reported[call.content] = i + 8
    assert reported["ls -la"] >= text.index("```\n\nMore") + 4
    assert reported["ls -la"] < text.index("```\n\nMore") + 4 + 8
    # a block holding files closes once the line after its fence has begun
    assert reported["x = 1"] >= text.index("```\n\nEnd") + 5
    assert reported["x = 1"] < text.index("```\n\nEnd") + 5 + 8


XML_PIECES = ["<tool-use>", "</tool-use>", "<shell>", "</shell>", "<save args=\"a b.txt\">",
              "</save>", "<save args='x<y'>", "<shell a=\"&amp;\" args=' ls '>", "<shell/>",
              "<tool-use>\n<shell>\nls -la\n</shell>\n</tool-use>", "<tool-use >",
              "<tool-use><tool-use>x</tool-use></tool-use>", "<![CDATA[", "]]>", "ls", "a < b",
              "&lt;", "\n", " ", "\n\n", "<think>", "</think>", "```", "```shell\n", "<b>",
              "<function_calls>", "</function_calls>", "<invoke name=\"shell\">", "</invoke>",
              '<parameter name="command">', "</parameter>", "<shell args=\"x\"/>"]
xml_texts = st.lists(st.sampled_from(XML_PIECES) | st.text(max_size=3), max_size=24).map("".join)


@settings(max_examples=500)
@given(xml_texts, st.lists(st.integers(min_value=0), max_size=12))
def test_quick_xml_calls_equal_the_general_reading(text: str, cuts: list[int]) -> None:
    _assert_quick_reads_as_general(text, cuts, "none", "xml")


def _assert_quick_reads_as_general(text: str, cuts: list[int], blocks: str,
                                   syntax: str) -> None:
    """Parsed whole, and fed in the chunks ``cuts`` make, the fast paths find what the
    general rules find fed the whole text."""
    general = _run(_scanner(GENERAL, blocks, syntax), [text])
    assert _parse(_scanner(FAST, blocks, syntax), text) == general
    assert _run(_scanner(FAST, blocks, syntax), chunked(text, cuts)) == general


AT_OPENERS = ["@shell(1): ", "@shell(): ", "@save(c_2):\t", "@x(y) ", "  @shell(3):",
              "a @shell(4): "]
AT_BODIES = ['{"command": "ls"}', '{"a": {"b": [1, "}"]}}', '{"a": "x\ny"}', '{"a": "\\""}',
             "{}", "{", '{"a": 1', '{"a": 1}}', "{'a': 1}", '{"a": NaN}', '{"a": [}',
             '{"a": "}', '{"a": 1} trailing', '{"a":\n 2}']
AT_PIECES = ["{", "}", '"', "\\", ":", ", ", "\n", "\t", "```shell\n", "```", "<think>",
             "</think>", "text ", "<tool_call>", "</tool_call>", '{"name": "shell"}']
at_call = st.builds(lambda opener, body: opener + body, st.sampled_from(AT_OPENERS),
                    st.sampled_from(AT_BODIES))
at_texts = st.lists(at_call | st.sampled_from(AT_PIECES) | st.text(max_size=3),
                    max_size=16).map("".join)


@settings(max_examples=500)
@given(at_texts, st.lists(st.integers(min_value=0), max_size=12))
def test_quick_at_calls_equal_the_general_reading(text: str, cuts: list[int]) -> None:
    _assert_quick_reads_as_general(text, cuts, "call", "tool")


def test_parse_after_feed_is_feed_then_finish() -> None:
    text = "intro\n```shell\nls\n```\nafter ```x\n```save a.md\nkept\n"
    fed, parsed = Scanner(blocks="call"), Scanner(blocks="call")
    assert parsed.feed(text[:20]) == fed.feed(text[:20])
    assert parsed.parse(text[20:]) == fed.feed(text[20:]) + fed.finish()
    assert parsed.diagnostics == fed.diagnostics and len(fed.diagnostics) == 1
