"""What the providers built on a vendor SDK share, as httpx's two clients share a base: the
settings, the SDK's sync client and its async clients per event loop, the gate, and the
reading of a reply stream either way. Each provider keeps only its wire format: the request's
arguments, the call that opens a stream, and the reader of its chunks.

Imported by the providers' modules alone, so nothing of an SDK's stack loads before a
provider of it is used.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Generator
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, Protocol, TypeVar

import httpx2

from ..defaults import REQUEST_TIMEOUT, RETRIES
from ._gate import Clients, Failure, Gate, PerLoop, StatusError, sdk_failure
from .base import (
    AsyncChunks,
    ChatRequest,
    ChunkReader,
    Chunks,
    StreamEvent,
    aread_stream,
    read_stream,
)

Timeout = float | httpx2.Timeout | None


class SdkClient(Protocol):
    """What the base reads of an SDK's sync client to make its async clients alike."""

    @property
    def api_key(self) -> str | None: ...

    @property
    def base_url(self) -> httpx2.URL: ...

    @property
    def timeout(self) -> Timeout: ...


class _Closable(Protocol):
    async def close(self) -> None: ...


S = TypeVar("S", bound=SdkClient)
S_co = TypeVar("S_co", bound=SdkClient, covariant=True)
A = TypeVar("A", bound=_Closable)
A_co = TypeVar("A_co", bound=_Closable, covariant=True)
C = TypeVar("C")


class SyncClientClass(Protocol[S_co]):
    """An SDK's sync client class (``openai.OpenAI``, ``anthropic.Anthropic``)."""

    def __call__(self, *, api_key: str, base_url: str | None, timeout: float,
                 max_retries: int) -> S_co: ...


class AsyncClientClass(Protocol[A_co]):
    """An SDK's async client class (``openai.AsyncOpenAI``, ``anthropic.AsyncAnthropic``)."""

    def __call__(self, *, api_key: str | None, base_url: httpx2.URL, timeout: Timeout,
                 max_retries: int, http_client: httpx2.AsyncClient) -> A_co: ...


@dataclass(frozen=True, slots=True)
class Sdk(Generic[S, A]):
    """A vendor SDK as a provider uses it: its client classes and the errors it raises
    (``error``, their base; a connection that failed; an HTTP status)."""

    client: SyncClientClass[S]
    async_client: AsyncClientClass[A] | None
    """None where the provider makes its own async clients (``_async_client``)."""
    http_client: type[httpx2.AsyncClient]
    """The SDK's own async HTTP client class over aiohttp (its ``DefaultAioHttpClient``):
    httpx's API, with aiohttp's connections underneath, which cost a batch's event loop about
    half the CPU per request of httpx's own."""
    error: type[Exception]
    connection_error: type[Exception]
    status_error: type[StatusError]


class SdkProvider(ABC, Generic[S, A, C]):
    """A provider over a vendor SDK, ``C`` being its stream's chunks.

    ``stream`` goes through the SDK's sync client, with its retries. ``astream`` goes
    through the SDK's async client, one per event loop, made on first use, with no retries
    of its own and at most ``max_connections`` connections: its
    :class:`~fencecall.providers._gate.Gate` (``self.gate``) bounds, paces and retries.
    """

    sdk: Sdk[S, A]
    default_name: ClassVar[str]
    """The provider's name when none is given (its kind)."""

    def __init__(self, *, api_key: str | None, base_url: str | None = None,
                 name: str | None = None, timeout: float = REQUEST_TIMEOUT,
                 max_retries: int = RETRIES,
                 max_connections: int = 64):
        self.name = self.default_name if name is None else name
        self._client = self.sdk.client(api_key=api_key or "not-needed", base_url=base_url,
                                       timeout=timeout, max_retries=max_retries)
        self.url: str | None = str(self._client.base_url)
        self.gate = Gate(self.name, limit=max_connections, retries=max_retries)
        self._async_clients = PerLoop(lambda: Clients(self._async_client, self.gate.limit))

    def stream(self, request: ChatRequest) -> Generator[StreamEvent, None, None]:
        arguments = self._arguments(request)
        yield from read_stream(self._where(), self.sdk.error,
                               lambda: self._open(self._client, arguments), self._reader(),
                               request)

    def astream(self, request: ChatRequest) -> AsyncGenerator[StreamEvent, None]:
        where = self._where()
        return aread_stream(where, self._async_errors, self.gate.request(
            lambda: self._aopen(self._async_clients.get().next(), self._arguments(request)),
            where, self._failure), self._reader(), request)

    async def aclose(self) -> None:
        """Closes the running loop's async connections (before the loop ends, so that none
        is left to the garbage collector)."""
        if (clients := self._async_clients.pop()) is not None:
            await clients.aclose()

    @abstractmethod
    def _arguments(self, request: ChatRequest) -> dict[str, Any]:
        """The request in the wire format: the SDK call's arguments."""

    @abstractmethod
    def _open(self, client: S, arguments: dict[str, Any]) -> Chunks[C]:
        """Sends ``arguments`` through the sync ``client``: the reply's open stream."""

    @abstractmethod
    async def _aopen(self, client: A, arguments: dict[str, Any]) -> AsyncChunks[C]:
        """:meth:`_open` through an async client."""

    @abstractmethod
    def _reader(self) -> ChunkReader[C]:
        """A new reader of one reply's chunks."""

    @property
    def _async_errors(self) -> type[Exception] | tuple[type[Exception], ...]:
        """What the async path raises that is the server's or the network's doing."""
        return self.sdk.error

    def _where(self) -> str:
        """The provider as its errors name it."""
        return f"{self.name} ({self.url})"

    def _failure(self, err: Exception) -> Failure | None:
        return sdk_failure(err, self.sdk.connection_error, self.sdk.status_error)

    def _async_client(self) -> A:
        """A new async client of the SDK's (one of :class:`~._gate.Clients`), retrying
        nothing: the gate retries."""
        if self.sdk.async_client is None:
            raise NotImplementedError(f"{type(self).__name__} makes its own async clients")
        sync = self._client
        return self.sdk.async_client(
            api_key=sync.api_key, base_url=sync.base_url, timeout=sync.timeout, max_retries=0,
            http_client=self._http_client())

    def _http_client(self) -> httpx2.AsyncClient:
        """The SDK's HTTP client class, with room for the gate's limit, kept alive."""
        limits = httpx2.Limits(max_connections=self.gate.limit,
                               max_keepalive_connections=self.gate.limit)
        return self.sdk.http_client(limits=limits, timeout=self._client.timeout)
