"""The values the parsers make: a call without named arguments shares one empty mapping,
and every value pickles, copies and stays frozen, compiled or not."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest

from fencecall.parsing import parse_calls
from fencecall.parsing._no_arguments import NO_ARGUMENTS
from fencecall.parsing.model import Codeblock, Diagnostic, ToolCall


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


VALUES = [
    ToolCall("save", "a b.txt", "hi\n", {"mode": "x"}, "call_1", 3, "xml", 40),
    Codeblock("python", "print(1)\n", 7),
    Diagnostic("unclosed", "The ```shell block on line 2 was never closed.", 9, 2, "shell", True),
]


@pytest.mark.parametrize("value", VALUES, ids=lambda value: type(value).__name__)
def test_the_values_pickle_copy_and_stay_frozen(value: object) -> None:
    # compiled (see setup.py), a frozen class cannot unpickle through its own __setattr__
    for twin in (pickle.loads(pickle.dumps(value)), copy.deepcopy(value), copy.copy(value),
                 dataclasses.replace(value)):  # type: ignore[type-var]
        assert twin == value and repr(twin) == repr(value) and type(twin) is type(value)
    first = dataclasses.fields(value)[0].name  # type: ignore[arg-type]
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(value, first, "other")
    assert not hasattr(value, "__dict__")


def test_a_call_knows_where_it_ends_without_that_being_part_of_equality() -> None:
    call = ToolCall("shell", content="ls", end=12)
    assert call == ToolCall("shell", content="ls") and call.end == 12
    assert pickle.loads(pickle.dumps(call)).end == 12
