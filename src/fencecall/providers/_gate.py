"""Admission of a provider's requests on the async path: a bound on how many are open, the
retries, and a pause of the whole provider when its server asks for one.

A batch runs a thousand sessions on one event loop. If each retried a rate limit on its own
(as the SDKs' built-in retries do), the server would keep being hit by every task at once;
instead the async clients retry nothing, and a provider's one :class:`Gate` holds all of its
new requests until the server's ``Retry-After`` has passed, so the batch slows down as one.
"""

from __future__ import annotations

import asyncio
import email.utils
import itertools
import math
import random
import threading
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Generic, Protocol, TypeVar

from .base import ProviderError

T = TypeVar("T")

MAX_PAUSE = 60.0
"""The longest pause a server's ``Retry-After`` gets; the error after the last retry says
when a server asked for more."""

RETRIED_STATUSES = frozenset({408, 409, 429})
"""HTTP statuses worth asking again (with every 5xx): a timeout, a conflict, a rate limit."""

PAUSING_STATUSES = frozenset({429, 503})
"""The statuses whose ``Retry-After`` pauses the whole provider: it is overloaded, not just
this request unlucky."""


@dataclass(frozen=True, slots=True)
class GateStats:
    """A gate's counters, for a progress display. ``waiting`` counts requests waiting for a
    slot, for a pause to end or for their backoff before a retry; ``paused_for`` is the
    seconds until the provider's pause ends (0 with none)."""

    in_flight: int
    waiting: int
    retries: int
    paused_for: float

    @classmethod
    def total(cls, stats: Iterable[GateStats]) -> GateStats:
        """Several gates' counters as one (the longest pause)."""
        found = list(stats)
        return cls(sum(s.in_flight for s in found), sum(s.waiting for s in found),
                   sum(s.retries for s in found), max((s.paused_for for s in found), default=0.0))


@dataclass(frozen=True, slots=True)
class Failure:
    """What the gate needs to know of a request that could not be opened: its HTTP status
    (None when no answer came: the connection failed or timed out) and the seconds the
    server asked the client to wait."""

    status: int | None
    retry_after: float | None = None

    @property
    def retryable(self) -> bool:
        return self.status is None or self.status in RETRIED_STATUSES or self.status >= 500


Classify = Callable[[Exception], Failure | None]
"""A request's failure as the gate sees it, or None for an error that is neither the
network's nor the server's (raised as it is)."""


class _Headed(Protocol):
    @property
    def headers(self) -> Mapping[str, str]: ...


class StatusError(Protocol):
    """What the vendor SDKs' HTTP status errors (``APIStatusError``) have in common."""

    @property
    def status_code(self) -> int: ...

    @property
    def response(self) -> _Headed: ...


def sdk_failure(err: Exception, connection: type[Exception],
                status: type[StatusError]) -> Failure | None:
    """A :data:`Classify` for a vendor SDK given its connection and status error classes."""
    if isinstance(err, status):
        return Failure(err.status_code, retry_after(err.response.headers))
    if isinstance(err, connection):
        return Failure(None)
    return None


def retry_after(headers: Mapping[str, str]) -> float | None:
    """The seconds a server asks a client to wait (``retry-after-ms``, or ``retry-after`` in
    seconds or as an HTTP date); None when it asks nothing readable."""
    if (ms := _seconds(headers.get("retry-after-ms"))) is not None:
        return ms / 1000
    value = headers.get("retry-after")
    if value is None:
        return None
    if (seconds := _seconds(value)) is not None:
        return seconds
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _seconds(text: str | None) -> float | None:
    try:
        value = float(text) if text is not None else math.nan
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


class PerLoop(Generic[T]):
    """One ``T`` per running event loop, made there on first use: asyncio primitives and
    connection pools work only on the loop they were made on, and a batch may run on a new
    loop each time. Closed loops' values are dropped when a new loop's is made."""

    def __init__(self, factory: Callable[[], T]):
        self._factory = factory
        self._made: dict[asyncio.AbstractEventLoop, T] = {}
        self._lock = threading.Lock()

    def get(self) -> T:
        loop = asyncio.get_running_loop()
        with self._lock:
            if loop not in self._made:
                self._made = {old: value for old, value in self._made.items()
                              if not old.is_closed()}
                self._made[loop] = self._factory()
            return self._made[loop]

    def pop(self) -> T | None:
        """The running loop's value, forgotten (to be closed), or None if it has none."""
        with self._lock:
            return self._made.pop(asyncio.get_running_loop(), None)


POOL_CONNECTIONS = 64
"""Connections per HTTP client on the async path: httpx's pool looks over all of its
connections and waiting requests for each request, so a thousand requests at once go
through several clients in turn (:class:`Clients`) rather than one pool of a thousand."""


class _Closable(Protocol):
    async def close(self) -> None: ...


C = TypeVar("C", bound=_Closable)


class Clients(Generic[C]):
    """A provider's async HTTP clients on one loop, handed out in turn (see
    :data:`POOL_CONNECTIONS`); each may open up to the gate's whole limit, so none waits
    while another has room. Made on the running loop, and closed when it shuts down if
    their owner has not closed them before (see :func:`_closing_at_shutdown`)."""

    def __init__(self, make: Callable[[], C], limit: int):
        self.all = tuple(make() for _ in range(max(1, -(-limit // POOL_CONNECTIONS))))
        self._turn = itertools.count()
        self._closed = False
        self._guard = _closing_at_shutdown(self.aclose)

    def next(self) -> C:
        return self.all[next(self._turn) % len(self.all)]

    async def aclose(self) -> None:
        """Closes every client, once."""
        if self._closed:
            return
        self._closed = True
        for client in self.all:
            await client.close()


def _closing_at_shutdown(close: Callable[[], Awaitable[None]]) -> AsyncGenerator[None, None]:
    """An async generator, suspended on the running loop, that awaits ``close`` when it is
    closed: ``asyncio.run`` closes every such generator before its loop ends
    (``shutdown_asyncgens``), so clients whose owner never closed them (a library user's
    ``asyncio.run(agent.arun(...))``) are closed on their own loop, not left to the garbage
    collector, which would print aiohttp's "Unclosed connector". Keep a reference to it:
    one that is collected is closed at once."""
    async def guard() -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            await close()

    generator = guard()
    asyncio.get_running_loop().create_task(_start(generator))
    return generator


async def _start(generator: AsyncGenerator[None, None]) -> None:
    await anext(generator)


class Gate:
    """Admits one provider's requests: at most ``limit`` open at once (a slot is held from
    sending a request until its stream is closed), failures of the network or the server
    retried ``retries`` times after ``backoff * 2**n`` seconds, and a 429 or 503 with a
    ``Retry-After`` pausing every new request of the provider until it has passed (streams
    already open go on). The limit holds per event loop. :meth:`stats` may be read from any
    thread."""

    def __init__(self, name: str, *, limit: int = 64, retries: int = 2, backoff: float = 0.5):
        if limit < 1:
            raise ValueError(f"gate {name!r}: the limit must be at least 1, not {limit}")
        self.name = name
        self.limit = limit
        self.retries = max(0, retries)
        self.backoff = backoff
        self._slots = PerLoop(lambda: asyncio.BoundedSemaphore(limit))
        self._lock = threading.Lock()
        self._in_flight = 0
        self._waiting = 0
        self._retried = 0
        self._paused_until = 0.0
        """When the pause ends, on :func:`time.monotonic`'s clock."""

    def stats(self) -> GateStats:
        with self._lock:
            return GateStats(self._in_flight, self._waiting, self._retried,
                             max(0.0, self._paused_until - time.monotonic()))

    @asynccontextmanager
    async def request(self, send: Callable[[], Awaitable[T]], where: str,
                      classify: Classify) -> AsyncIterator[T]:
        """What ``send`` opens, once a slot is free and no pause holds, retried as the gate
        retries; the slot is held until the block ends. An error the gate gives up on is
        raised as :class:`ProviderError` (``where`` names the provider, as the sync path's
        errors do); one ``classify`` does not know, as it is."""
        slots = self._slots.get()
        opened = await self._open(slots, send, where, classify)
        try:
            yield opened
        finally:
            self._release(slots)

    async def _open(self, slots: asyncio.Semaphore, send: Callable[[], Awaitable[T]],
                    where: str, classify: Classify) -> T:
        attempt = 0
        while True:
            await self._acquire(slots)
            try:
                return await send()
            except Exception as err:
                self._release(slots)
                if (failure := classify(err)) is None:
                    raise
                delay = self._retry_delay(err, failure, attempt, where)
            except BaseException:
                self._release(slots)
                raise
            if delay:
                self._count_waiting(1)
                try:
                    await asyncio.sleep(delay)
                finally:
                    self._count_waiting(-1)
            attempt += 1

    async def _acquire(self, slots: asyncio.Semaphore) -> None:
        """Waits for the pause to end and a slot, then holds the slot (checking the pause
        again: one may have begun while this request waited for the slot)."""
        self._count_waiting(1)
        try:
            while True:
                while (left := self._paused_until - time.monotonic()) > 0:
                    await asyncio.sleep(left)
                await slots.acquire()
                if self._paused_until <= time.monotonic():
                    break
                slots.release()
        finally:
            self._count_waiting(-1)
        with self._lock:
            self._in_flight += 1

    def _release(self, slots: asyncio.Semaphore) -> None:
        slots.release()
        with self._lock:
            self._in_flight -= 1

    def _count_waiting(self, change: int) -> None:
        with self._lock:
            self._waiting += change

    def _retry_delay(self, err: Exception, failure: Failure, attempt: int, where: str) -> float:
        """The backoff before retrying after ``err`` (0 when a pause is the wait); raises
        when it is not to be retried."""
        asked = failure.retry_after if failure.status in PAUSING_STATUSES else None
        if asked:
            with self._lock:
                self._paused_until = max(self._paused_until,
                                         time.monotonic() + min(asked, MAX_PAUSE))
        if not failure.retryable:
            raise ProviderError(f"{where}: {err}") from err
        if attempt >= self.retries:
            raise ProviderError(f"{where}: {err} ({_gave_up(failure, attempt, asked)})") from err
        with self._lock:
            self._retried += 1
        return 0.0 if asked else self.backoff * 2**attempt * random.uniform(1.0, 1.1)


def _gave_up(failure: Failure, attempt: int, asked: float | None) -> str:
    """Why the last retry was the last: the status, the retries and any pause asked for."""
    said = [f"HTTP {failure.status}" if failure.status else "no answer from the server",
            f"gave up after {attempt} {'retry' if attempt == 1 else 'retries'}" if attempt
            else "not retried (retries are off)"]
    if asked:
        capped = f", paused {MAX_PAUSE:g} s (the cap)" if asked > MAX_PAUSE else ""
        said.append(f"the server asked for a pause of {round(asked, 1):g} s{capped}")
    return "; ".join(said)
