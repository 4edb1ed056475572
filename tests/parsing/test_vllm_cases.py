"""vLLM's own test cases for the open-model tool parsers, as data, and fencecall's reading of
each: the same calls (names, and arguments typed as the tool's schema types them), or, where
fencecall chooses differently on purpose, its own result with the reason, and never silence
(a reply meant as a call that yields fewer calls than vLLM's yields a diagnostic, or the
tool's argument check refuses the call and says why). Then real replies of a Qwen fine-tune
that writes bare ``<function=…>`` calls, read against the action its own agent ran.

Sources (vllm-project/vllm, the inputs and expected calls of these files):

* ``QWEN_SHARED``: ``tests/tool_parsers/test_qwen3_xml_coder_shared.py`` @ 00d0a333ba9b
* ``QWEN_CODER``: ``tests/tool_parsers/test_qwen3coder_tool_parser.py`` @ c8e462c487ef
* ``HERMES``: ``tests/tool_parsers/test_hermes_tool_parser.py`` @ df6d0216aa6f
* ``PYTHONIC``: ``tests/tool_parsers/test_pythonic_tool_parser.py`` @ dfa58d2b2769, and what
  ``vllm/tool_parsers/pythonic_tool_parser.py`` @ 0047fb9dad17 does where no test says
  (``PYTHONIC_PARSER``); the same test file @ 0716d268c7d8 adds bad siblings
  (``PYTHONIC_SIBLINGS``)
* ``LLAMA4``: ``tests/tool_parsers/test_llama4_pythonic_tool_parser.py`` @ 0716d268c7d8 (its
  inputs the pythonic file holds too, word for word, are not repeated), and what
  ``vllm/tool_parsers/llama4_pythonic_tool_parser.py`` @ 0716d268c7d8 does with the
  ``<|python_start|>`` and ``<|python_end|>`` tokens where no test says (``LLAMA4_PARSER``)

vLLM types a qwen3-coder value by the tool's JSON schema while parsing; fencecall parses
text only and types arguments when the tool binds them (:mod:`fencecall.tools._parameters`,
with the parameter types an MCP tool's schema gives, :mod:`fencecall.tools.mcp._convert`), so
the comparison types the parsed strings that way.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fencecall.parsing import Diagnostic, StreamParser, ToolCall, parse
from fencecall.tools._parameters import ArgumentError, Parameter, validate
from fencecall.tools.mcp._convert import _param_type

QWEN_SHARED = "test_qwen3_xml_coder_shared.py"
QWEN_CODER = "test_qwen3coder_tool_parser.py"
HERMES = "test_hermes_tool_parser.py"
PYTHONIC = "test_pythonic_tool_parser.py"
PYTHONIC_PARSER = "pythonic_tool_parser.py"
PYTHONIC_SIBLINGS = "test_pythonic_tool_parser.py@0716d268c7d8"
LLAMA4 = "test_llama4_pythonic_tool_parser.py"
LLAMA4_PARSER = "llama4_pythonic_tool_parser.py"

Schema = Mapping[str, Mapping[str, Any]]
"""A tool's parameters as its JSON schema's ``properties``."""
WEATHER: Schema = {"city": {"type": "string"}, "state": {"type": "string"},
                   "unit": {"type": "string", "enum": ["fahrenheit", "celsius"]}}
AREA: Schema = {"shape": {"type": "string"}, "dimensions": {"type": "object"},
                "precision": {"type": "integer"}}
TYPES: Schema = {"int_param": {"type": "integer"}, "float_param": {"type": "float"},
                 "bool_param": {"type": "boolean"}, "str_param": {"type": "string"},
                 "obj_param": {"type": "object"}}
WRITE_FILE: Schema = {"path": {"type": "string"}, "content": {"type": "string"}}
SAMPLE_TOOLS = {"get_current_weather": WEATHER, "calculate_area": AREA}


@dataclass(frozen=True)
class Refused:
    """The tool's argument check refuses the parsed call, with a message holding ``text``."""

    text: str


Args = Mapping[str, Any] | Refused


@dataclass(frozen=True)
class Case:
    """One vLLM test input. ``calls`` is what vLLM's test expects; where fencecall differs,
    ``differs`` says why and ``ours`` is what fencecall makes of it. ``diagnostic`` is a part
    of the one diagnostic fencecall gives ("" for none), or of each where it gives several.
    ``chunks`` are the test's own streaming deltas, if it has some."""

    id: str
    source: str
    fmt: str
    text: str
    calls: Sequence[tuple[str, Args]]
    tools: Mapping[str, Schema] = field(default_factory=dict)
    differs: str = ""
    ours: Sequence[tuple[str, Args]] = ()
    diagnostic: str | tuple[str, ...] = ""
    chunks: Sequence[str] = ()


def _tool_call(name: str, **params: str) -> str:
    body = "".join(f"<parameter={key}>\n{value}\n</parameter>\n" for key, value in params.items())
    return f"<tool_call>\n<function={name}>\n{body}</function>\n</tool_call>"


DALLAS_TX_F = {"city": "Dallas", "state": "TX", "unit": "fahrenheit"}
WEATHER_CALL = _tool_call("get_current_weather", city="Dallas", state="TX", unit="fahrenheit")
NEWLINE_NULL_CALL = ("<tool_call>\n<function=search>\n<parameter=query>null</parameter>\n"
                     "</function>\n</tool_call>")
XML_TAGS_IN_CONTENT = ('char_deltas = [\n    "<tool_call>\\n",\n    "<parameter=query>\\n",\n'
                       '    "\\n</parameter>\\n",\n    "</function>\\n",\n]\n')
PARAM_LIKE_LINES = ('TOOL_CALL_TEMPLATE = """\n</parameter>\n<parameter=new_string>\n'
                    '#!/usr/bin/env python3\n</parameter>\n"""\n')
REAL_PARAM_NAME_LITERAL = 'doc = """\n<parameter=path>\nliteral/value\n</parameter>\n"""\n'
FULL_NESTED_CALL = ('doc = """\n<tool_call>\n<function=write_file>\n<parameter=path>\n'
                    "literal/value.txt\n</parameter>\n<parameter=content>\nhello\n</parameter>\n"
                    '</function>\n</tool_call>\n"""\n')
OUT_OF_SCHEMA_NESTED = ('template = """\n<tool_call>\n<function=foo>\n'
                        "<parameter=bar>baz</parameter>\n</function>\n</tool_call>\n" '"""\n')
TWO_IN_ONE_CHUNK = ("<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
                    "</function>\n</tool_call>\n<tool_call>\n<function=get_weather>\n"
                    "<parameter=city>\nLondon\n</parameter>\n</function>\n</tool_call>")


def _write_file(content: str, path: str = "test.py", end: str = "") -> str:
    return ("<tool_call>\n<function=write_file>\n"
            f"<parameter=path>\n{path}\n</parameter>\n"
            f"<parameter=content>\n{content}</parameter>\n</function>\n</tool_call>{end}")


SCANNER_TAG_RULE = (
    "the value holds a literal <tool_call>. A <tool_call> tag runs to the first "
    "</tool_call>, and an opener repeated before it supersedes the first (which was only "
    "mentioned in prose): that is the scanner's tag rule (_scanner.py), which reads no "
    "structure inside the tag. The same call written bare is read whole (case *_bare)")

QWEN_CASES = [
    Case("single_tool", QWEN_SHARED, "qwen3-coder", WEATHER_CALL,
         [("get_current_weather", DALLAS_TX_F)], SAMPLE_TOOLS),
    Case("single_tool_with_content", QWEN_SHARED, "qwen3-coder",
         "Sure! Let me check the weather for you." + WEATHER_CALL,
         [("get_current_weather", DALLAS_TX_F)], SAMPLE_TOOLS),
    Case("single_tool_multiline_param", QWEN_SHARED, "qwen3-coder",
         _tool_call("calculate_area", shape="rectangle", dimensions='{"width": 10,\n "height": 20}',
                    precision="2"),
         [("calculate_area", {"shape": "rectangle", "dimensions": {"width": 10, "height": 20},
                              "precision": 2})], SAMPLE_TOOLS),
    Case("parallel_tools", QWEN_SHARED, "qwen3-coder",
         WEATHER_CALL + "\n" + _tool_call("get_current_weather", city="Orlando", state="FL",
                                          unit="fahrenheit"),
         [("get_current_weather", DALLAS_TX_F),
          ("get_current_weather", {"city": "Orlando", "state": "FL", "unit": "fahrenheit"})],
         SAMPLE_TOOLS),
    Case("tool_with_typed_params", QWEN_SHARED, "qwen3-coder",
         "Let me calculate that area for you." + _tool_call(
             "calculate_area", shape="circle", dimensions='{"radius": 15.5}', precision="3"),
         [("calculate_area", {"shape": "circle", "dimensions": {"radius": 15.5},
                              "precision": 3})], SAMPLE_TOOLS),
    Case("no_tools", QWEN_SHARED, "qwen3-coder", "This is a test without tools", []),
    Case("fallback_no_tags", QWEN_SHARED, "qwen3-coder",
         "<function=get_current_weather>\n<parameter=city>\nDallas\n</parameter>\n"
         "<parameter=state>\nTX\n</parameter>\n</function>",
         [("get_current_weather", {"city": "Dallas", "state": "TX"})], SAMPLE_TOOLS),
    Case("type_conversion", QWEN_SHARED, "qwen3-coder",
         _tool_call("test_types", int_param="42", float_param="3.14", bool_param="true",
                    str_param="hello world", obj_param='{"key": "value"}'),
         [("test_types", {"int_param": 42, "float_param": 3.14, "bool_param": True,
                          "str_param": "hello world", "obj_param": {"key": "value"}})],
         {"test_types": TYPES}),
    Case("complex_type_with_single_quote", QWEN_SHARED, "qwen3-coder",
         _tool_call("test_types", obj_param="{'key': 'value'}"),
         [("test_types", {"obj_param": {"key": "value"}})], {"test_types": TYPES},
         differs="an object argument must be JSON; vLLM falls back to Python's literal_eval. "
         "The tool refuses it and tells the model it must be a JSON object",
         ours=[("test_types", Refused("'obj_param' must be a JSON object"))]),
    Case("missing_closing_parameter_tag", QWEN_SHARED, "qwen3-coder",
         "Let me check the weather for you:\n<tool_call>\n<function=get_current_weather>\n"
         "<parameter=city>\nDallas\n<parameter=state>\nTX\n</parameter>\n<parameter=unit>\n"
         "fahrenheit\n</parameter>\n</function>\n</tool_call>",
         [("get_current_weather", DALLAS_TX_F)], SAMPLE_TOOLS),
    Case("streaming_missing_opening_tag", QWEN_CODER, "qwen3-coder",
         "I'll check the weather for you.\n\n" + WEATHER_CALL.removeprefix("<tool_call>\n"),
         [("get_current_weather", DALLAS_TX_F)], SAMPLE_TOOLS),
    Case("streaming_incremental", QWEN_SHARED, "qwen3-coder",
         "I'll check the weather." + _tool_call("get_current_weather", city="Dallas",
                                                state="TX"),
         [("get_current_weather", {"city": "Dallas", "state": "TX"})], SAMPLE_TOOLS),
    Case("streaming_no_whitespace_content_before_tool_call", QWEN_CODER, "qwen3-coder",
         "\n\n" + _tool_call("get_current_weather", city="Dallas", state="TX"),
         [("get_current_weather", {"city": "Dallas", "state": "TX"})], SAMPLE_TOOLS),
    Case("malformed_xml_no_gt_delimiter", QWEN_SHARED, "qwen3-coder",
         "<tool_call>\n<function=get_current_weather\n<parameter=city>Dallas</parameter>\n"
         "</function>\n</tool_call>", [],
         differs="vLLM's test asserts only that nothing crashes; fencecall reports the call",
         diagnostic="holds text that is not a <function=TOOL>…</function> element"),
    Case("none_tool_calls_filtered", QWEN_SHARED, "qwen3-coder",
         "<tool_call>\n<function=bad_func_no_gt\n</function>\n</tool_call>\n<tool_call>\n"
         "<function=get_current_weather>\n<parameter=city>Dallas</parameter>\n"
         "<parameter=state>TX</parameter>\n</function>\n</tool_call>",
         [("get_current_weather", {"city": "Dallas", "state": "TX"})], SAMPLE_TOOLS,
         diagnostic="line 1 holds text that is not a <function=TOOL>…</function> element"),
    Case("streaming_multi_param_single_chunk", QWEN_SHARED, "qwen3-coder",
         "<tool_call>\n<function=get_current_weather>\n<parameter=city>\nDallas\n</parameter>\n"
         "<parameter=state>\nTX\n</parameter>\n<parameter=unit>\nfahrenheit\n</parameter>\n"
         "</function>\n</tool_call>",
         [("get_current_weather", DALLAS_TX_F)], SAMPLE_TOOLS,
         chunks=["<tool_call>", "\n<function=get_current_weather>", "\n",
                 "<parameter=city>\nDallas\n</parameter>\n<parameter=state>\nTX\n</parameter>"
                 "\n<parameter=unit>\nfahrenheit\n</parameter>", "\n</function>",
                 "\n</tool_call>"]),
    Case("no_double_serialization_string_args", QWEN_SHARED, "qwen3-coder",
         "<tool_call>\n<function=greet>\n<parameter=message>hello world</parameter>\n"
         "</function>\n</tool_call>",
         [("greet", {"message": "hello world"})], {"greet": {"message": {"type": "string"}}}),
    Case("streaming_speculative_decode_loss", QWEN_SHARED, "qwen3-coder",
         "<tool_call>\n<function=test>\n<parameter=city>\nParis\n</parameter>\n</function>\n"
         "</tool_call>", [("test", {"city": "Paris"})],
         chunks=["<tool_call>\n<function=test>\n",
                 "<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>"]),
    Case("string_null_value_preserved", QWEN_SHARED, "qwen3-coder", NEWLINE_NULL_CALL,
         [("search", {"query": "null"})], {"search": {"query": {"type": "string"}}}),
    Case("anyof_string_null_keeps_value_as_string", QWEN_SHARED, "qwen3-coder",
         "<tool_call>\n<function=set_code>\n<parameter=code>42</parameter>\n</function>\n"
         "</tool_call>", [("set_code", {"code": "42"})],
         {"set_code": {"code": {"anyOf": [{"type": "string"}, {"type": "null"}]}}},
         differs="fencecall types a parameter whose schema allows several types as 'any' "
         "(JSON where the text is JSON, else the text); vLLM takes anyOf's first type",
         ours=[("set_code", {"code": 42})]),
    Case("anyof_integer_null_parses_as_int", QWEN_SHARED, "qwen3-coder",
         "<tool_call>\n<function=set_count>\n<parameter=count>42</parameter>\n</function>\n"
         "</tool_call>", [("set_count", {"count": 42})],
         {"set_count": {"count": {"anyOf": [{"type": "integer"}, {"type": "null"}]}}}),
    Case("anyof_object_param_not_double_encoded", QWEN_SHARED, "qwen3-coder",
         "<tool_call>\n<function=update_record>\n"
         '<parameter=data>{"key": "value", "count": 42}</parameter>\n</function>\n</tool_call>',
         [("update_record", {"data": {"key": "value", "count": 42}})],
         {"update_record": {"data": {"anyOf": [{"type": "object"}, {"type": "null"}]}}},
         chunks=["<tool_call>", "\n<function=update_record>",
                 '\n<parameter=data>{"key": "value", "count": 42}</parameter>',
                 "\n</function>", "\n</tool_call>"]),
    Case("double_encoded_object_param", QWEN_SHARED, "qwen3-coder",
         "<tool_call>\n<function=process>\n<parameter=name>\nhello\n</parameter>\n"
         "<parameter=data>\n\"{'key': 'value', 'n': 1}\"\n</parameter>\n</function>\n"
         "</tool_call>\n", [("process", {"name": "hello", "data": {"key": "value", "n": 1}})],
         {"process": {"name": {"type": "string"}, "data": {"type": "object"}}},
         differs="a JSON string holding a Python repr is not an object; vLLM decodes it twice "
         "(a workaround for one chat template's bug). The tool refuses it and says why",
         ours=[("process", Refused("'data' must be a JSON object"))]),
    Case("content_with_xml_structural_tags", QWEN_SHARED, "qwen3-coder",
         _write_file(XML_TAGS_IN_CONTENT, end="\n"),
         [("write_file", {"path": "test.py", "content": XML_TAGS_IN_CONTENT.rstrip("\n")})],
         {"write_file": WRITE_FILE}, differs=SCANNER_TAG_RULE, ours=[],
         diagnostic="holds neither a JSON object"),
    Case("content_with_xml_structural_tags_bare", QWEN_SHARED, "qwen3-coder",
         _write_file(XML_TAGS_IN_CONTENT, end="\n").removeprefix("<tool_call>\n"),
         [("write_file", {"path": "test.py", "content": XML_TAGS_IN_CONTENT.rstrip("\n")})],
         {"write_file": WRITE_FILE}),
    Case("content_with_param_like_lines", QWEN_SHARED, "qwen3-coder",
         _write_file(PARAM_LIKE_LINES, "test_template.py", "\n"),
         [("write_file", {"path": "test_template.py",
                          "content": PARAM_LIKE_LINES.rstrip("\n")})],
         {"write_file": WRITE_FILE},
         differs="the value quotes </parameter> followed by <parameter=new_string>, which is "
         "how two values are written. vLLM sees in the tool's schema that new_string is no "
         "parameter of write_file; fencecall's parsing knows no tools, so it reads two values, "
         "and the tool refuses the unknown argument and says so: no file is written wrong",
         ours=[("write_file", Refused("unknown argument(s) 'new_string'"))]),
    Case("content_with_real_param_name_literal", QWEN_SHARED, "qwen3-coder",
         _write_file(REAL_PARAM_NAME_LITERAL, "fixture.py"),
         [("write_file", {"path": "fixture.py",
                          "content": REAL_PARAM_NAME_LITERAL.rstrip("\n")})],
         {"write_file": WRITE_FILE}),
    Case("content_with_full_nested_tool_call_bare", QWEN_SHARED, "qwen3-coder",
         _write_file(FULL_NESTED_CALL, "fixture.py").removeprefix("<tool_call>\n"),
         [("write_file", {"path": "fixture.py", "content": FULL_NESTED_CALL.rstrip("\n")})],
         {"write_file": WRITE_FILE}),
    Case("two_tools_second_with_out_of_schema_nested_literal_bare", QWEN_SHARED, "qwen3-coder",
         "<function=foo>\n<parameter=bar>baz</parameter>\n</function>\n\n"
         + _write_file(OUT_OF_SCHEMA_NESTED, "fixture.py").removeprefix("<tool_call>\n"),
         [("foo", {"bar": "baz"}),
          ("write_file", {"path": "fixture.py", "content": OUT_OF_SCHEMA_NESTED.rstrip("\n")})],
         {"write_file": WRITE_FILE}),
    Case("jinja_template_phantom_tool_call_is_rejected", QWEN_SHARED, "qwen3-coder",
         "<tool_call>\n<function={{ tc.name }}>\n<parameter={{ k }}>\n{{ v }}\n</parameter>\n"
         "</function>\n</tool_call>\n\n<tool_call>\n<function=write_file>\n"
         "<parameter=path>\nout.txt\n</parameter>\n<parameter=content>\nhello\n</parameter>\n"
         "</function>\n</tool_call>",
         [("write_file", {"path": "out.txt", "content": "hello"})], {"write_file": WRITE_FILE},
         diagnostic="has a <function={{ tc.name }}> that has a name no tool can have"),
    Case("inline_empty_tool_call_preserves_content_before_real_call", QWEN_SHARED,
         "qwen3-coder",
         "I'll show: <tool_call>example</tool_call>. Now real:\n<tool_call>\n<function=log>\n"
         "<parameter=msg>\nhi\n</parameter>\n</function>\n</tool_call>",
         [("log", {"msg": "hi"})], {"log": {"msg": {"type": "string"}}},
         diagnostic="line 1 holds neither a JSON object"),
    Case("anyof_string_null_with_null_literal_returns_none", QWEN_SHARED, "qwen3-coder",
         "<tool_call>\n<function=set_value>\n<parameter=optional>null</parameter>\n"
         "</function>\n</tool_call>", [("set_value", {"optional": None})],
         {"set_value": {"optional": {"anyOf": [{"type": "string"}, {"type": "null"}]}}}),
    Case("anyof_string_null_with_python_none_returns_none", QWEN_SHARED, "qwen3-coder",
         "<tool_call>\n<function=set_value>\n<parameter=optional>None</parameter>\n"
         "</function>\n</tool_call>", [("set_value", {"optional": None})],
         {"set_value": {"optional": {"anyOf": [{"type": "string"}, {"type": "null"}]}}},
         differs="'None' is not JSON; a parameter of several types takes the text as it is "
         "(vLLM reads Python's None for Qwen 3.5's chat template)",
         ours=[("set_value", {"optional": "None"})]),
    Case("python_none_value_for_nullable_int", QWEN_SHARED, "qwen3-coder",
         "<tool_call>\n<function=set_count>\n<parameter=count>None</parameter>\n</function>\n"
         "</tool_call>", [("set_count", {"count": None})],
         {"set_count": {"count": {"anyOf": [{"type": "integer"}, {"type": "null"}]}}},
         differs="as above: 'None' is not JSON, so the text stays text",
         ours=[("set_count", {"count": "None"})]),
    Case("array_with_json_bool", QWEN_SHARED, "qwen3-coder",
         '<tool_call>\n<function=pick>\n<parameter=items>\n["a", "b", 1, true]\n</parameter>\n'
         "</function>\n</tool_call>", [("pick", {"items": ["a", "b", 1, True]})],
         {"pick": {"items": {"type": "array"}}}),
    Case("two_tool_calls_in_one_streaming_chunk", QWEN_SHARED, "qwen3-coder",
         TWO_IN_ONE_CHUNK,
         [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "London"})],
         chunks=[TWO_IN_ONE_CHUNK]),
    Case("streaming_two_tool_calls_plus_trailing_text_one_delta", QWEN_SHARED, "qwen3-coder",
         TWO_IN_ONE_CHUNK + "\nAll done!",
         [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "London"})],
         chunks=[TWO_IN_ONE_CHUNK + "\nAll done!"]),
    Case("streaming_trailing_text_with_final_close_in_same_delta", QWEN_SHARED, "qwen3-coder",
         "<tool_call>\n<function=get_weather>\n<parameter=city>Paris</parameter>\n</function>"
         "\n</tool_call>\nI hope this helps!", [("get_weather", {"city": "Paris"})],
         chunks=["<tool_call>\n<function=get_weather>\n<parameter=city>Paris</parameter>\n"
                 "</function>", "\n</tool_call>\nI hope this helps!"]),
]

KNOWN_GAPS = [  # vLLM's calls, which fencecall does not make until the scanner's tag rule changes
    Case("content_with_full_nested_tool_call", QWEN_SHARED, "qwen3-coder",
         _write_file(FULL_NESTED_CALL, "fixture.py"),
         [("write_file", {"path": "fixture.py", "content": FULL_NESTED_CALL.rstrip("\n")})],
         {"write_file": WRITE_FILE}, differs=SCANNER_TAG_RULE),
    Case("two_tools_second_with_out_of_schema_nested_literal", QWEN_SHARED, "qwen3-coder",
         "<tool_call>\n<function=foo>\n<parameter=bar>baz</parameter>\n</function>\n</tool_call>"
         "\n\n" + _write_file(OUT_OF_SCHEMA_NESTED, "fixture.py"),
         [("foo", {"bar": "baz"}),
          ("write_file", {"path": "fixture.py", "content": OUT_OF_SCHEMA_NESTED.rstrip("\n")})],
         {"write_file": WRITE_FILE}, differs=SCANNER_TAG_RULE),
]

TRIGGER = '<tool_call>\n{"name": "final_answer", "arguments": {"trigger": true}}\n</tool_call>'
TEMPERATURE = {"location": "San Francisco, California, United States", "unit": "celsius"}
HERMES_CASES = [
    Case("streaming_just_forward_text", HERMES, "hermes",
         "This is some prior text that has nothing to do with tool calling.", []),
    Case("streaming_failure_case_bug_19056", HERMES, "hermes", TRIGGER,
         [("final_answer", {"trigger": True})]),
    Case("streaming", HERMES, "hermes",
         '<tool_call>{"name": "get_current_temperature","arguments": {"location":'
         '"San Francisco, California, United States", "unit": "celsius"}}</tool_call>',
         [("get_current_temperature", TEMPERATURE)]),
    Case("streaming_tool_call_with_stream_interval", HERMES, "hermes",
         '<tool_call>{"name": "get_current_temperature", "arguments": {"location": '
         '"San Francisco", "unit": "celsius"}}</tool_call>',
         [("get_current_temperature", {"location": "San Francisco", "unit": "celsius"})]),
    Case("streaming_content_then_tool_call_with_stream_interval", HERMES, "hermes",
         'Sure, let me check the weather.<tool_call>{"name": "get_weather", '
         '"arguments": {"city": "NYC"}}</tool_call>', [("get_weather", {"city": "NYC"})]),
    Case("streaming_multiple_tool_calls_with_stream_interval", HERMES, "hermes",
         '<tool_call>{"name": "search", "arguments": {"q": "cats"}}</tool_call>'
         '<tool_call>{"name": "search", "arguments": {"q": "dogs"}}</tool_call>',
         [("search", {"q": "cats"}), ("search", {"q": "dogs"})]),
    Case("non_streaming_no_tool_call", HERMES, "hermes", "This is not a tool call.", []),
    Case("non_streaming_tool_call_between_tags", HERMES, "hermes", TRIGGER,
         [("final_answer", {"trigger": True})]),
    Case("non_streaming_tool_call_until_eos", HERMES, "hermes",
         '<tool_call>\n{"name": "final_answer", "arguments": {"trigger": true}}',
         [("final_answer", {"trigger": True})],
         differs="a <tool_call> never closed may be a reply cut off mid-call, so it does not "
         "run and the model is told (vLLM's Granite 4 parser refuses it too)", ours=[],
         diagnostic="was never closed with </tool_call>, so it did not run"),
    Case("non_streaming_tool_call_invalid_json", HERMES, "hermes",
         '<tool_call>\n{"name": "final_answer", "arguments": {"trigger": true}', [],
         diagnostic="was never closed with </tool_call>, so it did not run"),
]

SIMPLE = "get_weather(city='San Francisco', metric='celsius')"
SIMPLE_ARGS = {"city": "San Francisco", "metric": "celsius"}
MORE_TYPES = ("register_user(name='John Doe', age=37, address={'city': 'San Francisco', "
              "'state': 'CA'}, role=None, passed_test=True, aliases=['John', 'Johnny'])")
MORE_TYPES_ARGS = {"name": "John Doe", "age": 37,
                   "address": {"city": "San Francisco", "state": "CA"}, "role": None,
                   "passed_test": True, "aliases": ["John", "Johnny"]}
PYTHONIC_CASES = [
    Case("no_tool_call", PYTHONIC, "pythonic", "How can I help you today?", []),
    Case("simple", PYTHONIC, "pythonic", f"[{SIMPLE}]", [("get_weather", SIMPLE_ARGS)]),
    Case("more_types", PYTHONIC, "pythonic", f"[{MORE_TYPES}]",
         [("register_user", MORE_TYPES_ARGS)]),
    Case("parameterless", PYTHONIC, "pythonic", "[get_weather()]", [("get_weather", {})]),
    Case("empty_dict", PYTHONIC, "pythonic", "[do_something_cool(additional_data={})]",
         [("do_something_cool", {"additional_data": {}})]),
    Case("empty_list", PYTHONIC, "pythonic", "[do_something_cool(steps=[])]",
         [("do_something_cool", {"steps": []})]),
    Case("escaped_string", PYTHONIC, "pythonic",
         r"""[get_weather(city='Martha\'s Vineyard', metric='\"cool units\"')]""",
         [("get_weather", {"city": "Martha's Vineyard", "metric": '"cool units"'})]),
    Case("parallel_calls", PYTHONIC, "pythonic", f"[{SIMPLE}, {MORE_TYPES}]",
         [("get_weather", SIMPLE_ARGS), ("register_user", MORE_TYPES_ARGS)]),
    Case("streaming_tool_call_with_large_steps", PYTHONIC, "pythonic",
         f"[{SIMPLE}, get_weather(), do_something_cool(steps=[])]",
         [("get_weather", SIMPLE_ARGS), ("get_weather", {}), ("do_something_cool", {"steps": []})],
         chunks=["[get_weather(city='San", " Francisco', metric='celsius'), "
                 "get_weather(), do_something_cool(steps=[])]"]),
    Case("regex_timeout_handling", PYTHONIC, "pythonic",
         "hello world[A(A=" + "\t)A(A=,\t" * 2, []),
    Case("malformed_sibling", PYTHONIC_PARSER, "pythonic",
         f"[{SIMPLE}, shell(command=os.getcwd()), get_weather()]", [],
         differs="vLLM drops the whole list when one element cannot be read (and logs it); "
         "fencecall runs the good calls, as it runs the good one of two <tool_call> tags, and "
         "tells the model which call did not run",
         ours=[("get_weather", SIMPLE_ARGS), ("get_weather", {})],
         diagnostic="The shell(…) call on line 1 passes command=os.getcwd() to shell, which is "
         "not a literal"),
    Case("sibling_that_does_not_parse", PYTHONIC_PARSER, "pythonic",
         f"[{SIMPLE}, shell(command=), get_weather()]", [],
         differs="as above, for an element that is not valid Python: the list is split at its "
         "top-level commas and each element read alone",
         ours=[("get_weather", SIMPLE_ARGS), ("get_weather", {})],
         diagnostic="The shell(…) call on line 1 is not valid Python (invalid syntax"),
    Case("positional_argument", PYTHONIC_PARSER, "pythonic", f"[{SIMPLE}, shell('ls -la')]",
         [("get_weather", SIMPLE_ARGS), ("shell", {})],
         differs="vLLM drops positional arguments in silence, so shell would run without its "
         "command; fencecall does not run that call and asks for NAME=VALUE",
         ours=[("get_weather", SIMPLE_ARGS)],
         diagnostic="passes a positional argument to shell ('ls -la')"),
    Case("argument_set_twice", PYTHONIC_PARSER, "pythonic", "[shell(command='ls', command='rm')]",
         [("shell", {"command": "rm"})],
         differs="vLLM keeps the last of two values in silence; fencecall runs neither",
         ours=[], diagnostic="The shell(…) call on line 1 sets command twice"),
    Case("dotted_name", PYTHONIC_PARSER, "pythonic", "[mcp.fetch(url='https://x.org')]", [],
         differs="vLLM accepts only plain names and drops the list; fencecall reads dotted "
                 "names, as MCP tools are named",
         ours=[("mcp.fetch", {"url": "https://x.org"})]),
]

NOT_A_LITERAL = "which is not a literal; values must be strings, numbers"
TOO_LARGE = "passes x=1e309 to calc, which is too large to be a number"
MISMATCHED = ("The foo(…) call on line 1 is not valid Python (closing parenthesis ']' does not "
              "match opening parenthesis '(')")
UNESCAPED = ("is not valid Python (unterminated string literal); a quote inside a string must "
             "be escaped")
SIBLING_CASES = [
    Case("bad_sibling_call_does_not_drop_good_calls", PYTHONIC_SIBLINGS, "pythonic",
         f"[bad(x=b'z'), {SIMPLE}]", [("get_weather", SIMPLE_ARGS)],
         diagnostic=f"The bad(…) call on line 1 passes x=b'z' to bad, {NOT_A_LITERAL}"),
    Case("non_finite_argument_rejected", PYTHONIC_SIBLINGS, "pythonic",
         f"[calc(x=1e999), {SIMPLE}]", [("get_weather", SIMPLE_ARGS)],
         diagnostic=f"The calc(…) call on line 1 {TOO_LARGE}"),
    Case("good_call_survives_unparsable_sibling", PYTHONIC_SIBLINGS, "pythonic",
         f"[{SIMPLE}, f(a='x 'y', b='z')]", [("get_weather", SIMPLE_ARGS)],
         diagnostic=f"The f(…) call on line 1 {UNESCAPED}"),
    Case("unrecoverable_block_still_reports_no_tool_call", PYTHONIC_SIBLINGS, "pythonic",
         "[f(a='x 'y' 'z), g(b='p 'q' 'r)]", [],
         diagnostic=("The f(…) call on line 1 is not valid Python (invalid syntax",
                     "The g(…) call on line 1 is not valid Python (invalid syntax")),
    Case("streaming_mismatched_brackets_reported_once", PYTHONIC_SIBLINGS, "pythonic",
         "[foo(x=1])]", [], diagnostic=MISMATCHED),
]

LA = "get_weather(city='LA', metric='C')"
LA_ARGS = {"city": "LA", "metric": "C"}
LA_AND_DOE: list[tuple[str, Args]] = [("get_weather", LA_ARGS),
                                       ("register_user", {"name": "Doe", "age": 9})]
MORE_TYPES_LA = ("register_user(name='Doe', age=9, address={'city': 'LA', 'state': 'CA'}, "
                 "role=None, passed_test=True, aliases=['John', 'Johnny'])")
LARGE_STEPS = ("<|python_start|>[get_weather(city='LA', metric='C'), get_weather(), "
               "do_something_cool(steps=[])]<|python_end|>")
LLAMA4_CASES = [
    Case("llama4_simple", LLAMA4, "pythonic", f"[{LA}]", [("get_weather", LA_ARGS)]),
    Case("llama4_more_types", LLAMA4, "pythonic", f"[{MORE_TYPES_LA}]",
         [("register_user", {"name": "Doe", "age": 9, "address": {"city": "LA", "state": "CA"},
                             "role": None, "passed_test": True,
                             "aliases": ["John", "Johnny"]})]),
    Case("llama4_parallel_calls", LLAMA4, "pythonic",
         "[get_weather(city='LA',metric='C'),register_user(name='Doe',age=9)]", LA_AND_DOE),
    Case("llama4_python_tag", LLAMA4, "pythonic", f"<|python_start|>[{LA}]<|python_end|>",
         [("get_weather", LA_ARGS)]),
    Case("llama4_python_tag_parallel_calls_streaming", LLAMA4, "pythonic",
         f"<|python_start|>[{LA},register_user(name='Doe', age=9)]", LA_AND_DOE),
    Case("llama4_python_tag_parallel_calls_nonstreaming", LLAMA4, "pythonic",
         f"<|python_start|>[{LA}, register_user(name='Doe', age=9)]", LA_AND_DOE),
    Case("llama4_streaming_tool_call_with_large_steps", LLAMA4, "pythonic", LARGE_STEPS,
         [("get_weather", LA_ARGS), ("get_weather", {}), ("do_something_cool", {"steps": []})],
         chunks=[LARGE_STEPS]),
    Case("llama4_bad_sibling_call_does_not_drop_good_calls", LLAMA4, "pythonic",
         f"<|python_start|>[bad(x=b'z'), {LA}]<|python_end|>", [("get_weather", LA_ARGS)],
         diagnostic=f"The bad(…) call on line 1 passes x=b'z' to bad, {NOT_A_LITERAL}"),
    Case("llama4_non_finite_argument_rejected", LLAMA4, "pythonic",
         f"<|python_start|>[calc(x=1e999), {LA}]<|python_end|>", [("get_weather", LA_ARGS)],
         diagnostic=f"The calc(…) call on line 1 {TOO_LARGE}"),
    Case("llama4_streaming_mismatched_brackets_reported_once", LLAMA4, "pythonic",
         "<|python_start|>[foo(x=1])]<|python_end|>", [], diagnostic=MISMATCHED),
    Case("llama4_python_end_on_the_next_line", LLAMA4_PARSER, "pythonic",
         f"<|python_start|>[{LA}]\n<|python_end|>", [("get_weather", LA_ARGS)]),
    Case("llama4_list_on_the_line_after_python_start", LLAMA4_PARSER, "pythonic",
         f"<|python_start|>\n[{LA}]\n<|python_end|>", [],
         differs="vLLM matches its list pattern right after the token, so a line break there "
         "makes the reply text; fencecall reads a list at the start of any line",
         ours=[("get_weather", LA_ARGS)]),
    Case("llama4_python_start_after_text", LLAMA4_PARSER, "pythonic",
         f"Let me check. <|python_start|>[{LA}]<|python_end|>", []),
]

CASES = QWEN_CASES + HERMES_CASES + PYTHONIC_CASES + SIBLING_CASES + LLAMA4_CASES
_CALL_LIKE = re.compile(r"<tool_call>|<function=|^[ \t]*(?:<\|python_start\|>[ \t]*)?\[[ \t]*"
                        r"[A-Za-z_][\w.]*[ \t]*\(", re.MULTILINE)


def _typed(call: ToolCall, tools: Mapping[str, Schema]) -> Args:
    """The call's arguments as its tool binds them: typed by the tool's schema, if given."""
    schema = tools.get(call.name)
    if schema is None:
        return dict(call.kwargs)
    parameters = [Parameter(name, _param_type(prop), required=False)
                  for name, prop in schema.items()]
    try:
        return validate(call.name, parameters, call.kwargs)
    except ArgumentError as err:
        return Refused(str(err))


def _same(got: Sequence[tuple[str, Args]], expected: Sequence[tuple[str, Args]]) -> bool:
    if [name for name, _ in got] != [name for name, _ in expected]:
        return False
    for (_, args), (_, want) in zip(got, expected, strict=True):
        if isinstance(want, Refused):
            if not (isinstance(args, Refused) and want.text in args.text):
                return False
        elif args != want:
            return False
    return True


def streamed(text: str, fmt: str, chunks: Sequence[str]) -> tuple[list[ToolCall],
                                                                   list[Diagnostic]]:
    parser = StreamParser(fmt)
    calls = [call for chunk in chunks for call in parser.feed(chunk)]
    return calls + parser.finish(), parser.diagnostics


def _sized(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


@pytest.mark.parametrize("case", CASES, ids=[f"{c.fmt}-{c.id}" for c in CASES])
def test_vllm_case(case: Case) -> None:
    parsed = parse(case.text, case.fmt)
    got = [(call.name, _typed(call, case.tools)) for call in parsed.calls]
    assert _same(got, case.ours if case.differs else case.calls), got
    parts = (case.diagnostic,) if isinstance(case.diagnostic, str) else case.diagnostic
    messages = [diagnostic.message for diagnostic in parsed.diagnostics]
    assert len(messages) == len([part for part in parts if part]), messages
    for part, message in zip(parts, messages, strict=False):
        assert part in message
    if len(parsed.calls) < len(case.calls) or (_CALL_LIKE.search(case.text)
                                                and not parsed.calls):
        assert parsed.diagnostics, "a call that does not run is never silent"
    whole = (parsed.calls, parsed.diagnostics)
    for chunks in (case.chunks, *(_sized(case.text, n) for n in (1, 3, 8))):
        if chunks:
            assert streamed(case.text, case.fmt, chunks) == whole


@pytest.mark.parametrize("case", KNOWN_GAPS, ids=[c.id for c in KNOWN_GAPS])
@pytest.mark.xfail(strict=True, reason=SCANNER_TAG_RULE)
def test_vllm_case_needing_a_scanner_change(case: Case) -> None:
    got = [(call.name, _typed(call, case.tools)) for call in parse(case.text, case.fmt).calls]
    assert _same(got, case.calls), got


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(CASES + KNOWN_GAPS), min_size=1, max_size=3),
       st.sampled_from(["\n", "\nSome prose.\n", "\n\n"]),
       st.lists(st.integers(min_value=0), max_size=12),
       st.sampled_from(["qwen3-coder", "hermes", "pythonic", "auto"]))
def test_cases_streamed_in_any_chunks_read_as_whole(cases: list[Case], glue: str,
                                                    cuts: list[int], fmt: str) -> None:
    text = glue.join(case.text for case in cases)
    points = sorted({cut % (len(text) + 1) for cut in cuts})
    chunks = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    parsed = parse(text, fmt)
    assert streamed(text, fmt, chunks) == (parsed.calls, parsed.diagnostics)


# -- real replies --------------------------------------------------------------------------

REPLIES = Path("/work/shared/real-replies/replies.jsonl")
_EDITOR_ARGS = ("command", "path", "file_text", "view_range", "old_str", "new_str",
                "insert_line")
"""str_replace_editor's arguments in the order of SWE-agent's command line (the first two
positional)."""


def _swe_agent_action(call: ToolCall) -> str:
    """The command line SWE-agent's ``XMLFunctionCallingParser`` makes of a call (its
    ``sweagent/tools/parsing.py``): each value stripped, shell-quoted unless it is bash's
    command, a view range as its two numbers."""
    values = {key: str(value).strip() for key, value in call.kwargs.items()}
    if call.name in ("bash", "submit"):
        return values.get("command", call.name)
    words = [call.name]
    for i, key in enumerate(_EDITOR_ARGS):
        value = values.get(key)
        if value is None:
            words.append("")
            continue
        if key == "view_range":
            value = " ".join(map(str, json.loads(value)))
        elif key != "insert_line":
            value = shlex.quote(value)
        words.append(value if i < 2 else f"--{key} {value}")
    return " ".join(words).strip()


@pytest.mark.skipif(not REPLIES.exists(), reason="the real replies are not here")
def test_real_qwen_replies_run_what_swe_agent_ran() -> None:
    """SWE-agent-LM-32B (a Qwen 2.5 Coder fine-tune) writes bare ``<function=…>`` calls.
    For each reply, the one call fencecall reads must be the action SWE-agent ran (``ref``).
    qwen3-coder reads all 1,311 so; auto 1,294, as 17 replies quote a ```python block before
    their call and auto takes a reply to be written in the syntax of its first call."""
    with REPLIES.open(encoding="utf-8") as file:
        replies = [r for r in map(json.loads, file) if r["family"] == "qwen"]
    assert len(replies) == 1311
    for fmt, floor in (("qwen3-coder", 1.0), ("auto", 0.98)):
        same = 0
        for reply in replies:
            parsed = parse(reply["text"], fmt)
            ref = reply["ref"]
            if "<function=" in reply["text"]:
                assert parsed.calls or parsed.diagnostics, "silent"
            if [c.name for c in parsed.calls] == [ref["function"]]:
                same += _swe_agent_action(parsed.calls[0]) == ref["action"]
        assert same / len(replies) >= floor, (fmt, same)
