"""The values the parsers make: a call without named arguments shares one empty mapping."""

from __future__ import annotations

import copy
import dataclasses
import pickle

from fencecall import parse_calls
from fencecall.parsing.model import NO_ARGUMENTS, ToolCall


def test_calls_without_named_arguments_share_one_empty_mapping() -> None:
    calls = parse_calls("```shell\nls\n```\n```save a.txt\nhi\n```\n")
    assert [call.kwargs for call in calls] == [{}, {}]
    assert all(call.kwargs is NO_ARGUMENTS for call in calls)
    assert ToolCall("x") == ToolCall("x", kwargs={}) == ToolCall("x")  # either way round
    assert not NO_ARGUMENTS and dict(NO_ARGUMENTS) == {} and repr(ToolCall("x").kwargs) == "{}"


def test_a_call_pickles_and_copies_with_it() -> None:
    call = ToolCall("shell", content="ls")
    for twin in (pickle.loads(pickle.dumps(call)), copy.deepcopy(call), copy.copy(call)):
        assert twin == call and twin.kwargs is NO_ARGUMENTS
    assert dataclasses.asdict(call)["kwargs"] == {}
