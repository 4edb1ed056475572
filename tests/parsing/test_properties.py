"""Hypothesis properties: streaming equals whole-text parsing, and render/parse round-trips."""

from __future__ import annotations

import itertools
import json
import keyword
import string

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from fencecall import (
    StreamParser,
    ToolCall,
    UnrepresentableCall,
    parse_codeblocks,
    render,
)
from fencecall.parsing import FORMATS, parse_calls
from fencecall.parsing._scanner import Scanner

FORMAT_NAMES = list(FORMATS)

# Lines that hit every rule of the scanner, mixed with prose.
LINES = [
    "```", "````", "`````", "```shell", "```save a.md", "```markdown", "````python", "``````shell",
    "  ```", "```x```", "<thinking>", "</thinking>", "<think>", "</think>", "text", "", " ",
    'say `x` and ``y``', '@shell(1): {"command": "ls"}', '@save(): {"a": "}\\"{",', '"b": 1}',
    "@x(2): {", "}", "<tool-use>", "</tool-use>", "<shell>ls</shell>", "<save args='a'>",
    "</save>", "<![CDATA[", "]]>", "<function_calls>", '<invoke name="read">',
    '<parameter name="path">a</parameter>', "</invoke>", "</function_calls>", "a < b > c",
    "<tool_call>", "</tool_call>", '{"name": "shell", "arguments": {"command": "ls"}}',
    '{"name": "x", "arguments": "{\\"a\\": 1}"}', "<function=shell>", "</function>",
    "<parameter=command>", "</parameter>", '[shell(command="ls")]', "[read(path='a', n=[1, (2",
    ")])", '"""', "'''", "# ]", "[x for x in y]", "~~~", "~~~shell", "~~~~", "```thinking>x",
    "```<think>y</think>", '```"""',
]
noise = st.sampled_from(LINES) | st.text(max_size=12)
body = st.lists(noise, max_size=5).map("\n".join)
well_formed = st.one_of(
    st.builds("```{}\n{}\n```".format, st.sampled_from(["shell", "save a.md", "markdown", "py"]),
              body),
    st.builds("<tool-use><{0}>{1}</{0}></tool-use>".format, st.sampled_from(["shell", "save"]),
              body),
    st.builds('<function_calls><invoke name="x"><parameter name="p">{}</parameter></invoke>'
              "</function_calls>".format, body),
    st.builds('@shell({}): {{"command": {}}}'.format, st.sampled_from(["", "a1"]),
              st.text(max_size=8).map(json.dumps)),
    st.builds('<tool_call>{{"name": "shell", "arguments": {}}}</tool_call>'.format,
              st.dictionaries(st.text(max_size=4), st.text(max_size=8), max_size=2).map(
                  json.dumps).flatmap(lambda text: st.sampled_from([text, json.dumps(text)]))),
    st.builds("<tool_call>\n<function={}>\n<parameter=command>\n{}\n</parameter>\n</function>\n"
              "</tool_call>".format, st.sampled_from(["shell", "save"]), body),
    st.builds("{}[{}(command={}, n={})]".format, st.sampled_from(["", "  "]),
              st.sampled_from(["shell", "mcp.fetch"]), st.text(max_size=8).map(repr),
              st.integers() | st.lists(st.booleans(), max_size=3)),
)
texts = st.lists(noise | well_formed, max_size=25).map("\n".join)


def chunked(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts})
    bounds = [0, *points, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


@settings(max_examples=400)
@given(texts, st.lists(st.integers(min_value=0), max_size=30), st.sampled_from(FORMAT_NAMES))
def test_any_chunking_equals_whole_text(text: str, cuts: list[int], fmt: str) -> None:
    parser = StreamParser(fmt)
    streamed: list[ToolCall] = []
    fed = ""
    for chunk in chunked(text, cuts):
        streamed += parser.feed(chunk)
        fed += chunk
        # Whatever has been yielded is exactly what a streaming parse of the prefix finds.
        assert streamed == parse_calls(fed, fmt, streaming=True)
    streamed += parser.finish()
    assert streamed == parse_calls(text, fmt)


@settings(max_examples=200)
@given(texts, st.integers(min_value=1, max_value=9))
def test_blocks_stream_in_fixed_chunks(text: str, size: int) -> None:
    scanner = Scanner()
    found = []
    for i in range(0, len(text), size):
        found += scanner.feed(text[i : i + size])
    found += scanner.finish()
    assert found == parse_codeblocks(text)


@given(texts)
def test_streaming_results_are_a_prefix_of_final_results(text: str) -> None:
    for fmt in FORMAT_NAMES:
        partial = parse_calls(text, fmt, streaming=True)
        assert parse_calls(text, fmt)[: len(partial)] == partial


@given(texts, st.sampled_from(FORMAT_NAMES))
def test_calls_are_in_order_of_position(text: str, fmt: str) -> None:
    starts = [c.start for c in parse_calls(text, fmt)]
    assert starts == sorted(starts)


names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.\-]{0,8}", fullmatch=True)
arglines = st.text(string.ascii_letters + string.digits + "./-_ ", max_size=20).map(str.strip)
# Carriage returns are read as line ends, so block and XML texts cannot carry them (the
# renderers refuse; see test_carriage_returns_cannot_be_rendered_where_they_would_be_lost).
contents = st.lists(st.sampled_from(LINES) | st.text(max_size=10), max_size=8).map(
    "\n".join).map(lambda text: text.replace("\r", ""))
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                max_size=3),
    max_leaves=6,
)


@given(names, arglines, contents)
def test_markdown_round_trip(name: str, argline: str, content: str) -> None:
    call = ToolCall(name, argline, content)
    [parsed] = parse_calls(render(call, "markdown"), "markdown")
    assert parsed.key() == call.key()


@given(names, arglines, contents, st.dictionaries(names.filter(lambda n: n != "args"),
                                                  st.text(max_size=10), max_size=3))
def test_xml_tool_use_round_trip(name: str, argline: str, content: str,
                                 kwargs: dict[str, str]) -> None:
    call = ToolCall(name, argline, content or "x", kwargs)
    [parsed] = parse_calls(render(call, "xml"), "xml")
    assert parsed.key() == call.key()


def test_carriage_returns_cannot_be_rendered_where_they_would_be_lost() -> None:
    for fmt in ("markdown", "xml"):
        with pytest.raises(UnrepresentableCall, match="carriage return"):
            render(ToolCall("save", "a.txt", "windows\r\nline"), fmt)
    assert parse_calls(render(ToolCall("x", kwargs={"v": "a\r\nb"}), "tool"), "tool")[0].kwargs \
        == {"v": "a\r\nb"}


@given(names, st.dictionaries(st.text(max_size=8), contents, min_size=1, max_size=3))
def test_xml_function_calls_round_trip(name: str, kwargs: dict[str, str]) -> None:
    call = ToolCall(name, kwargs=kwargs)
    text = render(call, "xml")
    assert text.startswith("<function_calls>")
    [parsed] = parse_calls(text, "xml")
    assert parsed.key() == call.key()


@given(names, st.from_regex(r"[A-Za-z0-9_\-]{0,10}", fullmatch=True),
       st.dictionaries(st.text(max_size=8), json_values, max_size=4))
def test_tool_round_trip(name: str, call_id: str, kwargs: dict[str, object]) -> None:
    call = ToolCall(name, kwargs=kwargs, call_id=call_id or None)
    [parsed] = parse_calls(render(call, "tool"), "tool")
    assert parsed.key() == call.key()
    assert json.loads(json.dumps(parsed.kwargs)) == kwargs


@given(names, st.dictionaries(st.text(max_size=8), json_values | contents, max_size=4))
def test_hermes_round_trip(name: str, kwargs: dict[str, object]) -> None:
    call = ToolCall(name, kwargs=kwargs)
    [parsed] = parse_calls(render(call, "hermes"), "hermes")
    assert parsed.key() == call.key()


@given(names, st.dictionaries(names, contents, max_size=4))
def test_qwen3_coder_round_trip(name: str, kwargs: dict[str, str]) -> None:
    call = ToolCall(name, kwargs=kwargs)
    try:
        text = render(call, "qwen3-coder")
    except UnrepresentableCall:
        assume(False)
    [parsed] = parse_calls(text, "qwen3-coder")
    assert parsed.key() == call.key()


identifiers = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True).filter(
    lambda word: not keyword.iskeyword(word))
py_names = st.lists(identifiers, min_size=1, max_size=3).map(".".join)


@given(py_names, st.dictionaries(identifiers, json_values | contents, max_size=4))
def test_pythonic_round_trip(name: str, kwargs: dict[str, object]) -> None:
    call = ToolCall(name, kwargs=kwargs)
    [parsed] = parse_calls(render(call, "pythonic"), "pythonic")
    assert parsed.key() == call.key()


@given(st.lists(st.tuples(py_names, st.dictionaries(identifiers, json_values, max_size=3)),
                min_size=1, max_size=4))
def test_several_named_calls_parse_back_in_order(
        items: list[tuple[str, dict[str, object]]]) -> None:
    calls = [ToolCall(name, kwargs=kwargs) for name, kwargs in items]
    for fmt in ("tool", "hermes", "pythonic"):
        text = "\n\nSome prose.\n\n".join(render(c, fmt) for c in calls)
        assert [p.key() for p in parse_calls(text, fmt)] == [c.key() for c in calls]


@given(st.lists(st.tuples(names, arglines, contents), min_size=1, max_size=4))
def test_several_rendered_calls_parse_back_in_order(items: list[tuple[str, str, str]]) -> None:
    calls = [ToolCall(n, a, c) for n, a, c in items]
    for fmt in ("markdown", "xml"):
        text = "\n\nSome prose.\n\n".join(render(c, fmt) for c in calls)
        assert [p.key() for p in parse_calls(text, fmt)] == [c.key() for c in calls]
