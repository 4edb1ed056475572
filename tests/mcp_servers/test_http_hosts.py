"""``fencecall mcp serve --http`` against forged ``Host`` and ``Origin`` headers (DNS
rebinding): a real server process for each spelling of a loopback or wildcard address, raw
requests on real sockets, and a ``shell`` call that must never run when the headers lie."""

from __future__ import annotations

import json
import shlex
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import count
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from fencecall.serve._guards import authority

from .test_server import _env, _serve_args, _text

TOKEN = "s3cret"
VERSION = "2025-11-25"  # a handshake-era protocol: initialize, then calls in a session
_ids = count(1)


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


@dataclass
class Served:
    """A running ``fencecall mcp serve --http SPELLING:PORT``, reached at ``address``."""

    spelling: str
    address: str
    port: int
    token: bool
    root: Path

    @property
    def genuine(self) -> str:
        return f"{self.spelling}:{self.port}"

    @property
    def url(self) -> str:
        """Where a client finds it: at the bound spelling; a wildcard bind, at loopback."""
        host = self.spelling
        if self.token:  # the wildcard binds, the only ones served with a token here
            host = f"[{self.address}]" if ":" in self.address else self.address
        return f"http://{host}:{self.port}/mcp"

    def marker(self) -> Path:
        """A fresh path for a shell call to create."""
        return self.root / f"marker-{next(_ids)}"


BINDS = {  # spelling: (address to connect to, serve with a token)
    "127.1": ("127.0.0.1", False),
    "127.0.0.1": ("127.0.0.1", False),
    "localhost": ("127.0.0.1", False),
    "[::1]": ("::1", False),
    "0.0.0.0": ("127.0.0.1", True),
    "[::]": ("::1", True),
}


@pytest.fixture(scope="module", params=list(BINDS))
def served(request: pytest.FixtureRequest,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    spelling = request.param
    address, token = BINDS[spelling]
    if ":" in address and not _ipv6_loopback():
        pytest.skip("no IPv6 loopback here")
    root = tmp_path_factory.mktemp("serve")
    (root / "workspace").mkdir()
    with socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET) as probe:
        probe.bind((address, 0))
        port = probe.getsockname()[1]
    extra = ["--token-env", "SERVE_TOKEN"] if token else []
    command = [sys.executable, *_serve_args(root / "workspace", "-y", "--http",
                                            f"{spelling}:{port}", *extra)]
    process = subprocess.Popen(command, env=_env(root, SERVE_TOKEN=TOKEN),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_listening(address, port, process)
        yield Served(spelling, address, port, token, root)
    finally:
        process.terminate()
        process.wait(15)


def _wait_listening(address: str, port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert process.poll() is None, f"server exited with {process.returncode}"
        try:
            socket.create_connection((address, port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listens on {address} port {port}")


Headers = list[tuple[str, str]]


def _post(served: Served, message: dict[str, object], headers: Headers, *,
          http: str = "1.1", address: str | None = None) -> tuple[int, dict[str, str]]:
    """One raw POST to /mcp with exactly ``headers`` (plus the body's own and the token):
    the status and the response headers."""
    body = json.dumps(message).encode()
    lines = [f"POST /mcp HTTP/{http}", *(f"{name}: {value}" for name, value in headers),
             "Content-Type: application/json", "Accept: application/json, text/event-stream",
             f"Content-Length: {len(body)}", "Connection: close"]
    if served.token:
        lines.append(f"Authorization: Bearer {TOKEN}")
    with socket.create_connection((address or served.address, served.port), timeout=30) as conn:
        conn.sendall("\r\n".join(lines).encode("latin-1") + b"\r\n\r\n" + body)
        reply = b""
        while chunk := conn.recv(65536):
            reply += chunk
    head = reply.partition(b"\r\n\r\n")[0].decode("latin-1").split("\r\n")
    fields = (line.partition(":") for line in head[1:])
    return int(head[0].split()[1]), {k.lower(): v.strip() for k, _, v in fields}


def _call_shell(served: Served, headers: Headers, marker: Path, **options: str) -> int:
    """What a hostile page would do: initialize, then ask ``shell`` to create ``marker``,
    every request with ``headers``. The first refusal's status, or 200 once the call ran."""
    initialize = {"jsonrpc": "2.0", "id": next(_ids), "method": "initialize",
                  "params": {"protocolVersion": VERSION, "capabilities": {},
                             "clientInfo": {"name": "page", "version": "1"}}}
    status, reply = _post(served, initialize, headers, **options)
    if status != 200:
        return status
    session = [("Mcp-Session-Id", reply["mcp-session-id"]), ("Mcp-Protocol-Version", VERSION)]
    initialized: dict[str, object] = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    call = {"jsonrpc": "2.0", "id": next(_ids), "method": "tools/call",
            "params": {"name": "shell",
                       "arguments": {"command": f"touch {shlex.quote(str(marker))}"}}}
    for message in (initialized, call):
        status, _ = _post(served, message, headers + session, **options)
        if status not in (200, 202):
            return status
    return 200


def _other_port(served: Served) -> int:
    """Another local port: a page served there is another origin."""
    return 8080 if served.port != 8080 else 8081


Forge = Callable[[Served], str]

FORGED_HOSTS: dict[str, Forge] = {
    "evil": lambda s: f"evil.example:{s.port}",
    "evil-without-port": lambda s: "evil.example",
    "another-local-port": lambda s: f"localhost:{_other_port(s)}",
    "userinfo-trick": lambda s: f"{s.genuine}@evil.example",
    "bracketed-name": lambda s: f"[evil.example]:{s.port}",
}


@pytest.mark.parametrize("forge", FORGED_HOSTS.values(), ids=list(FORGED_HOSTS))
def test_forged_host_is_refused_and_shell_never_runs(served: Served, forge: Forge) -> None:
    marker = served.marker()
    assert _call_shell(served, [("Host", forge(served))], marker) == 421
    assert not marker.exists()


def test_missing_host_is_refused(served: Served) -> None:
    marker = served.marker()
    assert _call_shell(served, [], marker, http="1.0") == 421  # HTTP/1.1 requires a Host
    assert not marker.exists()


FORGED_ORIGINS: dict[str, Forge] = {
    "evil": lambda s: "http://evil.example",
    "evil-with-port": lambda s: f"http://evil.example:{s.port}",
    "another-local-port": lambda s: f"http://localhost:{_other_port(s)}",
    "https": lambda s: f"https://{s.genuine}",
    "null": lambda s: "null",
}


@pytest.mark.parametrize("forge", FORGED_ORIGINS.values(), ids=list(FORGED_ORIGINS))
def test_forged_origin_is_refused_and_shell_never_runs(served: Served, forge: Forge) -> None:
    marker = served.marker()
    headers = [("Host", served.genuine), ("Origin", forge(served))]
    assert _call_shell(served, headers, marker) == 403
    assert not marker.exists()


@pytest.mark.parametrize("name", ["spelling", "127.0.0.1", "localhost", "[::1]"])
def test_genuine_host_and_origin_run_the_call(served: Served, name: str) -> None:
    host = served.genuine if name == "spelling" else f"{name}:{served.port}"
    marker = served.marker()
    assert _call_shell(served, [("Host", host), ("Origin", f"http://{host}")], marker) == 200
    assert marker.exists()


def test_official_client_at_the_bound_spelling(served: Served) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}"} if served.token else {}
    marker = served.marker()

    async def main() -> None:
        http = httpx2.AsyncClient(headers=headers)
        transport = streamable_http_client(served.url, http_client=http)
        async with Client(transport, mode="legacy") as client:
            command = f"touch {shlex.quote(str(marker))}"
            result = await client.call_tool("shell", {"command": command})
            assert not result.is_error, _text(result)

    anyio.run(main)
    assert marker.exists()


@pytest.mark.parametrize("served", ["0.0.0.0"], indirect=True)
def test_wildcard_bind_accepts_the_address_a_connection_arrived_at(served: Served) -> None:
    try:
        socket.create_connection(("127.0.0.2", served.port), timeout=2).close()
    except OSError:
        pytest.skip("127.0.0.2 is not reachable here")
    marker = served.marker()
    host = [("Host", f"127.0.0.2:{served.port}")]
    assert _call_shell(served, host, marker, address="127.0.0.2") == 200
    assert marker.exists()
    elsewhere = served.marker()  # the same Host on a connection to 127.0.0.1 is a lie
    assert _call_shell(served, host, elsewhere) == 421
    assert not elsewhere.exists()


@pytest.mark.parametrize("spelling", ["0.0.0.0", "[::]"])
def test_cli_refuses_a_non_loopback_bind_without_a_token(spelling: str,
                                                         tmp_path: Path) -> None:
    if spelling == "[::]" and not _ipv6_loopback():
        pytest.skip("no IPv6 here")
    (tmp_path / "workspace").mkdir()
    command = [sys.executable, *_serve_args(tmp_path / "workspace", "-y",
                                            "--http", f"{spelling}:0")]
    done = subprocess.run(command, env=_env(tmp_path), capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2
    assert "--token-env" in done.stderr and "not a loopback address" in done.stderr
    assert "serving" not in done.stderr


@pytest.mark.parametrize(("header", "parsed"), [
    ("LOCALHOST:8000", ("localhost", 8000)),  # names compare in lower case
    ("localhost", ("localhost", 80)),  # no port: http's
    ("[0:0::1]:8000", ("[::1]", 8000)),  # an address compares in its canonical form
    ("[::ffff:127.0.0.1]:8000", ("127.0.0.1", 8000)),
    ("127.1:8000", ("127.1", 8000)),  # a name unless it is the bound spelling
    ("evil.example@localhost:8000", None),
    ("[evil.example]:8000", None),
    ("[127.0.0.1]:8000", None),
    ("localhost:", None),
    ("localhost:8000/", None),
    ("", None),
])
def test_host_header_parsing(header: str, parsed: tuple[str, int] | None) -> None:
    assert authority(header) == parsed
