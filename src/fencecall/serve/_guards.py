"""What guards fencecall's MCP HTTP server before a request reaches MCP: the request must name
this server (``Host``, ``Origin``: DNS rebinding), and carry the token where one is asked."""

from __future__ import annotations

import hmac
import ipaddress
import re
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

ASGIApp = Callable[[MutableMapping[str, Any], Callable[..., Any], Callable[..., Any]],
                   Awaitable[None]]
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
_AUTHORITY = re.compile(r"(?:\[(?P<v6>[0-9a-f:.]+)\]|(?P<name>[0-9a-z._-]+))"
                        r"(?::(?P<port>[0-9]{1,5}))?")


class HostGuard:
    """Refuses a request whose ``Host``, or ``Origin`` when sent, names anything but this
    server, before it reaches MCP: a web page whose own name its author points at this
    address (DNS rebinding) must not reach the tools. The SDK checks only when bound to some
    loopback spellings, and lets any port through.

    Allowed are the bound address (canonical form) and its spelling, with the bound port;
    on a loopback or wildcard bind also ``localhost``, ``127.0.0.1`` and ``[::1]``; on a
    wildcard bind also the address the request's connection arrived at (an IP address
    cannot be rebound). ``Origin`` must be ``http://`` and an allowed host."""

    def __init__(self, app: ASGIApp, spelling: str, bound: IPAddress, port: int):
        names = {canonical_host(spelling), canonical_host(str(bound))}
        if bound.is_loopback or bound.is_unspecified:
            names.update(_LOOPBACK_NAMES)
        self._app = app
        self._port = port
        self._allowed = frozenset((name, port) for name in names)
        self._wildcard = bound.is_unspecified

    async def __call__(self, scope: MutableMapping[str, Any], receive: Callable[..., Any],
                       send: Callable[..., Any]) -> None:
        if scope["type"] == "http":
            refusal = self._refusal(scope)
            if refusal is not None:
                await _respond(send, *refusal)
                return
        await self._app(scope, receive, send)

    def _refusal(self, scope: MutableMapping[str, Any]) -> tuple[int, bytes] | None:
        allowed = self._allowed
        if self._wildcard and scope.get("server"):
            allowed = allowed | {(canonical_host(scope["server"][0]), self._port)}
        headers = scope.get("headers") or ()
        hosts = [value.decode("latin-1") for key, value in headers if key == b"host"]
        if len(hosts) != 1 or authority(hosts[0]) not in allowed:
            return 421, b"refused: the Host header does not name this server\n"
        origins = [value.decode("latin-1") for key, value in headers if key == b"origin"]
        if origins and (len(origins) != 1 or not origins[0].lower().startswith("http://")
                        or authority(origins[0][len("http://"):]) not in allowed):
            return 403, b"refused: the Origin header is not this server\n"
        return None


def authority(text: str) -> tuple[str, int] | None:
    """``host[:port]`` (a Host header) as (host as :func:`_host` spells it, port); None if
    malformed."""
    match = _AUTHORITY.fullmatch(text.lower())
    if match is None:
        return None
    v6, name, port = match.group("v6", "name", "port")
    if v6 is not None:
        try:
            name = str(ipaddress.IPv6Address(v6))
        except ValueError:
            return None
    return canonical_host(name), int(port or 80)


def canonical_host(address: str) -> str:
    """A host as the checks compare it: an IP address in canonical form (IPv6 in brackets),
    a name in lower case."""
    ip = _ip(address)
    if ip is None:
        return address.lower()
    return f"[{ip}]" if ip.version == 6 else str(ip)


def _ip(address: str) -> IPAddress | None:
    """``address`` as an IP address (an IPv4-mapped IPv6 one as IPv4), or None for a name."""
    try:
        ip = ipaddress.ip_address(address.strip("[]"))
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


class BearerGuard:
    """Refuses HTTP requests without the right bearer token (compared in constant time)."""

    def __init__(self, app: ASGIApp, token: str):
        self._app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: MutableMapping[str, Any], receive: Callable[..., Any],
                       send: Callable[..., Any]) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or ()).get(b"authorization", b"")
            if not hmac.compare_digest(given, self._expected):
                await _respond(send, 401, b"missing or wrong token\n",
                               (b"www-authenticate", b"Bearer"))
                return
        await self._app(scope, receive, send)


async def _respond(send: Callable[..., Any], status: int, body: bytes,
                   *headers: tuple[bytes, bytes]) -> None:
    """A short plain-text refusal, sent without reading the request."""
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain"), *headers]})
    await send({"type": "http.response.body", "body": body})
