"""Chat-completions replies read straight off an async HTTP response, for the batch's path.

On an event loop running a thousand sessions, the OpenAI SDK's own work per request (its
request options, copies and checks, its stream objects) was a third of fencecall's CPU per
batch task; a chat-completions request is one JSON POST answered by server-sent events, so
the async path sends it with the SDK's headers and base URL and reads the events here. It
goes through the aiohttp session of the SDK's HTTP client (``DefaultAioHttpClient``), with the
proxy, TLS settings, connection limit and timeouts that client chose for the base URL, but not
through httpx's request and response objects, which were a quarter of what is left per
request; aiohttp's own errors are what it raises. Refusals read as the SDK's do (``Error code:
429 - message``), so both paths of a provider say the same; what a server sends is bounded
(an error's body, an event, the rest of a stream after ``[DONE]``).
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Mapping
from typing import Any

import aiohttp
import httpx2

from ._gate import Failure, retry_after

ERROR_BODY_LIMIT = 64 * 1024
"""Bytes of a refused request's body read for its message; the rest is not waited for."""
DRAIN_LIMIT = 64 * 1024
"""Bytes read after ``[DONE]`` so that the connection can be kept; a server that sends more
gets its connection closed instead."""
EVENT_LIMIT = 16 * 1024 * 1024
"""Bytes of one server-sent event at most: a server that never ends one is not buffered
without end."""
MESSAGE_LIMIT = 2000
"""Characters of a server's error message kept in the error."""
DEFAULT_STREAM_ERROR = "An error occurred during streaming"


class StatusError(Exception):
    """The server refused the request (an HTTP status of 400 or more); the gate reads
    ``status_code`` and ``headers`` (``Retry-After``)."""

    def __init__(self, status: int, headers: Mapping[str, str], body: bytes):
        self.status_code = status
        self.headers = headers
        message = _error_message(body)
        super().__init__(f"Error code: {status}"
                         + (f" - {message[:MESSAGE_LIMIT]}" if message else ""))


class StreamError(Exception):
    """The server reported an error in the middle of the reply's events."""


def _error_message(body: bytes) -> str | None:
    """The ``error.message`` (or ``message``) of a JSON error body, as the SDK shows it."""
    try:
        data = json.loads(body)
    except ValueError:
        return None
    error = data.get("error", data) if isinstance(data, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return message if isinstance(message, str) and message else None


def failure(err: Exception) -> Failure | None:
    """The gate's view of an error of :meth:`SseClient.open`: a status, no answer at all (the
    connection failed, broke or timed out; the proxy failed), or neither (raised as it is)."""
    if isinstance(err, StatusError):
        return Failure(err.status_code, retry_after(err.headers))
    if isinstance(err, NO_ANSWER):
        return Failure(None)
    return None


NO_ANSWER = (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError,
             aiohttp.ClientHttpProxyError)
"""aiohttp's errors that mean the server gave no answer (a timeout is a connection error)."""
ERRORS = (aiohttp.ClientError, StatusError, StreamError)
"""What the async path raises that is the server's or the network's doing."""


class SseClient:
    """POSTs JSON to ``base_url`` with ``headers`` through ``http``'s aiohttp session and
    opens the reply as an :class:`EventStream`. ``http`` stays the session's owner: closing
    it closes the connections."""

    def __init__(self, http: httpx2.AsyncClient, base_url: str, headers: Mapping[str, str]):
        self._http = http
        self._base_url = base_url.rstrip("/")
        self._headers = {**headers, "Accept": "text/event-stream"}
        # the SDK's AiohttpTransport (of a private module) for this URL: the proxy's, if any
        transport: Any = http._transport_for_url(httpx2.URL(self._base_url))
        if not all(hasattr(transport, name) for name in ("client", "get_client", "proxy")):
            raise TypeError(f"an aiohttp client is needed, not {type(transport).__name__}")
        self._transport = transport
        timeout, proxy = http.timeout, transport.proxy
        self._options: dict[str, Any] = {
            "allow_redirects": http.follow_redirects,
            "timeout": aiohttp.ClientTimeout(sock_connect=timeout.connect,
                                             sock_read=timeout.read, connect=timeout.pool),
            "proxy": None if proxy is None else str(proxy.url),
            "proxy_auth": None if proxy is None or not proxy.auth
            else aiohttp.BasicAuth(*proxy.auth),
            "proxy_headers": None if proxy is None else dict(proxy.headers)}

    async def open(self, path: str, body: dict[str, Any]) -> EventStream:
        """Sends ``body`` (ASCII JSON: a lone surrogate in a message stays an escape); a
        refusal is :class:`StatusError`, read and closed."""
        if not isinstance(self._transport.client, aiohttp.ClientSession):
            self._transport.client = self._transport.get_client()  # as the transport does
        response = await self._transport.client.request(
            "POST", self._base_url + path, data=json.dumps(body).encode(),
            headers=self._headers, **self._options)
        if response.status >= 400:
            try:
                raise StatusError(response.status, response.headers, await _take(
                    response.content.iter_any(), ERROR_BODY_LIMIT))
            finally:
                response.close()
        return EventStream(response)

    async def close(self) -> None:
        await self._http.aclose()


async def _take(pieces: AsyncIterator[bytes], limit: int) -> bytes:
    """At most ``limit`` bytes of ``pieces``; whether more came is not waited for."""
    taken = bytearray()
    async for piece in pieces:
        taken += piece
        if len(taken) >= limit:
            break
    return bytes(taken[:limit])


class EventStream:
    """The JSON objects of a reply's ``data:`` events, up to ``[DONE]`` (whose rest is read,
    bounded, so that the connection goes back to its pool); an error event raises
    :class:`StreamError`."""

    def __init__(self, response: aiohttp.ClientResponse):
        self._response = response

    async def __aiter__(self) -> AsyncIterator[object]:
        pieces = self._response.content.iter_any()
        async for data in _event_data(pieces):
            if data.startswith("[DONE]"):
                await _take(pieces, DRAIN_LIMIT)
                return
            chunk = json.loads(data)
            if isinstance(chunk, dict) and (error := chunk.get("error")):
                message = error.get("message") if isinstance(error, dict) else None
                raise StreamError(message[:MESSAGE_LIMIT] if isinstance(message, str)
                                  and message else DEFAULT_STREAM_ERROR)
            yield chunk

    async def close(self) -> None:
        """Gives the connection back once the reply was read to its end, else closes it
        (what is left of a cut reply must not be read as the next one's)."""
        if self._response.content.at_eof():
            self._response.release()
        else:
            self._response.close()


async def _event_data(pieces: AsyncIterator[bytes]) -> AsyncIterator[str]:
    """The data of each server-sent event (its ``data:`` lines joined by newlines), as the
    SDK's decoder reads them: an event ends at an empty line (after CR, LF or CRLF), and
    comments and other fields are skipped."""
    pending = b""
    async for piece in pieces:
        pending += piece
        start = 0
        while (end := _EVENT_END.search(pending, start)) is not None:
            if (data := _data(pending[start:end.start()])) is not None:
                yield data
            start = end.end()
        pending = pending[start:]
        if len(pending) > EVENT_LIMIT:
            raise StreamError(f"an event of over {EVENT_LIMIT} bytes")
    if (data := _data(pending)) is not None:
        yield data


_EVENT_END = re.compile(rb"\r\n\r\n|\n\n|\r\r")


def _data(event: bytes) -> str | None:
    """The joined ``data:`` lines of one event, or None when it has none."""
    found = [line[6:] if line.startswith(b"data: ") else line[5:]
             for line in event.splitlines() if line.startswith(b"data:")]
    return b"\n".join(found).decode() if found else None
