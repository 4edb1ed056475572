"""Counting the tokens of a request or a reply the provider did not report.

A reply stopped at its first call closes its stream before the provider sends its usage, and a
broken stream never sends it; both were billed. They are counted with the model's own
tokenizer where one can be had: OpenAI's BPE vocabularies for OpenAI's models (from
``bpe-openai``, which ships them: ``tiktoken`` downloads its vocabularies at first use and so
fails offline), Anthropic's token counting endpoint for Anthropic's models (Anthropic
publishes no tokenizer for them; ``POST /v1/messages/count_tokens``, asked with the
provider's API key), the server's ``/tokenize`` endpoint for a self-hosted one (vLLM and
llama.cpp answer ``POST /tokenize``, llama-cpp-python's server ``POST /extras/tokenize``).
Otherwise, and wherever such an endpoint fails, an estimate that errs high (see
:class:`Estimate`), marked as such wherever it is shown.
"""

from __future__ import annotations

import json
import math
import threading
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
        tally = Tally()
        tally.add(text)
        return tally.estimate


@dataclass(slots=True)
class Tally:
    """A text that comes in pieces (a reply as it streams), kept as the two numbers counting
    it needs: its UTF-8 bytes and how many of them are ASCII characters."""

    size: int = 0
    ascii: int = 0

    def add(self, text: str) -> None:
        if text.isascii():
            self.size += len(text)
            self.ascii += len(text)
        else:
            self.size += len(text.encode("utf-8", errors="surrogatepass"))
            self.ascii += len(text.encode("ascii", errors="ignore"))

    @property
    def estimate(self) -> int:
        """:class:`Estimate`'s count of the text so far."""
        return math.ceil(self.ascii / 2 + (self.size - self.ascii) * 3 / 4)


@dataclass(frozen=True, slots=True)
class Bytes:
    """One token a UTF-8 byte: more than any tokenizer makes of a text (a byte-level
    vocabulary's smallest token is one byte, a character-level one's a character), so a count
    no honest server's can exceed."""

    @property
    def exactness(self) -> Exactness:
        return "estimate"

    def count(self, text: str) -> int:
        return len(text.encode("utf-8", errors="surrogatepass"))


class _Memo:
    """Counts already made, by text: a conversation's messages are counted again with every
    request, so each is counted once (up to ``size`` texts). Safe to share among threads
    (a batch's sessions share one counter): a text two threads count at once is merely
    counted twice."""

    def __init__(self, size: int = 4096):
        self._counts: dict[str, int] = {}
        self._size = size
        self._lock = threading.Lock()

    def get(self, text: str, count: Callable[[str], int]) -> int:
        found = self._counts.get(text)
        if found is None:
            found = count(text)
            with self._lock:
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


class _AskingCounter:
    """A counter that asks a service for each new text (memoised). Once the service fails,
    :class:`Estimate` counts instead, and :attr:`exactness` says so from then on."""

    def __init__(self) -> None:
        self._failed = False
        self._memo = _Memo()

    @property
    def exactness(self) -> Exactness:
        return "estimate" if self._failed else "tokenizer"

    def count(self, text: str) -> int:
        if self._failed or not self._askable(text):
            return Estimate().count(text)
        return self._memo.get(text, self._count)

    def _count(self, text: str) -> int:
        found = self._ask(text)
        if found is None:
            self._failed = True
            return Estimate().count(text)
        return found

    def _askable(self, text: str) -> bool:
        """Whether the service counts ``text`` at all (else the estimate does)."""
        return True

    def _ask(self, text: str) -> int | None:
        """The service's count of ``text``; None: it failed."""
        raise NotImplementedError


class ServerCounter(_AskingCounter):
    """The tokenizer of a self-hosted server, asked over HTTP. The first endpoint that
    answers is kept; when none does, or one fails later, the estimate counts."""

    ENDPOINTS: tuple[tuple[str, Callable[[str, str], dict[str, Any]]], ...] = (
        ("/tokenize", lambda model, text: {"model": model, "prompt": text}),  # vLLM
        ("/tokenize", lambda model, text: {"content": text}),  # llama.cpp
        ("/extras/tokenize", lambda model, text: {"model": model, "input": text}),
    )

    def __init__(self, root: str, model: str, *, timeout: float = 10.0, post: Post = _post):
        super().__init__()
        self._root = root.rstrip("/")
        self._model = model
        self._timeout = timeout
        self._post = post
        self._endpoint: int | None = None

    def _ask(self, text: str) -> int | None:
        order = [self._endpoint] if self._endpoint is not None else range(len(self.ENDPOINTS))
        for index in order:
            path, body = self.ENDPOINTS[index]
            found = self._ask_endpoint(path, body(self._model, text))
            if found is not None:
                self._endpoint = index
                return found
        return None

    def _ask_endpoint(self, path: str, body: dict[str, Any]) -> int | None:
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


class AnthropicCounter(_AskingCounter):
    """Anthropic's count for ``model``, from its token counting endpoint (through the
    ``anthropic`` SDK, as the provider asks it: same base URL and key). The endpoint counts
    a whole request, so a text is sent as the one user message of one and the tokens that
    wrapping adds are taken off (learned once, see :attr:`PROBE`). When the endpoint fails
    (no answer, an HTTP error, an answer without a count), the estimate counts."""

    PROBE = "a"
    """The text whose request's count, less one, is the wrapping: a single ASCII letter is
    one token in any byte-level BPE vocabulary. (The API refuses an empty text, which would
    measure the wrapping alone.)"""

    def __init__(self, model: str, api_key: str, base_url: str | None = None, *,
                 timeout: float = 10.0):
        import anthropic  # the Anthropic provider in use has imported it already

        super().__init__()
        self._client = anthropic.Anthropic(api_key=api_key, base_url=base_url,
                                           timeout=timeout, max_retries=0)
        self._errors: tuple[type[Exception], ...] = (anthropic.APIError, ValueError)
        self._model = model
        self._wrapping: int | None = None

    def _askable(self, text: str) -> bool:
        return bool(text.strip())  # the API refuses a text of white space only

    def _ask(self, text: str) -> int | None:
        if self._wrapping is None:
            probe = self._request_count(self.PROBE)
            if probe is None or probe < 1:
                return None
            self._wrapping = probe - 1
        found = self._request_count(text)
        return None if found is None else max(0, found - self._wrapping)

    def _request_count(self, text: str) -> int | None:
        """The endpoint's count of a request whose one user message is ``text``."""
        try:
            answer = self._client.messages.count_tokens(
                model=self._model, messages=[{"role": "user", "content": text}])
        except self._errors:  # the SDK's errors (HTTP, connection, timeout), or bad JSON
            return None
        found = getattr(answer, "input_tokens", None)  # the SDK does not check the answer
        if isinstance(found, int) and not isinstance(found, bool) and found >= 0:
            return found
        return None


def server_root(base_url: str) -> str:
    """The server's own root for an OpenAI-compatible base URL (``…/v1`` stripped), where the
    tokenize endpoints live."""
    root = base_url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


def counter_for(kind: str, base_url: str | None, model: str,
                api_key: str | None = None) -> TokenCounter:
    """The best counter for ``model`` of a provider of ``kind`` at ``base_url`` (None: the
    vendor's own): the server's tokenizer for an OpenAI-compatible server on this machine
    (it serves the model, whatever its name), OpenAI's BPE for the models it knows (its
    library loads its vocabularies at import, most of a second, so only where it may be
    used), Anthropic's counting endpoint when there is an ``api_key`` to ask it with, else
    the estimate."""
    if kind == "openai" and base_url and is_local(base_url):
        return ServerCounter(server_root(base_url), model)
    if kind == "openai" and BpeCounter.knows(model):
        return BpeCounter(model)
    if kind == "anthropic" and api_key:
        return AnthropicCounter(model, api_key, base_url)
    return Estimate()


def request_tokens(counter: TokenCounter, system: str, messages: Sequence[str],
                   tools: Sequence[Mapping[str, Any]] = ()) -> int:
    """The input tokens of a request as ``counter`` counts them: the system prompt, each
    message's text as the chat API is shown it, and the tool schemas, with each message's
    template overhead."""
    texts = [system, *messages, json.dumps(list(tools)) if tools else ""]
    return (sum(counter.count(text) for text in texts if text)
            + MESSAGE_OVERHEAD * (1 + len(messages)) + REPLY_PRIMING)
