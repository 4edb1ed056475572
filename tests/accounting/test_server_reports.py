"""Budgets hold against a server that lies, through the agent loop (``send`` and ``asend``)
with the real OpenAI provider over real HTTP: usage it gets wrong is not believed, and a reply
it will not stop is cut where the budget runs out, the run ending at the budget."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

from fencecall.accounting import Limits, Pricing, Spend
from fencecall.agent import Agent, AgentSettings
from fencecall.execution import Session
from fencecall.message import Outcome, Usage
from fencecall.providers._openai_provider import OpenAIProvider
from tests.fakeserver import FakeModelServer, Reply

TASK = "Write the report."
HUGE = " ".join(f"w{i}" for i in range(60_000))[:400_000]
"""400,000 characters that never repeat (so no loop guard stops them first)."""
PATHS = pytest.mark.parametrize("asynchronous", [False, True], ids=["send", "asend"])

pytestmark = pytest.mark.session(["shell", "save"])


def _agent(server: FakeModelServer, session: Session, budget: int, max_tokens: int) -> Agent:
    provider = OpenAIProvider(api_key=None, base_url=server.openai_url, max_retries=0)
    spend = Spend(Pricing("m", provider.name, provider.url), Limits(tokens=budget))
    return Agent(provider, "m", session, settings=AgentSettings(fmt="markdown",
                 max_tokens=max_tokens), spend=spend)


def _run(agent: Agent, asynchronous: bool) -> Outcome:
    if not asynchronous:
        return agent.send(TASK)

    async def run() -> Outcome:
        try:
            return await agent.asend(TASK)
        finally:
            provider = agent.provider
            assert isinstance(provider, OpenAIProvider)
            await provider.aclose()

    return asyncio.run(run())


def _first_worst_case(server: FakeModelServer, session: Session, max_tokens: int) -> int:
    """The first request's worst case as fencecall counts it (its input and ``max_tokens``):
    a budget of one token refuses it, saying how much it could take."""
    probe = _agent(server, session, 1, max_tokens)
    assert probe.send(TASK) is Outcome.BUDGET and server.requests == []
    found = re.search(r"could take ([\d,]+) tokens", probe.conversation.messages[-1].content)
    assert found is not None
    return int(found[1].replace(",", ""))


@PATHS
@pytest.mark.parametrize("bogus", [-1_000_000, None, "many"], ids=["negative", "null", "string"])
def test_bogus_usage_lets_no_more_requests_through_than_the_budget_allows(
        session: Session, bogus: Any, asynchronous: bool) -> None:
    # each reply is cut at the token limit and says it took 1,000 tokens, but for the bogus
    # count; the budget has room for one such reply, not for two
    replies = [Reply(".", finish="length", usage=(10, 1_000),
                     usage_extra={"completion_tokens": bogus}) for _ in range(8)]
    with FakeModelServer(replies) as server:
        budget = _first_worst_case(server, session, 1_200) + 600
        agent = _agent(server, session, budget, 1_200)
        outcome = _run(agent, asynchronous)
        sent = len(server.requests)
    assert (outcome, sent) == (Outcome.BUDGET, 1)
    assert agent.billing.spend.tokens <= budget
    reply = agent.conversation.messages[1].reply
    assert reply is not None and reply.counted == "estimate"  # fencecall's own count


@PATHS
def test_a_reply_the_server_will_not_stop_is_cut_where_the_budget_runs_out(
        session: Session, asynchronous: bool) -> None:
    def huge(body: dict[str, Any]) -> Reply:
        return Reply(HUGE, chunk_size=50)  # max_tokens ignored

    with FakeModelServer(respond=huge) as server:
        budget = _first_worst_case(server, session, 4_000) + 100  # 4,100 tokens of output
        agent = _agent(server, session, budget, 4_000)
        outcome = _run(agent, asynchronous)
        served = server.requests
    assert outcome is Outcome.BUDGET
    assert len(served) == 1 and served[0].chunks_sent < served[0].chunks_total
    _, reply, stop = agent.conversation.messages
    assert reply.content.endswith("[cut where the token budget ran out]")
    assert len(reply.content) < 2 * 4_100 + 100  # fencecall's count, half a token a character
    assert reply.reply is not None and reply.reply.cut and reply.reply.counted == "estimate"
    assert stop.ending is Outcome.BUDGET and "Stopped by the token budget" in stop.content
    assert agent.billing.spend.tokens <= budget + 25  # past it by the chunk that crossed it at most


@PATHS
def test_a_report_below_fencecall_s_count_is_charged_as_counted(session: Session,
                                                                 asynchronous: bool) -> None:
    # each reply is cut at the token limit and says it took 10 tokens in and none out, which
    # could be true; the budget has room for one such reply as fencecall counts it, not two
    text = " ".join(f"w{i}" for i in range(300))[:1_000]  # 500 tokens by the estimate
    replies = [Reply(text, finish="length", usage=(10, 0)) for _ in range(8)]
    with FakeModelServer(replies) as server:
        worst = _first_worst_case(server, session, 1_200)
        budget = worst + 500 + 200
        agent = _agent(server, session, budget, 1_200)
        outcome = _run(agent, asynchronous)
        sent = len(server.requests)
    assert (outcome, sent) == (Outcome.BUDGET, 1)
    reply = agent.conversation.messages[1].reply
    assert reply is not None and reply.usage == Usage(10, 0)  # the log keeps the report
    assert agent.billing.spend.tokens == worst - 1_200 + 500  # its input and text as counted
