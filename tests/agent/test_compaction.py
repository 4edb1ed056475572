"""Long sessions against a real local server that enforces its window (HTTP 400, "maximum
context length", as vLLM and OpenAI answer) with a tokenizer denser than three characters a
token: requests never overflow, the task is in every one, a request's messages are a prefix
of the next one's except across a compaction, and each compaction asks one summary on the
prefix the previous request had (so it reads the prompt cache)."""

from __future__ import annotations

import json
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from fencecall import Agent, AgentSettings, Outcome, Session, Toolchain, auto_yes
from fencecall.accounting import ServerCounter
from fencecall.accounting.tokens import server_root
from fencecall.agent._context import SUMMARY_REQUEST, ContextOverflow, is_compaction, view
from fencecall.agent.conversation import Conversation
from fencecall.message import Compacted, Message
from fencecall.providers._openai_provider import OpenAIProvider

from ..fakeserver import FakeModelServer, Reply, Served, dense_tokens
from ..support import F

TASK = "Print the numbers in chunks with seq, one chunk a step. Rule: never use python."
WINDOW = 4096
SUMMARY = "Summary: the task is to print numbers with seq, never python; {n} chunks printed."


def _last_user_text(body: dict[str, Any]) -> str:
    users = [m for m in body["messages"] if m["role"] == "user"]
    content = users[-1]["content"] if users else ""
    return content if isinstance(content, str) else json.dumps(content)


def scripted(steps: int, summary: Callable[[int], Reply] | None = None) -> Callable[
        [dict[str, Any]], Reply]:
    """A model that runs ``steps`` shell calls with large outputs, then answers; asked for a
    summary, it writes one (or what ``summary`` says)."""
    done = [0]

    def respond(body: dict[str, Any]) -> Reply:
        if SUMMARY_REQUEST in _last_user_text(body):
            return summary(done[0]) if summary else Reply(SUMMARY.format(n=done[0]))
        done[0] += 1
        if done[0] > steps:
            return Reply("All chunks are printed.")
        start = done[0] * 10_000
        return Reply(f"Chunk {done[0]}.\n{F}shell\nseq {start} {start + 250}\n{F}\n")

    return respond


def run(tmp_path: Path, server: FakeModelServer, steps: int, tools: tuple[str, ...] = ("shell",),
        **options: Any) -> Agent:
    provider = OpenAIProvider(api_key=None, base_url=server.openai_url, name="local",
                              max_retries=0)
    # the window is tight and sized for these tools' prompt: the jobs tool, which comes with
    # the shell, is left out, so the prompt (and the compactions counted) stay as measured
    chain = Toolchain(tuple(spec for spec in Toolchain.build(list(tools)).tools
                            if spec.name != "jobs"))
    session = Session(chain, workspace=tmp_path, confirm=auto_yes, sandbox="off")
    conversation = Conversation(tmp_path / "log")
    settings = AgentSettings(max_steps=steps + 5, max_tokens=512, context_window=WINDOW,
                             **options)
    agent = Agent(provider, "m", session, conversation, settings,
                  counter=ServerCounter(server_root(server.openai_url), "m"))
    agent.outcome = agent.send(TASK)  # type: ignore[attr-defined]
    session.close()
    return agent


def _logged(agent: Agent) -> int:
    """Every token the log records as billed: replies' and summaries' usage."""
    return sum(m.reply.usage.all_input + m.reply.usage.output_tokens
               for m in agent.conversation.messages
               if m.reply is not None and m.reply.usage is not None)


def _is_summary(served: Served) -> bool:
    return SUMMARY_REQUEST in _last_user_text(served.body)


def _messages(served: Served) -> list[Any]:
    return list(served.body["messages"])


def test_a_long_session_stays_in_the_window_and_keeps_its_prefix(tmp_path: Path) -> None:
    steps = 60
    with FakeModelServer(respond=scripted(steps), tokenizer=dense_tokens,
                         window=WINDOW) as server:
        agent = run(tmp_path, server, steps)
    assert agent.outcome is Outcome.DONE  # type: ignore[attr-defined]
    assert server.over_window == []
    requests = server.requests
    main = [r for r in requests if not _is_summary(r)]
    summaries = [r for r in requests if _is_summary(r)]
    assert len(main) == steps + 1
    sent = sum(r.input_tokens for r in requests)
    assert sent > 4 * WINDOW  # the history is several times the window
    for request in requests:  # the task, in every request
        assert any(m["role"] == "user" and m["content"] == TASK for m in request.body["messages"])
    markers = [m for m in agent.conversation.messages if is_compaction(m)]
    assert len(markers) == len(summaries) >= 3
    assert len(markers) <= steps // 3  # compactions grow with the history, not per request
    # a request extends the one before it, except right after a compaction
    breaks = 0
    for before, after in pairwise(main):
        if _messages(after)[: len(_messages(before))] != _messages(before):
            breaks += 1
    assert breaks == len(markers)
    # each summary is asked on the previous request's prefix (the instruction appended)
    for index, request in enumerate(requests):
        if _is_summary(request):
            asked = _messages(request)[:-1]
            assert _messages(requests[index - 1])[: len(asked)] == asked
    # the log keeps every original message; the compaction says what it replaced
    log = Conversation(tmp_path / "log")
    assert sum(m.role == "assistant" for m in log.messages) == steps + 1
    assert isinstance(markers[-1].note, Compacted) and markers[-1].note.mode == "summary"
    assert markers[-1].reply is not None and markers[-1].reply.usage is not None
    assert view(log.messages) == view(agent.conversation.messages)
    # every request is in the log, summaries included (replies cut at their first call are
    # counted with the server's tokenizer, up to what the client read of them)
    assert abs(_logged(agent) - server.billed()) <= server.billed() // 100


def test_without_a_summary_the_older_exchanges_are_left_out_with_a_note(
        tmp_path: Path) -> None:
    steps = 20
    with FakeModelServer(respond=scripted(steps, lambda n: Reply(status=400)),
                         tokenizer=dense_tokens, window=WINDOW) as server:
        agent = run(tmp_path, server, steps)
    assert agent.outcome is Outcome.DONE  # type: ignore[attr-defined]
    assert server.over_window == []
    markers = [m for m in agent.conversation.messages if is_compaction(m)]
    assert markers and all(isinstance(m.note, Compacted) and m.note.mode == "drop" for m in markers)
    assert "earlier messages were left out" in markers[0].content


def test_an_empty_summary_is_left_out_but_its_cost_is_logged(tmp_path: Path) -> None:
    with FakeModelServer(respond=scripted(14, lambda n: Reply("  \n")),
                         tokenizer=dense_tokens, window=WINDOW) as server:
        agent = run(tmp_path, server, 14)
    markers = [m for m in agent.conversation.messages if is_compaction(m)]
    assert markers and all(isinstance(m.note, Compacted) and m.note.mode == "drop" for m in markers)
    assert any(_is_summary(r) for r in server.requests)
    assert abs(_logged(agent) - server.billed()) <= server.billed() // 100


def test_drop_mode_asks_no_summary(tmp_path: Path) -> None:
    steps = 12
    with FakeModelServer(respond=scripted(steps), tokenizer=dense_tokens,
                         window=WINDOW) as server:
        agent = run(tmp_path, server, steps, compaction="drop")
    assert not any(_is_summary(r) for r in server.requests)
    assert server.over_window == []
    assert any(is_compaction(m) for m in agent.conversation.messages)


def test_with_compaction_off_the_server_refuses_the_overflowing_request(
        tmp_path: Path) -> None:
    from fencecall.providers import ProviderError

    with FakeModelServer(respond=scripted(12), tokenizer=dense_tokens,
                         window=WINDOW) as server, pytest.raises(ProviderError,
                                                                 match="maximum context"):
        run(tmp_path, server, 12, compaction="off")
    assert server.over_window


def test_a_resumed_session_continues_from_the_compacted_state(tmp_path: Path) -> None:
    with FakeModelServer(respond=scripted(12), tokenizer=dense_tokens,
                         window=WINDOW) as server:
        run(tmp_path, server, 12)
        first = len(server.requests)
        resumed = Conversation(tmp_path / "log")
        assert any(is_compaction(m) for m in resumed.messages)
        agent = run(tmp_path / "again", server, 0)  # a fresh log: compare with the resumed
        provider = OpenAIProvider(api_key=None, base_url=server.openai_url, name="local")
        session = Session(Toolchain.build(["shell"]), workspace=tmp_path, confirm=auto_yes,
                          sandbox="off")
        again = Agent(provider, "m", session, resumed,
                      AgentSettings(max_tokens=512, context_window=WINDOW))
        again.send("One more chunk, then stop.")
        session.close()
        del agent
    request = server.requests[-1].body["messages"]
    assert any(m["content"].startswith("<system>\n[Summary of") for m in request
               if isinstance(m["content"], str))
    assert len(server.requests) > first


def test_what_cannot_fit_is_a_clear_error(tmp_path: Path) -> None:
    with FakeModelServer([Reply("x")], tokenizer=dense_tokens, window=WINDOW) as server:
        provider = OpenAIProvider(api_key=None, base_url=server.openai_url, name="local")
        session = Session(Toolchain.build(["shell"]), workspace=tmp_path, confirm=auto_yes,
                          sandbox="off")
        agent = Agent(provider, "m", session,
                      settings=AgentSettings(max_tokens=512, context_window=WINDOW))
        with pytest.raises(ContextOverflow, match="the task and the latest exchange"):
            agent.send("t " * 5000)
        session.close()
    assert server.requests == []


def test_the_view_of_a_log_replaces_what_a_compaction_covers() -> None:
    task = Message("user", "task")
    exchanges = [Message("assistant", f"reply {i}") if i % 2 == 0
                 else Message("system", f"result {i}") for i in range(6)]
    marker = Message("system", "[Summary of 4 earlier messages] s",
                     note=Compacted(kept=2, replaced=4, mode="summary"))
    later = Message("assistant", "later")
    assert view([task, *exchanges, marker, later]) == (task, marker, *exchanges[4:], later)
    assert view([task, *exchanges]) == (task, *exchanges)
    claims_more = Message("system", "s", note=Compacted(kept=99, replaced=1, mode="drop"))
    assert view([task, *exchanges[:2], claims_more]) == (task, claims_more, *exchanges[:2])


def test_a_huge_tool_result_goes_to_a_file_the_model_can_read(tmp_path: Path) -> None:
    import re

    asked: list[str] = []

    def respond(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]["content"]
        asked.append(last if isinstance(last, str) else "")
        if len(asked) == 1:
            return Reply(f"{F}shell\nseq 1 40000\n{F}\n")
        if len(asked) == 2:
            path = re.search(r"(/\S+outputs/\S+\.txt)", last)
            assert path is not None, last
            return Reply(f"{F}read {path.group(1)} 100 102\n{F}\n")
        return Reply("Found it.")

    with FakeModelServer(respond=respond, tokenizer=dense_tokens, window=WINDOW) as server:
        agent = run(tmp_path, server, 3, tools=("shell", "read"))
    assert server.over_window == []
    result = next(m for m in agent.conversation.messages if "spilled" in m.metadata)
    saved = Path(result.metadata["spilled"]["path"])
    assert saved.parent == tmp_path / "log" / "outputs"
    whole = saved.read_text()  # the result as the shell gave it, all of its output
    assert whole.startswith("Ran command: `seq 1 40000`") and whole.endswith("Exit code: 0")
    assert "".join(f"{n}\n" for n in range(1, 40001)) in whole
    assert result.content.startswith(whole[:40]) and "Exit code: 0" in result.content
    assert len(result.content) < len(whole) // 20
    lines = whole.splitlines()[99:102]
    assert "(lines 100-102 of" in asked[2]  # the read tool read the saved file
    assert all(f"{n}  {line}" in asked[2] for n, line in zip(range(100, 103), lines, strict=True))
