"""``--logprobs``: asked of an OpenAI-compatible server, read from its stream, and kept as
far as the reply was kept (a reply stops at its first complete call)."""

from __future__ import annotations

from pathlib import Path

from fencecall.agent import Agent, AgentSettings, Conversation
from fencecall.agent._logprobs import kept_scores
from fencecall.config import Sampling
from fencecall.message import Message, TokenLogprob
from fencecall.providers import ChatRequest, Scores
from fencecall.providers._openai_provider import OpenAIProvider
from fencecall.providers.base import TextDelta
from tests.fakeserver import FakeModelServer, Reply
from tests.support import tool_session

CALL_THEN_MORE = ["I", " will", " look", ".\n", "```", "shell", "\n", "echo", " hi", "\n",
                  "```\n", "Output", ":", " hi", "\n"]
"""A reply that writes past its call (a made-up result), one token a piece."""


def _scored(tokens: list[str]) -> Reply:
    return Reply("".join(tokens), logprobs=[(t, -0.1 * i) for i, t in enumerate(tokens)],
                 token_ids=list(range(100, 100 + len(tokens))))


def _request(logprobs: bool) -> ChatRequest:
    return ChatRequest("m", "be brief", (Message("user", "hi"),),
                       sampling=Sampling(logprobs=logprobs))


def test_the_server_is_asked_and_its_scores_come_before_their_text() -> None:
    with FakeModelServer([_scored(["Hel", "lo", "."])]) as server:
        provider = OpenAIProvider(api_key=None, base_url=server.openai_url, max_retries=0)
        events = list(provider.stream(_request(True)))
    body = server.requests[0].body
    assert body["logprobs"] is True and body["return_token_ids"] is True
    scores = [e for e in events if isinstance(e, Scores)]
    assert [t for s in scores for t in s.tokens] == [
        TokenLogprob("Hel", 0.0, 100), TokenLogprob("lo", -0.1, 101),
        TokenLogprob(".", -0.2, 102)]
    assert events[events.index(scores[0]) + 1] == TextDelta("Hel")


def test_without_the_flag_nothing_is_asked() -> None:
    with FakeModelServer([_scored(["Hi"])]) as server:
        provider = OpenAIProvider(api_key=None, base_url=server.openai_url, max_retries=0)
        events = list(provider.stream(_request(False)))
    assert "logprobs" not in server.requests[0].body
    assert "return_token_ids" not in server.requests[0].body
    assert not [e for e in events if isinstance(e, Scores)]


def test_the_tokens_kept_cover_the_text_kept() -> None:
    tokens = [TokenLogprob(t, -1.0) for t in ["ab", "c\n", "``", "`\n", "tail"]]
    assert kept_scores(tokens, "abc\n```\ntail", "abc\n```") == tuple(tokens[:4])
    assert kept_scores(tokens, "abc\n```\ntail", "abc\n``") == tuple(tokens[:3])
    assert kept_scores(tokens, "abc\n```\ntail", None) == tuple(tokens)
    assert kept_scores([], "abc", "ab") is None
    crlf = [TokenLogprob(t, -1.0) for t in ["a\r\n", "b\r\n", "c"]]  # kept text normalised
    assert kept_scores(crlf, "a\r\nb\r\nc", "a\nb") == tuple(crlf[:2])


def test_a_reply_cut_at_its_call_keeps_the_scores_of_its_kept_text(tmp_path: Path) -> None:
    replies = [_scored(CALL_THEN_MORE), _scored(["Done", "."])]
    with FakeModelServer(replies) as server, tool_session(tmp_path, ["shell"]) as session:
        provider = OpenAIProvider(api_key=None, base_url=server.openai_url, max_retries=0)
        agent = Agent(provider, "m", session, Conversation(),
                      AgentSettings(fmt="markdown", sampling=Sampling(logprobs=True)))
        run = agent.run("say hi")
    first = run.messages[1]
    assert first.content == "I will look.\n```shell\necho hi\n```"
    assert first.reply is not None and first.reply.logprobs is not None
    kept = first.reply.logprobs
    assert [t.token for t in kept] == CALL_THEN_MORE[:11]  # "```\n" covers the closing fence
    assert [t.token_id for t in kept] == list(range(100, 111))
    last = run.messages[-1]
    assert last.reply is not None and last.reply.logprobs is not None
    assert [t.token for t in last.reply.logprobs] == ["Done", "."]
