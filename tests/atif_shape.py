"""ATIF-v1.8's rules as structural checks, for the suite to run without Harbor: each
object's fields (none but these), the ones required, step ids from 1, agent-only fields on
agent steps alone, and every result's ``source_call_id`` naming a call of its step. Written
from Harbor's models (Apache-2.0), not copied from them; ``tests/harbor.py`` runs the models
themselves."""

from __future__ import annotations

import math
from typing import Any

FIELDS = {
    "trajectory": ({"schema_version", "agent", "steps"},
                   {"session_id", "trajectory_id", "notes", "final_metrics",
                    "continued_trajectory_ref", "extra", "subagent_trajectories"}),
    "agent": ({"name", "version"}, {"model_name", "tool_definitions", "extra"}),
    "step": ({"step_id", "source", "message"},
             {"timestamp", "model_name", "reasoning_effort", "reasoning_content",
              "tool_calls", "observation", "metrics", "is_copied_context", "llm_call_count",
              "extra"}),
    "tool_call": ({"tool_call_id", "function_name", "arguments"}, {"extra"}),
    "observation": ({"results"}, set()),
    "result": (set(), {"source_call_id", "content", "subagent_trajectory_ref", "extra"}),
    "metrics": (set(), {"prompt_tokens", "completion_tokens", "cached_tokens", "cost_usd",
                        "prompt_token_ids", "completion_token_ids", "logprobs", "extra"}),
    "final_metrics": (set(), {"total_prompt_tokens", "total_completion_tokens",
                              "total_cached_tokens", "total_cost_usd", "total_steps",
                              "extra"}),
}
AGENT_ONLY = {"model_name", "reasoning_effort", "reasoning_content", "tool_calls", "metrics"}


def _fits(kind: str, value: Any) -> None:
    required, optional = FIELDS[kind]
    assert isinstance(value, dict), (kind, value)
    assert required <= value.keys(), (kind, required - value.keys())
    assert value.keys() <= required | optional, (kind, value.keys() - required - optional)


def check_shape(doc: dict[str, Any]) -> None:
    """Fail where ``doc`` breaks a rule of ATIF-v1.8 that Harbor's models enforce."""
    _fits("trajectory", doc)
    assert doc["schema_version"] == "ATIF-v1.8"
    _fits("agent", doc["agent"])
    assert doc["steps"], "ATIF wants at least one step"
    for number, step in enumerate(doc["steps"], 1):
        _fits("step", step)
        assert step["step_id"] == number and step["source"] in ("system", "user", "agent")
        assert isinstance(step["message"], str)
        if step["source"] != "agent":
            assert not AGENT_ONLY & step.keys(), step
        ids = set()
        for call in step.get("tool_calls") or ():
            _fits("tool_call", call)
            assert isinstance(call["arguments"], dict)
            ids.add(call["tool_call_id"])
        if "observation" in step:
            _fits("observation", step["observation"])
            for result in step["observation"]["results"]:
                _fits("result", result)
                assert result.get("source_call_id") in ids | {None}, result
        if "metrics" in step:
            _fits("metrics", step["metrics"])
            assert all(math.isfinite(p) for p in step["metrics"].get("logprobs", ()))
    if "final_metrics" in doc:
        _fits("final_metrics", doc["final_metrics"])
