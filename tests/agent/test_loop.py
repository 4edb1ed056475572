"""The agent loop in-process, against the scripted provider (no socket).

The providers' own wire code is tested over real HTTP in tests/cli and tests/providers.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fencecall.agent import (
    Agent,
    AgentEvent,
    AgentSettings,
    CallsFound,
    Conversation,
    ReplyDone,
    ReplyText,
    ToolResult,
)
from fencecall.agent._events import EventSink
from fencecall.execution import Session
from fencecall.message import Status
from fencecall.providers import NativeCall, ScriptedProvider, ScriptedReply
from fencecall.tools import Block
from fencecall.tools.hook_points import (
    MESSAGE_POST_PROCESS,
    MESSAGE_PRE_PROCESS,
    TOOL_PRE_EXECUTE,
    MessagePostProcess,
    MessagePreProcess,
    ToolPreExecute,
)

from ..support import F, tool_session

TOOLS = ["shell", "save"]
pytestmark = pytest.mark.session(TOOLS)


def agent_for(provider: ScriptedProvider, session: Session, tmp_path: Path, *,
              fmt: str = "tool", on_event: EventSink | None = None) -> Agent:
    return Agent(provider, "m", session, Conversation.create(tmp_path, "loop"),
                 AgentSettings(fmt=fmt), on_event=on_event)


def test_ctrl_c_while_streaming_keeps_the_partial_reply(session: Session,
                                                        tmp_path: Path) -> None:
    seen: list[str] = []

    def sink(event: AgentEvent) -> None:
        if isinstance(event, ReplyText):
            seen.append(event.text)
            if len(seen) == 3:
                raise KeyboardInterrupt

    provider = ScriptedProvider([ScriptedReply("A long answer, interrupted. " * 20,
                                               chunk_size=5)])
    agent = agent_for(provider, session, tmp_path, on_event=sink)
    agent.send("talk")
    reply = agent.conversation.messages[-1]
    assert reply.role == "assistant"
    assert reply.content == "".join(seen) + "\n[interrupted by the user]"
    assert provider.delivered == [3]


def test_malformed_and_unknown_native_calls_are_answered(session: Session,
                                                         tmp_path: Path) -> None:
    calls = (NativeCall("c1", "shell", "not json"),
             NativeCall("c2", "teleport", '{"to": "mars"}'))
    provider = ScriptedProvider([ScriptedReply(calls=calls), "Sorry."])
    agent = agent_for(provider, session, tmp_path)
    agent.send("go")
    results = [m for m in agent.conversation.messages if m.role == "system"]
    assert [m.call_id for m in results] == ["c1", "c2"]
    assert "unknown argument(s) 'arguments (not a JSON object)'" in results[0].content
    assert results[1].content.startswith("Unknown tool 'teleport'")
    [first, second] = provider.requests
    assert [t["name"] for t in first.tools] == ["shell", "jobs", "save"]
    assert [m.call_id for m in second.messages if m.role == "system"] == ["c1", "c2"]


def test_message_hooks_fire_in_a_chat(workspace: Path, tmp_path: Path) -> None:
    pre: list[str] = []
    post: list[tuple[str, int]] = []

    def before(data: MessagePreProcess) -> None:
        pre.append(data.message.content)

    def after(data: MessagePostProcess) -> str:
        post.append((data.message.content, len(data.results)))
        return "post-hook note"

    with tool_session(workspace, TOOLS) as session:
        session.hooks.add(MESSAGE_PRE_PROCESS, before)
        session.hooks.add(MESSAGE_POST_PROCESS, after)
        provider = ScriptedProvider([f"Saving.\n{F}save a.txt\nhi\n{F}\n", "Done."])
        agent = agent_for(provider, session, tmp_path, fmt="markdown")
        agent.send("save a file")
    call_reply = f"Saving.\n{F}save a.txt\nhi\n{F}\n"  # a file block is final at the end
    assert pre == [call_reply, "Done."]
    assert post == [(call_reply, 1), ("Done.", 0)]
    assert (workspace / "a.txt").read_text() == "hi\n"
    contents = [m.content for m in agent.conversation.messages]
    assert contents[-3:] == ["post-hook note", "Done.", "post-hook note"]


def test_a_blocking_message_hook_stops_the_calls_and_the_model_hears_why(
        workspace: Path, tmp_path: Path) -> None:
    with tool_session(workspace, TOOLS) as session:
        session.hooks.add(MESSAGE_PRE_PROCESS, _block_saves)
        provider = ScriptedProvider([f"{F}save a.txt\nhi\n{F}\n", "Understood."])
        agent = agent_for(provider, session, tmp_path, fmt="markdown")
        agent.send("save")
    assert not (workspace / "a.txt").exists()
    blocked = [m for m in agent.conversation.messages if m.status is Status.BLOCKED]
    assert [m.content for m in blocked] == ["The message's tool calls were not run: no saves"]
    assert "no saves" in provider.requests[1].messages[-1].content


def _block_saves(data: MessagePreProcess) -> Block | None:
    return Block("no saves") if "save" in data.message.content else None


def _send_streamed(text: str, workspace: Path,
                   tmp_path: Path) -> tuple[ReplyDone, ScriptedProvider, Agent]:
    """Send one prompt whose reply is ``text`` in 4-character chunks: the first reply's end,
    the provider and the agent."""
    done: list[ReplyDone] = []
    with tool_session(workspace, TOOLS) as session:
        provider = ScriptedProvider([ScriptedReply(text, chunk_size=4), "ok"])
        agent = agent_for(provider, session, tmp_path, fmt="markdown",
                          on_event=lambda e: done.append(e) if isinstance(e, ReplyDone) else None)
        agent.send("go")
    return done[0], provider, agent


def test_stream_stops_at_the_first_complete_call(workspace: Path, tmp_path: Path) -> None:
    text = f"{F}shell\necho one\n{F}\n{F}shell\necho two\n{F}\nand I made up the result\n"
    first, provider, agent = _send_streamed(text, workspace, tmp_path)
    assert first.stopped_early
    assert first.message.content == f"{F}shell\necho one\n{F}"
    assert provider.delivered[0] < len(text) // 4
    [result] = [m for m in agent.conversation.messages if m.role == "system"]
    assert "one" in result.content and "two" not in result.content


def test_a_save_block_followed_by_prose_cuts_the_stream_at_its_fence(workspace: Path,
                                                                    tmp_path: Path) -> None:
    """As for a shell block: the reply stored ends at the save call's closing fence, the
    made-up rest is never read, and the model gets the result with no error."""
    text = (f"{F}save a.py\nprint(1)\n{F}\nNow I run it.\n{F}shell\npython3 a.py\n{F}\n"
            "It printed 1.\n" + "More made-up text. " * 50)
    first, provider, agent = _send_streamed(text, workspace, tmp_path)
    assert first.stopped_early
    assert first.message.content == f"{F}save a.py\nprint(1)\n{F}"
    assert provider.delivered[0] < len(f"{F}save a.py\nprint(1)\n{F}\nNow") // 4 + 2
    assert (workspace / "a.py").read_text() == "print(1)\n"
    [result] = [m for m in agent.conversation.messages if m.role == "system"]
    assert "never closed" not in result.content and "a.py" in result.content


def test_a_broken_call_is_told_to_the_model_and_the_loop_goes_on(workspace: Path,
                                                                  tmp_path: Path) -> None:
    with tool_session(workspace, TOOLS) as session:
        provider = ScriptedProvider([f"{F}shell\necho unfinished\n", "Sorry, I forgot the fence."])
        agent = agent_for(provider, session, tmp_path, fmt="markdown")
        agent.send("go")
    [told] = [m for m in agent.conversation.messages if m.role == "system"]
    assert told.content.startswith(f"The {F}shell block opened on line 1 was never closed")
    assert told.content in provider.requests[1].messages[-1].content
    assert agent.conversation.messages[-1].content == "Sorry, I forgot the fence."


def test_pre_execute_hooks_read_the_conversation_so_far(workspace: Path, tmp_path: Path) -> None:
    seen: list[list[str]] = []

    def guard(data: ToolPreExecute) -> None:
        seen.append([m.content for m in data.history])

    with tool_session(workspace, TOOLS) as session:
        session.hooks.add(TOOL_PRE_EXECUTE, guard)
        provider = ScriptedProvider([f"{F}shell\necho hi\n{F}\n", "Done."])
        agent_for(provider, session, tmp_path, fmt="markdown").send("say hi")
        assert seen == [["say hi", f"{F}shell\necho hi\n{F}"]]
        list(session.execute(f"{F}shell\necho alone\n{F}\n"))  # a reply on its own
        assert seen[1:] == [[]]  # the agent hands its history over; the session keeps none


def test_the_calls_are_announced_before_their_results(session: Session,
                                                      tmp_path: Path) -> None:
    events: list[AgentEvent] = []
    calls = (NativeCall("c1", "shell", '{"command": "echo one"}'),
             NativeCall("c2", "teleport", '{"to": "mars"}'))
    provider = ScriptedProvider([ScriptedReply(calls=calls), "Done."])
    agent = agent_for(provider, session, tmp_path, on_event=events.append)
    agent.send("go")
    kinds = [type(event).__name__ for event in events if not isinstance(event, ReplyText)]
    assert kinds == ["ReplyDone", "CallsFound", "ToolResult", "ToolResult", "ReplyDone"]
    found = next(event for event in events if isinstance(event, CallsFound))
    assert [call.call_id for call in found.calls] == ["c1", "c2"]
    last_results = [event.message for event in events
                    if isinstance(event, ToolResult) and event.message.call is not None]
    assert [message.call_id for message in last_results] == ["c1", "c2"]
