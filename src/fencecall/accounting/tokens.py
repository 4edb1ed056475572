"""Counting the tokens of a request or a reply the provider did not report.

A reply stopped at its first call closes its stream before the provider sends its usage, and a
broken stream never sends it; both were billed. They are counted with the model's own
tokenizer where one can be had: OpenAI's BPE vocabularies for OpenAI's models (from
``bpe-openai``, which ships them: ``tiktoken`` downloads its vocabularies at first use and so
fails offline), the server's ``/tokenize`` endpoint for a self-hosted one (vLLM and llama.cpp
answer ``POST /tokenize``, llama-cpp-python's server ``POST /extras/tokenize``). Otherwise an
estimate that errs high (see :class:`Estimate`), marked as such wherever it is shown.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from .prices import is_local

Exactness = Literal["tokenizer", "estimate"]

MESSAGE_OVERHEAD = 4
"""Tokens a chat template adds around each message (role and separators; OpenAI's formula
counts 3, chat templates of open models 3 to 5)."""
REPLY_PRIMING = 3
"""Tokens that start the assistant's turn."""


class TokenCounter(Protocol):
    """Counts the tokens of a text as one model sees it."""

    @property
    def exactness(self) -> Exactness: ...

    def count(self, text: str) -> int: ...


@dataclass(frozen=True, slots=True)
class Estimate:
    """Half a token per ASCII character and three quarters per byte of any other, rounded up:
    more than byte-level BPE vocabularies give for prose (about 4 characters a token), code
    and JSON (about 3), and Chinese or Cyrillic text even with a small English-centred
    vocabulary (SmolLM2's: 1.7 tokens a Chinese character, 2.25 here), so a budget that
    trusts it stops early, never late (``python -m benchmarks.token_count`` measures it)."""

    @property
    def exactness(self) -> Exactness:
        return "estimate"

    def count(self, text: str) -> int:
        size = len(text.encode("utf-8"))
        ascii_chars = len(text.encode("ascii", errors="ignore"))
        return math.ceil(ascii_chars / 2 + (size - ascii_chars) * 3 / 4)


class _Memo:
    """Counts already made, by text: a conversation's messages are counted again with every
    request, so each is counted once (up to ``size`` texts)."""

    def __init__(self, size: int = 4096):
        self._counts: dict[str, int] = {}
        self._size = size

    def get(self, text: str, count: Callable[[str], int]) -> int:
        found = self._counts.get(text)
        if found is None:
            found = count(text)
            if len(self._counts) >= self._size:
                self._counts.pop(next(iter(self._counts)))
            self._counts[text] = found
        return found


class BpeCounter:
    """OpenAI's tokenizer for ``model`` (``o200k_base`` for GPT-4o and later)."""

    def __init__(self, model: str):
        import bpe_openai  # imported by the runs that count: its vocabularies are large

        self._encoding = bpe_openai.encoding_for_model(model)
        self._memo = _Memo()

    @property
    def exactness(self) -> Exactness:
        return "tokenizer"

    def count(self, text: str) -> int:
        return self._memo.get(text, lambda t: len(self._encoding.encode_ordinary(t)))

    @staticmethod
    def knows(model: str) -> bool:
        try:
            import bpe_openai
        except ImportError:
            return False
        try:
            bpe_openai.encoding_name_for_model(model)
        except Exception:  # the library's UnsupportedModelError, or a name it cannot read
            return False
        return True


Post = Callable[[str, dict[str, Any], float], Any]
"""POSTs a JSON body to a URL within a timeout; returns the decoded JSON answer."""


def _post(url: str, body: dict[str, Any], timeout: float) -> Any:
    import urllib.request  # only a run that counts with a server's tokenizer needs it

    request = urllib.request.Request(url, json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as answer:
        return json.load(answer)


class ServerCounter:
    """The tokenizer of a self-hosted server, asked over HTTP. The first endpoint that
    answers is kept; when none does, or one fails later, :class:`Estimate` counts instead
    (and :attr:`exactness` says so from then on)."""

    ENDPOINTS: tuple[tuple[str, Callable[[str, str], dict[str, Any]]], ...] = (
        ("/tokenize", lambda model, text: {"model": model, "prompt": text}),  # vLLM
        ("/tokenize", lambda model, text: {"content": text}),  # llama.cpp
        ("/extras/tokenize", lambda model, text: {"model": model, "input": text}),
    )

    def __init__(self, root: str, model: str, *, timeout: float = 10.0, post: Post = _post):
        self._root = root.rstrip("/")
        self._model = model
        self._timeout = timeout
        self._post = post
        self._endpoint: int | None = None
        self._failed = False
        self._memo = _Memo()

    @property
    def exactness(self) -> Exactness:
        return "estimate" if self._failed else "tokenizer"

    def count(self, text: str) -> int:
        return self._memo.get(text, self._count) if not self._failed else self._count(text)

    def _count(self, text: str) -> int:
        if not self._failed:
            order = ([self._endpoint] if self._endpoint is not None
                     else range(len(self.ENDPOINTS)))
            for index in order:
                path, body = self.ENDPOINTS[index]
                found = self._ask(path, body(self._model, text))
                if found is not None:
                    self._endpoint = index
                    return found
            self._failed = True
        return Estimate().count(text)

    def _ask(self, path: str, body: dict[str, Any]) -> int | None:
        try:
            answer = self._post(self._root + path, body, self._timeout)
        except (OSError, ValueError):  # urllib's errors are OSErrors
            return None
        if not isinstance(answer, dict):
            return None
        count, tokens = answer.get("count"), answer.get("tokens")
        if isinstance(count, int) and not isinstance(count, bool) and count >= 0:
            return count
        return len(tokens) if isinstance(tokens, list) else None


def server_root(base_url: str) -> str:
    """The server's own root for an OpenAI-compatible base URL (``…/v1`` stripped), where the
    tokenize endpoints live."""
    root = base_url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


def counter_for(kind: str, base_url: str | None, model: str) -> TokenCounter:
    """The best counter for ``model`` of a provider of ``kind`` at ``base_url``: OpenAI's
    BPE for the models it knows, the server's tokenizer for an OpenAI-compatible server on
    this machine, else the estimate."""
    if kind == "openai" and BpeCounter.knows(model):
        return BpeCounter(model)
    if kind == "openai" and base_url and is_local(base_url):
        return ServerCounter(server_root(base_url), model)
    return Estimate()


def request_tokens(counter: TokenCounter, system: str, messages: Sequence[str],
                   tools: Sequence[Mapping[str, Any]] = ()) -> int:
    """The input tokens of a request as ``counter`` counts them: the system prompt, each
    message's text as the chat API is shown it, and the tool schemas, with each message's
    template overhead."""
    texts = [system, *messages, json.dumps(list(tools)) if tools else ""]
    return (sum(counter.count(text) for text in texts if text)
            + MESSAGE_OVERHEAD * (1 + len(messages)) + REPLY_PRIMING)
