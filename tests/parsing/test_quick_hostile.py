"""Hostile inputs for the scanner's fast paths: ``Scanner.parse`` (a whole text as one final
region), ``quick_tool_use`` (a plain ``<tool-use>`` block by one regex, or the commonest
of them by a few finds) and ``quick_at_call``
(an ``@name(id): {json}`` call by the JSON decoder alone). Each must find exactly what the
general rules find (``Scanner(fast_paths=False)``, fed the whole text then finished): the
same calls, the same ends and the same diagnostics, whether the text is parsed whole, fed
whole, fed one character at a time, a line at a time or in arbitrary chunks."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fencecall.parsing._jsonscan import MAX_DEPTH
from fencecall.parsing._scanner import Found
from fencecall.parsing.formats._tool import AT_CALLS, quick_at_call
from fencecall.parsing.model import Diagnostic, ToolCall
from fencecall.parsing.xmlcalls import quick_bare_tool_use, quick_plain_tool_use, quick_tool_use

from .test_fast_path import FAST, GENERAL, _parse, _run, _scanner
from .test_properties import chunked

Reading = tuple[list[Found], list[Diagnostic], list[int]]
SETTINGS = settings(max_examples=200, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def _blocks(syntax: str) -> str:
    return "none" if syntax == "xml" else "call"


def _assert_every_reading_agrees(text: str, syntax: str, cuts: list[int] | None = None) -> None:
    """Every way of reading ``text`` finds what the general rules find fed it whole. Compared
    by ``repr`` too, which ``==`` is not strict enough for (``1 == 1.0 == True``)."""
    blocks = _blocks(syntax)
    general = _run(_scanner(GENERAL, blocks, syntax), [text])
    readings: dict[str, Reading] = {
        "general parse": _parse(_scanner(GENERAL, blocks, syntax), text),
        "fast parse": _parse(_scanner(FAST, blocks, syntax), text),
        "fast feed+finish": _run(_scanner(FAST, blocks, syntax), [text]),
        "fast by character": _run(_scanner(FAST, blocks, syntax), list(text)),
        "general by character": _run(_scanner(GENERAL, blocks, syntax), list(text)),
        # splitlines also cuts at \x1c, \x85, \u2028 ...: chunk ends the scanner must not see
        "fast by splitlines": _run(_scanner(FAST, blocks, syntax),
                                   text.splitlines(keepends=True)),
    }
    if cuts is not None:
        readings["fast chunks"] = _run(_scanner(FAST, blocks, syntax), chunked(text, cuts))
    for how, reading in readings.items():
        assert reading == general, how
        assert repr(reading) == repr(general), how


# -- strategies ----------------------------------------------------------------------------

WHITESPACE = " \t\n\x1c\x1d\x1e\x1f\x85\u2028\u2029\xa0\x0b\x0c\u3000\u200b"
"""Python's ``\\s`` and ``str.strip`` take all of these but the last (a zero-width space)."""
ws = st.text(alphabet=WHITESPACE, max_size=3)
ELEMENT_NAMES = ["shell", "save", "x", "a.b", "x-1", "_a", "tool-use", "tool-use2", "tool_use",
                 "function_calls", "é", "a\u0661", "shell."]
value_piece = st.sampled_from([*"ab >/&;#=:' \n\t<`\u2028", "&amp;", "&lt;", "&#10;", "&quot;",
                               "]]>", "<![CDATA[", "</shell>"])
attribute = st.builds(
    lambda space, name, eq1, eq2, quote, value:
        f"{space or ' '}{name}{eq1}={eq2}{quote}{value.replace(quote, '')}{quote}",
    ws, st.sampled_from(["args", "a", "x:y", "a.b", "a-b", "_", "é", "1"]), ws, ws,
    st.sampled_from(['"', "'"]), st.lists(value_piece, max_size=6).map("".join))
element_text = st.lists(st.sampled_from([*"ab >/&;\n\t]`\x1c\u2028", "\r", "\r\n", "&amp;",
                                         "```", "<", "</", "<![CDATA[x]]>", "<think>"]),
                        max_size=8).map("".join)
element_name = st.sampled_from(ELEMENT_NAMES)
tool_use_block = st.builds(
    lambda ws0, name, attrs, ws1, slash, text, closing, ws2:
        f"<tool-use>{ws0}<{name}{''.join(attrs)}{ws1}{slash}>{text}</{closing or name}>{ws2}"
        "</tool-use>",
    ws, element_name, st.lists(attribute, max_size=3), ws,
    st.sampled_from(["", "", "", "", "/"]), element_text, st.none() | element_name, ws)
XML_NOISE = ["<tool-use>", "</tool-use>", "<think>", "</think>", "<thinking>", "</thinking>",
             "```", "```shell\n", "```\n", "<![CDATA[", "]]>", "<function_calls>",
             "</function_calls>", "the `<tool-use>` tag ", "<shell>", "</shell>", "<shell/>",
             '<save args="a"/>', "<b>", "\n", "\r", "\r\n", *WHITESPACE]
xml_texts = st.lists(tool_use_block | st.sampled_from(XML_NOISE) | st.text(max_size=3),
                     max_size=10).map("".join)


def _dumps(value: object, separators: tuple[str, str]) -> str:
    return json.dumps(value, separators=separators, ensure_ascii=False)


json_value = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner,
                                                                max_size=3),
    max_leaves=8)
json_object = st.builds(_dumps, st.dictionaries(st.text(max_size=3), json_value, max_size=4),
                        st.sampled_from([(",", ":"), (", ", ": "), (",\n", ":\t")]))


def _insert(text: str, at: int, piece: str) -> str:
    at %= len(text) + 1
    return text[:at] + piece + text[at:]


# An object, or one broken (or merely odd) by a character put anywhere in it.
hostile_object = json_object | st.builds(
    _insert, json_object, st.integers(min_value=0),
    st.sampled_from(["{", "}", '"', "\\", ",", "]", "\x00", "\n", "\r", "\u2028", "\xa0",
                     "\x1c", " @x(9): {}", "\n@x(9): {}"]))
ODD_OBJECTS = ['{"a": 1, "a": 2}', '{"a": NaN, "b": Infinity, "c": -Infinity}', '{"a": 1e999}',
               '{"a": 123456789012345678901234567890}', '{"a": "\\ud800"}',
               '{"a": "\\udc00\\ud800"}', '{"a": "\x00\x01\t\n"}', '{"a": "}"}', '{"a": "{"}',
               '{"a": "\\"}"}', '{"a": "\\\\"}', '{\xa0"a": 1}', '{"a"\x1c: 1}', '{"a": 1}}',
               '{"a": 1', '{"a":\r\n1}', '{"a": 1,}', "{'a': 1}", '{"a": 01}', '{"a": "x\\',
               '{"a": "\\uZZZZ"}', '{"a": [}', "{{}}", '{"a": 1} {"b": 2}', '{"a": 1.0}',
               '{"a": true}', '{"\\u0000": 1}', '{"a": [' * 30 + "]" * 30 + "}"]
AT_OPENERS = ["@shell(1): ", "@shell():", "@shell(): \t", "@x.y(a-b): ", "@tool-use(1): ",
              "  @shell(1): ", "\t@s(): ", "x @s(1): ", "@s(1) : ", "@s( ): ", "@s(1):\n",
              "@1s(): ", "@é(): ", "\xa0@s(): ", "\u2028@s(): "]
AT_AFTER = ["", "\n", " trailing", " @s(2): {}", '@s(2): {"b": 1}', "\r\n", "\r", "}",
            "\n@s(3): {}", "\x85", "\u2028", "\n  @s(4):{}"]
at_call = st.builds(lambda opener, body, after: opener + body + after,
                    st.sampled_from(AT_OPENERS),
                    st.sampled_from(ODD_OBJECTS) | hostile_object, st.sampled_from(AT_AFTER))
TOOL_NOISE = ["\n", "```shell\n", "```markdown\n", "```\n", "```", "<think>", "</think>",
              "<tool_call>", "</tool_call>", '{"name": "s", "arguments": {}}', "text ", "{", "}",
              '"', "\\", "@", "\r", "\r\n", *WHITESPACE]
tool_texts = st.lists(at_call | st.sampled_from(TOOL_NOISE) | st.text(max_size=3),
                      max_size=8).map("".join)
cut_lists = st.lists(st.integers(min_value=0), max_size=10)


# -- whole texts, every way of reading them ------------------------------------------------

@SETTINGS
@given(xml_texts, cut_lists)
def test_hostile_xml_reads_the_same_every_way(text: str, cuts: list[int]) -> None:
    _assert_every_reading_agrees(text, "xml", cuts)


@SETTINGS
@given(tool_texts, cut_lists)
def test_hostile_tool_text_reads_the_same_every_way(text: str, cuts: list[int]) -> None:
    _assert_every_reading_agrees(text, "tool", cuts)


XML_CASES = [
    "<tool-use>\x1c<shell>ls</shell>\x85</tool-use>",
    "<tool-use>\u2028<shell\xa0a=\"1\">ls</shell>\u3000</tool-use>",
    '<tool-use><shell a=">" b="/">ls</shell></tool-use>',
    "<tool-use><shell a='\"'>x</shell></tool-use>",
    '<tool-use><shell args=" a  b " a="&amp;&lt;" a="2">x</shell></tool-use>',
    '<tool-use><shell args="1" args=" 2 ">x</shell></tool-use>',
    '<tool-use><shell a = "1"\n b=\'&#10;\'>x</shell></tool-use>',
    '<tool-use><shell a="1"/>x</shell></tool-use>',
    '<tool-use><shell a="1" />x</shell></tool-use>',
    '<tool-use><shell a="<![CDATA[x]]>">ls</shell></tool-use>',
    '<tool-use><shell a="</tool-use>">ls</shell></tool-use>',
    "<tool-use><tool-use>x</tool-use></tool-use>",
    '<tool-use><tool-use a="1">x</tool-use></tool-use>',
    "<tool-use><tool-use2>x</tool-use2></tool-use>",
    "<tool-use><a.b-c>x</a.b-c></tool-use>",
    "<tool-use><é>x</é></tool-use>",
    "<tool-use><shell>\n\n</shell></tool-use>",
    "<tool-use><shell>\n</shell></tool-use>",
    "<tool-use><shell></shell></tool-use>",
    "<tool-use><shell>\u2028ls\u2028</shell></tool-use>",
    "<tool-use>\r\n<shell>\r\nls\r\n</shell>\r\n</tool-use>\r\n",
    "<tool-use>\r<shell>\rls\r</shell>\r</tool-use>",
    "```\n<tool-use><shell>ls</shell></tool-use>\n```\n",
    "<think><tool-use><shell>ls</shell></tool-use></think>",
    "<think>\n<tool-use><shell>ls</shell></tool-use>\n",
    "say `<tool-use>` then <tool-use><shell>ls</shell></tool-use>",
    "<tool-use>" * 3 + "<shell>x</shell></tool-use>",
    "<tool-use><shell>a</shell></tool-use><tool-use><save args='x'>b</save></tool-use>"
    "<tool-use><![CDATA[x]]></tool-use>",
    "<tool-use><shell>a > b &amp; c</shell></tool-use>",
    "<tool-use><shell>ls</shell></tool-use>",
    "<tool-use><shell>ls</shell></tool-use>\n",
    "<tool-use><shell>ls</shell >\n</tool-use>",
    "<tool-use><shell>ls</shell><shell>pwd</shell></tool-use>",
    "<tool-use><shell>ls</Shell></tool-use>",
    "<tool-use><shell>ls</shell></tool-use></tool-use>",
    "<tool-use><shell>ls</shell>x</tool-use>",
    "<tool-use><shell\n args='a'\n>x</shell></tool-use>",
    "<tool-use ><shell>x</shell></tool-use>",
    "<tool-use><shell>```</shell></tool-use>\n```\n",
    "<tool-use><shell>ls</shell></tool-use>" * 5,
    "<tool-use><shell>ls</shell></tool-use><think>x</think><tool-use><s>y</s></tool-use>",
    "<tool-use><shell>ls</shell></tool-use>```\n<tool-use><s>y</s></tool-use>",
    "<tool-use><shell>ls</shell></tool-use><function_calls><invoke name=\"s\"></invoke>"
    "</function_calls><tool-use><s>y</s></tool-use>",
    "<tool-use><shell>ls</shell>",
    "<tool-use><shell>ls</shell></tool-use><tool-use><shell>ls</shell>",
]
TOOL_CASES = [
    *(f"@x(1): {body}" for body in ODD_OBJECTS),
    '@x(1): {"a": ' + "9" * 5000 + "}",  # past int's digit limit: a ValueError
    '@x(1): {"a": 1} trailing', '  @x(1): {"a": 1}', '\t@x(1): {"a": 1}', 'x @x(1): {"a": 1}',
    '@x(1):{"a":1}', '@x(1): {"a": 1}@y(2): {"b": 2}', '@x(1): {"a": 1} @y(2): {"b": 2}\n',
    '@x(1): {"a": 1}\n@y(2): {"b": 2}', '@x(1): {"a": 1}\r', '@x(): {}', '@x(): {}\n',
    '@x-y.z(a_b): {}', '@tool-use(1): {}', '```\n@x(1): {}\n```\n',
    '<think>@x(1): {}</think>\n@y(): {}', '@x(1): {"a": "\u2028"}\n', '\u2028@x(1): {}',
    '\x85@x(1): {}', '\x1c@x(1): {}', '@x(1): {}\x85@y(): {}',
    '<tool_call>{"name": "x", "arguments": {}}</tool_call>@x(1): {}',
    '@x(1): {"a": "\n@y(2): {}\n"}\n@z(3): {}',
    '@x(1): {"a": [\n@y(2): {}\n',
    "".join(f'@b({i}): {{"a": {i}\n' for i in range(10)) + '@g(1): {"a": 1}\n',
    '```markdown\n@x(1): {}\n```', '```save notes.md\n```\n@x(1): {}\n```\n```',
]


@pytest.mark.parametrize("text", [pytest.param(text, id=f"xml-{i}")
                                  for i, text in enumerate(XML_CASES)])
def test_hostile_xml_case(text: str) -> None:
    _assert_every_reading_agrees(text, "xml")


@pytest.mark.parametrize("text", [pytest.param(text, id=f"tool-{i}")
                                  for i, text in enumerate(TOOL_CASES)])
def test_hostile_tool_case(text: str) -> None:
    _assert_every_reading_agrees(text, "tool")


# -- the quick readers against the general reading, one call at a time ---------------------

def _moved(call: ToolCall, by: int) -> ToolCall:
    return ToolCall(call.name, call.argline, call.content, call.kwargs, call.call_id,
                    call.start + by, call.format, call.end + by)


def _general_calls(text: str, syntax: str) -> tuple[list[ToolCall], list[Diagnostic]]:
    scanner = _scanner(GENERAL, _blocks(syntax), syntax)
    found = scanner.parse(text)
    calls = [item for item in found if isinstance(item, ToolCall)]
    assert len(calls) == len(found)  # these formats report no code blocks
    return calls, scanner.diagnostics


@SETTINGS
@given(tool_use_block, st.text(max_size=3), st.integers(min_value=0, max_value=99))
def test_a_quick_tool_use_block_is_what_the_general_reading_makes(block: str, before: str,
                                                                  base: int) -> None:
    # the scanner hands the quick readers normalised text only
    text = (before + block).replace("\r\n", "\n").replace("\r", "\n")
    at = text.index("<tool-use>", len(before.replace("\r\n", "\n").replace("\r", "\n")))
    read = quick_tool_use(text, at, base, "xml")
    if read is None:
        return
    call, end = read
    assert text.startswith("</tool-use>", end - len("</tool-use>"))
    found, diagnostics = _general_calls(text[at:end], "xml")
    expected = _moved(call, -base - at)
    assert repr(found) == repr([expected]) and found[0].end == expected.end
    assert diagnostics == []


@SETTINGS
@given(tool_use_block, st.text(max_size=3), st.integers(min_value=0, max_value=99))
def test_a_bare_tool_use_block_reads_as_the_regular_expression_reads_it(block: str,
                                                                        before: str,
                                                                        base: int) -> None:
    text = (before + block).replace("\r\n", "\n").replace("\r", "\n")
    at = text.index("<tool-use>", len(before.replace("\r\n", "\n").replace("\r", "\n")))
    bare = quick_bare_tool_use(text, at, base, "xml")
    if bare is not None:
        assert repr(bare) == repr(quick_plain_tool_use(text, at, base, "xml"))


BARE_XML = [
    "<tool-use>\n<shell>\nls -la\n</shell>\n</tool-use>",
    "<tool-use><a.b-c></a.b-c></tool-use>",
    "<tool-use> \t<_x1>\n\n</_x1>\n </tool-use>",
    "<tool-use>\n<ipython>\nprint(1 > 0)\n</ipython>\n</tool-use>",
    "<tool-use>\n<x>\n</x></tool-use>",
]
NOT_BARE_XML = [  # each left to the regular expression, or to the general reading
    '<tool-use>\n<save args="a.txt">\nhi\n</save>\n</tool-use>',
    "<tool-use>\n<shell>\necho 1 < 2\n</shell>\n</tool-use>",
    "<tool-use>\x1c<shell>ls</shell></tool-use>",
    "<tool-use><tool-use>ls</tool-use></tool-use>",
    "<tool-use><\u00e9>ls</\u00e9></tool-use>",
    "<tool-use><1a>ls</1a></tool-use>",
    "<tool-use><shell/></tool-use>",
    "<tool-use><shell>ls</shell>",
    "<tool-use><shell>ls</shellx></tool-use>",
    "<tool-use><shell>ls</shell><x>y</x></tool-use>",
    "<tool-use><" + "x" * 65 + ">ls</" + "x" * 65 + "></tool-use>",
]


@pytest.mark.parametrize("text", BARE_XML)
def test_the_commonest_tool_use_blocks_are_read_without_the_regular_expression(
        text: str) -> None:
    read = quick_bare_tool_use("ab" + text, 2, 10, "xml")
    assert read is not None and repr(read) == repr(quick_plain_tool_use("ab" + text, 2, 10, "xml"))
    _assert_every_reading_agrees(text, "xml")


@pytest.mark.parametrize("text", NOT_BARE_XML)
def test_other_tool_use_blocks_are_left_to_the_other_readings(text: str) -> None:
    assert quick_bare_tool_use(text, 0, 0, "xml") is None
    _assert_every_reading_agrees(text, "xml")


@SETTINGS
@given(st.sampled_from(["@x(1): ", "@x():", "@x(a):\t ", "@x-y.z(1):"]),
       st.sampled_from(ODD_OBJECTS) | hostile_object, st.text(max_size=4),
       st.integers(min_value=0, max_value=99))
def test_a_quick_at_call_is_what_the_general_reading_makes(opener: str, body: str, after: str,
                                                          base: int) -> None:
    text = (opener + body + after).replace("\r\n", "\n").replace("\r", "\n")
    match = AT_CALLS.opener.match(text)
    if match is None:
        return
    read = quick_at_call(match, text, base)
    if read is None:
        return
    call, end = read
    found, diagnostics = _general_calls(text[:end], "tool")
    expected = _moved(call, -base)
    assert repr(found) == repr([expected]) and found[0].end == expected.end
    assert diagnostics == []


QUICK_XML = [
    "<tool-use>\x1c<shell\xa0a=\">\" b='\"' args=' x '>a > b &amp;</shell>\u2028</tool-use>",
    "<tool-use>\n<save args=\"a b.txt\" mode='&#10;'>\n\nline\n\n</save>\n</tool-use>",
    "<tool-use><tool-use2>x</tool-use2></tool-use>",
    "<tool-use><a.b-c x:y=\"1\" x:y=\"2\"></a.b-c></tool-use>",
]
QUICK_AT = [
    '@x(1): {"a": 1, "a": 2, "b": NaN, "c": [1e999, -Infinity]}',
    '@x():{"a": "\\ud800 }{ \\"", "b":\n{"c": "\x00\t\n"}}',
    '@x-y.z(id): {} @y(2): {}',
]


@pytest.mark.parametrize("text", [pytest.param(text, id=f"quick-xml-{i}")
                                  for i, text in enumerate(QUICK_XML)])
def test_odd_but_plain_tool_use_blocks_take_the_quick_path(text: str) -> None:
    # so the comparisons above do exercise the quick reader on hostile blocks
    read = quick_tool_use(text, 0, 0, "xml")
    assert read is not None
    found, diagnostics = _general_calls(text, "xml")
    assert found == [read[0]] and found[0].end == read[0].end == read[1] and not diagnostics
    _assert_every_reading_agrees(text, "xml")


@pytest.mark.parametrize("text", [pytest.param(text, id=f"quick-at-{i}")
                                  for i, text in enumerate(QUICK_AT)])
def test_odd_but_valid_at_calls_take_the_quick_path(text: str) -> None:
    match = AT_CALLS.opener.match(text)
    assert match is not None
    read = quick_at_call(match, text, 0)
    assert read is not None
    found, diagnostics = _general_calls(text, "tool")
    assert found[:1] == [read[0]] and found[0].end == read[0].end == read[1]
    assert not diagnostics
    _assert_every_reading_agrees(text, "tool")


# -- nesting near the recursion limit -------------------------------------------------------
#
# On Python 3.11 the C JSON decoder's nesting budget is what is left of the interpreter's
# recursion limit, so whether a deeply nested object decodes depends on how deep the stack is
# when it is decoded: quick_at_call decodes one frame shallower than read_at_call, and
# Scanner.parse scans one frame shallower than feed. So no reader decodes JSON nested deeper
# than jsonscan.MAX_DEPTH, far below that budget, and each says so the same way.

DEPTHS = [*range(1, MAX_DEPTH + 30), *range(900, sys.getrecursionlimit() + 50, 7)]


def _flat(found: list[Found], diagnostics: list[Diagnostic]) -> object:
    """What was found, without the nested arguments (comparing or printing those near the
    recursion limit would itself raise RecursionError)."""
    return [(type(item).__name__, getattr(item, "name", None), getattr(item, "start", None),
             getattr(item, "end", None)) for item in found], list(diagnostics)


def _deep_at_call(depth: int) -> str:
    return "@x(1): " + '{"a": ' * depth + "1" + "}" * depth


def _deep_tool_call(depth: int) -> str:
    return '<tool_call>{"name": "x", "arguments": {"a": ' + "[" * depth + "]" * depth + \
        "}}</tool_call>"


def test_quick_at_call_equals_the_general_reading_at_every_nesting_depth() -> None:
    for depth in DEPTHS:
        text = _deep_at_call(depth)
        fast, general = _scanner(FAST, "call", "tool"), _scanner(GENERAL, "call", "tool")
        fast_reading = _flat(fast.parse(text), fast.diagnostics)
        assert fast_reading == _flat(general.parse(text), general.diagnostics), depth


@pytest.mark.parametrize("fast", [FAST, GENERAL], ids=["fast", "general"])
@pytest.mark.parametrize("make", [_deep_at_call, _deep_tool_call], ids=["at", "tool_call"])
def test_parse_equals_feed_then_finish_at_every_nesting_depth(fast: bool,
                                                               make: Callable[[int], str]) -> None:
    for depth in DEPTHS:
        text = make(depth) + "\n"
        parsed, fed = _scanner(fast, "call", "tool"), _scanner(fast, "call", "tool")
        parsed_reading = _flat(parsed.parse(text), parsed.diagnostics)
        assert parsed_reading == _flat(fed.feed(text) + fed.finish(), fed.diagnostics), depth


@pytest.mark.parametrize("make", [_deep_at_call, _deep_tool_call], ids=["at", "tool_call"])
def test_json_nested_past_the_limit_is_refused_with_a_reason(make: Callable[[int], str]) -> None:
    inner = MAX_DEPTH - 2 if make is _deep_tool_call else MAX_DEPTH  # its own two levels
    fits, deeper = _scanner(FAST, "call", "tool"), _scanner(FAST, "call", "tool")
    [call] = fits.parse(make(inner))
    assert isinstance(call, ToolCall) and call.name == "x" and not fits.diagnostics
    assert deeper.parse(make(inner + 1)) == []
    [diagnostic] = deeper.diagnostics
    assert f"nested deeper than {MAX_DEPTH} levels" in diagnostic.message
