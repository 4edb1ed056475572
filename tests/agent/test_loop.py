"""The agent loop in-process, against the local server through the real OpenAI client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fencecall.agent import Agent, AgentEvent, Conversation, ReplyText
from fencecall.agent.loop import EventSink
from fencecall.execution import Session, auto_yes
from fencecall.parsing import ToolFormat
from fencecall.providers.openai_provider import OpenAIProvider
from fencecall.tools import Toolchain

from ..fakeserver import FakeModelServer, Reply


@pytest.fixture
def session(workspace: Path) -> Iterator[Session]:
    with Session(Toolchain.build(["shell", "save"]), workspace=workspace, confirm=auto_yes,
                 fmt=ToolFormat.TOOL) as session:
        yield session


def agent_for(server: FakeModelServer, session: Session, tmp_path: Path,
              on_event: EventSink | None = None) -> Agent:
    provider = OpenAIProvider(api_key=None, base_url=server.openai_url)
    return Agent(provider, "m", session, Conversation.create(tmp_path, "loop"),
                 on_event=on_event)


def test_ctrl_c_while_streaming_keeps_the_partial_reply(session: Session,
                                                        tmp_path: Path) -> None:
    seen: list[str] = []

    def sink(event: AgentEvent) -> None:
        if isinstance(event, ReplyText):
            seen.append(event.text)
            if len(seen) == 3:
                raise KeyboardInterrupt

    with FakeModelServer([Reply("A long answer that the user interrupts midway. " * 20,
                                chunk_size=5, delay=0.005)]) as server:
        agent = agent_for(server, session, tmp_path, sink)
        agent.send("talk")
    reply = agent.conversation.messages[-1]
    assert reply.role == "assistant"
    assert reply.content == "".join(seen) + "\n[interrupted by the user]"
    assert len(server.requests) == 1


def test_malformed_and_unknown_native_calls_are_answered(session: Session,
                                                         tmp_path: Path) -> None:
    calls: list[dict[str, Any]] = [{"id": "c1", "name": "shell", "arguments": "not json"},
             {"id": "c2", "name": "teleport", "arguments": {"to": "mars"}}]
    with FakeModelServer([Reply("", tool_calls=calls), Reply("Sorry.")]) as server:
        agent = agent_for(server, session, tmp_path)
        agent.send("go")
    results = [m for m in agent.conversation.messages if m.role == "system"]
    assert [m.call_id for m in results] == ["c1", "c2"]
    assert "unknown argument(s) 'arguments (not a JSON object)'" in results[0].content
    assert results[1].content.startswith("Unknown tool 'teleport'")
    tool_messages = [m for m in server.requests[1].body["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == ["c1", "c2"]
