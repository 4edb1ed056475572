"""The hook points the agent fires around a turn: a prompt about to go to the model, and a
run about to end (which a stop hook may make go on, a few times at most)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from fencecall.agent import Agent, AgentSettings
from fencecall.agent._events import AgentEvent, ToolResult
from fencecall.agent._turn_hooks import STOP_CONTINUES
from fencecall.execution import Session, auto_yes
from fencecall.message import Outcome, Status
from fencecall.providers import ScriptedProvider
from fencecall.tools import Block, HookRegistry, Toolchain
from fencecall.tools.hook_points import PROMPT_SUBMIT, RUN_STOP, RunStop, UserPrompt

from ..support import F

T = TypeVar("T")


def agent_with(workspace: Path, hooks: HookRegistry, *replies: str,
               max_steps: int = 10) -> Agent:
    session = Session(Toolchain.build(["shell"]), workspace=workspace, confirm=auto_yes,
                      hooks=hooks)
    return Agent(ScriptedProvider(list(replies)), "m", session,
                 settings=AgentSettings(max_steps=max_steps))


def blocking(seen: list[T], reason: str) -> Callable[[T], Block]:
    """A hook that records what it is given and blocks."""
    def hook(data: T) -> Block:
        seen.append(data)
        return Block(reason)

    return hook


def send(agent: Agent, prompt: str, asynchronous: bool) -> Outcome:
    with agent.session:
        return asyncio.run(agent.asend(prompt)) if asynchronous else agent.send(prompt)


@pytest.mark.parametrize("asynchronous", [False, True], ids=["send", "asend"])
def test_a_blocked_prompt_never_reaches_the_model(workspace: Path, asynchronous: bool) -> None:
    hooks = HookRegistry()
    seen: list[UserPrompt] = []
    hooks.add(PROMPT_SUBMIT, blocking(seen, "not today"))
    agent = agent_with(workspace, hooks, "never asked")
    shown: list[AgentEvent] = []
    agent._emit = shown.append
    assert send(agent, "hello", asynchronous) is Outcome.ERROR
    assert [data.prompt for data in seen] == ["hello"] and seen[0].session_id is None
    assert agent.conversation.messages == []
    [event] = shown
    assert isinstance(event, ToolResult)
    assert "not today" in event.message.content and event.message.status is Status.BLOCKED


@pytest.mark.parametrize("asynchronous", [False, True], ids=["send", "asend"])
def test_a_stop_hook_goes_on_a_few_times_at_most(workspace: Path, asynchronous: bool) -> None:
    hooks = HookRegistry()
    stops: list[RunStop] = []
    hooks.add(RUN_STOP, blocking(stops, "keep going"))
    hooks.add(PROMPT_SUBMIT, lambda data: "said with the prompt")
    agent = agent_with(workspace, hooks, *(f"answer {n}" for n in range(10)))
    assert send(agent, "go", asynchronous) is Outcome.DONE
    assert [stop.continued for stop in stops] == list(range(STOP_CONTINUES + 1))
    contents = [m.content for m in agent.conversation.messages]
    assert contents[:3] == ["go", "said with the prompt", "answer 0"]
    assert contents.count("keep going") == STOP_CONTINUES
    assert f"answer {STOP_CONTINUES}" in contents and "on 5 times" in contents[-1]


def test_a_run_at_a_limit_is_told_to_the_stop_hooks_but_ends(workspace: Path) -> None:
    hooks = HookRegistry()
    stops: list[RunStop] = []
    hooks.add(RUN_STOP, blocking(stops, "keep going"))
    shell = f"{F}shell\necho again\n{F}\n"
    agent = agent_with(workspace, hooks, shell, shell, shell, max_steps=2)
    assert send(agent, "go", False) is Outcome.STEP_LIMIT
    [stop] = stops
    assert stop.outcome is Outcome.STEP_LIMIT and "step limit" in stop.reason
    assert "keep going" not in [m.content for m in agent.conversation.messages]
