"""The agent loop on an event loop (``asend``): the same steps as ``send``, replies read on
the loop, blocking work in threads, and a cancel that stops a reply and still bills it."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Generator
from pathlib import Path

import pytest

from fencecall.accounting import Billing, Exactness, Pricing, ServerCounter, Spend
from fencecall.agent import Agent, AgentSettings, Conversation
from fencecall.agent.offload import DaemonThreads
from fencecall.execution import Session, auto_yes
from fencecall.message import Outcome
from fencecall.providers import ChatRequest, ScriptedProvider, StreamEvent, has_astream
from fencecall.providers._openai_provider import OpenAIProvider
from fencecall.providers.base import wire_texts
from fencecall.tools import Toolchain
from tests.fakeserver import FakeModelServer, Reply

from ..support import F

MARKDOWN = AgentSettings(fmt="markdown")
SCRIPT = [f"Look:\n{F}shell\necho hi > a.txt\n{F}\n", f"{F}save b.txt\nbee\n{F}\n",
          "All done."]


def session_in(folder: Path) -> Session:
    folder.mkdir()
    return Session(Toolchain.build(["shell", "save"]), workspace=folder, confirm=auto_yes)


def transcript(agent: Agent) -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in agent.conversation.messages]


class SyncOnly:
    """A provider that can only stream synchronously (a plug-in's, say)."""

    def __init__(self, inner: ScriptedProvider):
        self._inner, self.name, self.url = inner, inner.name, inner.url

    def stream(self, request: ChatRequest) -> Generator[StreamEvent, None, None]:
        return self._inner.stream(request)


@pytest.mark.parametrize("asynchronous", [True, False], ids=["astream", "stream-in-thread"])
def test_asend_takes_the_same_steps_as_send(tmp_path: Path, asynchronous: bool) -> None:
    with session_in(tmp_path / "sync") as sync_session:
        sync = Agent(ScriptedProvider(SCRIPT), "m", sync_session, settings=MARKDOWN)
        assert sync.send("go") is Outcome.DONE
    scripted = ScriptedProvider(SCRIPT)
    provider = scripted if asynchronous else SyncOnly(scripted)
    assert has_astream(provider) is asynchronous
    with session_in(tmp_path / "async") as async_session:
        agent = Agent(provider, "m", async_session,
                      Conversation.create(tmp_path / "log", "async"), MARKDOWN)
        result = asyncio.run(agent.arun("go"))
    assert result.outcome is Outcome.DONE and result.answer == "All done."
    assert transcript(agent) == transcript(sync)
    assert (tmp_path / "async" / "a.txt").read_text() == "hi\n"
    assert (tmp_path / "async" / "b.txt").read_text() == "bee\n"
    agent.conversation.close()
    logged = Conversation.open(tmp_path / "log", "async")
    assert logged.messages == agent.conversation.messages


class SlowCounter:
    """A tokenizer that takes its time (a server's), and says where it was asked."""

    exactness: Exactness = "tokenizer"

    def __init__(self) -> None:
        self.threads: set[int] = set()

    def count(self, text: str) -> int:
        self.threads.add(threading.get_ident())
        time.sleep(0.01)
        return len(text) // 4 + 1


def test_counting_a_reply_cut_at_its_call_does_not_block_the_event_loop(
        tmp_path: Path) -> None:
    counter = SlowCounter()
    with session_in(tmp_path / "w") as session:
        agent = Agent(ScriptedProvider(SCRIPT), "m", session, settings=MARKDOWN, counter=counter)

        async def run() -> tuple[Outcome, int]:
            return await agent.asend("go"), threading.get_ident()

        outcome, loop_thread = asyncio.run(run())
    assert outcome is Outcome.DONE
    assert counter.threads and loop_thread not in counter.threads
    cut = agent.conversation.messages[1].reply
    assert cut is not None and cut.counted == "tokenizer"  # the scripted reply has no usage


def test_cancelling_asend_stops_the_reply_at_once_and_bills_what_came(tmp_path: Path) -> None:
    slow = Reply("word " * 400, chunk_size=5, delay=0.02)
    with FakeModelServer([slow], keep_alive=True) as server, \
            session_in(tmp_path / "w") as session:
        provider = OpenAIProvider(api_key=None, base_url=server.openai_url, max_retries=0)
        agent = Agent(provider, "m", session, settings=MARKDOWN)

        async def run() -> float:
            asked = asyncio.ensure_future(agent.asend("talk"))
            await asyncio.sleep(0.5)
            asked.cancel()
            cancelled = time.monotonic()
            with pytest.raises(asyncio.CancelledError):
                await asked
            waited = time.monotonic() - cancelled
            await provider.aclose()
            return waited

        waited = asyncio.run(run())
        assert waited < 0.3
        for _ in range(100):  # the server sees the client leave
            if server.requests[0].disconnected:
                break
            time.sleep(0.02)
        assert server.requests[0].disconnected
        assert 0 < server.requests[0].chunks_sent < server.requests[0].chunks_total
    assert agent.billing.spend.tokens > 0  # the request cost, though no reply was recorded


def test_the_daemon_pool_reuses_its_threads_and_never_holds_the_exit() -> None:
    pool = DaemonThreads(2, "t")
    names = {pool.submit(lambda: (threading.current_thread().name,
                                  threading.current_thread().daemon)).result()
             for _ in range(20)}
    assert names <= {("t-0", True), ("t-1", True)}
    release, started = threading.Event(), threading.Semaphore(0)

    def hold() -> bool:
        started.release()
        return release.wait()

    busy = [pool.submit(hold) for _ in range(2)]
    assert started.acquire(timeout=5) and started.acquire(timeout=5)
    queued = pool.submit(lambda: "ran")
    pool.shutdown(wait=False, cancel_futures=True)
    assert queued.cancelled()
    release.set()
    assert all(future.result(timeout=5) for future in busy)
    with pytest.raises(RuntimeError, match="after shutdown"):
        pool.submit(lambda: None)
    with pytest.raises(ZeroDivisionError):
        DaemonThreads(1).submit(lambda: 1 / 0).result(timeout=5)


def test_a_server_counter_that_fell_back_to_the_estimate_counts_on_the_loop() -> None:
    """A tokenizer server that gave no count is not asked again: counting is the estimate's
    arithmetic then, done at once rather than in a worker thread."""
    counter = ServerCounter("http://127.0.0.1:9", "m", timeout=0.5)
    billing = Billing(Spend(Pricing("m", "p", None)), counter, wire_texts)
    assert billing.counts_slowly
    counter.count("hello")  # the server does not answer: the estimate from now on
    assert counter.exactness == "estimate" and not billing.counts_slowly
