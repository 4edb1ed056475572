"""Each provider owns its wire schema, built from the tools' one neutral schema."""

from __future__ import annotations

from fencecall.providers._anthropic_provider import anthropic_tool
from fencecall.providers._openai_provider import DESCRIPTION_LIMIT, openai_tool
from fencecall.tools import ToolSpec

from ..sample_tools import ADD


def test_vendor_schemas_come_from_the_neutral_one() -> None:
    neutral = ADD.function_schema("tool")
    assert openai_tool(neutral) == {"type": "function", "function": neutral}
    assert anthropic_tool(neutral) == {"name": "add", "description": "Add two integers.",
                                       "input_schema": neutral["parameters"]}


def test_openai_descriptions_are_cut_to_its_limit() -> None:
    wordy = ToolSpec("wordy", "x" * 5000)
    entry = openai_tool(wordy.function_schema("tool"))
    assert len(entry["function"]["description"]) == DESCRIPTION_LIMIT
    assert len(anthropic_tool(wordy.function_schema("tool"))["description"]) == 5000
