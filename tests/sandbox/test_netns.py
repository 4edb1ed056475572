"""One network namespace per conversation, with real bwrap, and the launcher or nsenter.

A server the model starts in one sandbox must be reachable from the conversation's other
sandboxes (read-only runs, the python tool), and from nothing else: not another conversation,
and the host's loopback must stay out of reach. The sandbox must still die with fencecall
when it is started through the launcher or nsenter, and where the launcher was not built and
nsenter is missing or fails, each sandbox keeps a loopback of its own, as before.
"""

from __future__ import annotations

import http.server
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from fencecall.sandbox import _bwrap as sandbox_module
from fencecall.sandbox import _launch
from fencecall.sandbox import _netns as netns
from fencecall.sandbox._bwrap import (
    Sandbox,
    SandboxPolicy,
    sandbox_support,
    share_network,
)
from fencecall.sandbox._netns import SharedNetwork
from fencecall.sandbox._processes import kill_group, start_process
from fencecall.sandbox.host_programs import host_program
from fencecall.tools.runtime.python_session import PythonSession

from ..processes import alive, running
from ..support import needs_bwrap

SUPPORT = sandbox_support()
SHARING = sandbox_module._network_probe() if SUPPORT.available else SUPPORT.reason
needs_sharing = pytest.mark.skipif(SHARING is not None,
                                   reason=f"no shared network namespace here: {SHARING}")
PORT = 8123
PAGE = "hello from a sandbox\n"
_FETCH = """\
import sys, time, urllib.request
port, patience = int(sys.argv[1]), float(sys.argv[2])
deadline = time.monotonic() + patience
while True:
    try:
        page = urllib.request.urlopen(f"http://127.0.0.1:{port}/hello.txt", timeout=3)
        print(page.read().decode(), end="")
        break
    except OSError as err:
        if time.monotonic() > deadline:
            sys.exit(f"unreachable: {err}")
        time.sleep(0.05)
"""
Serve = Callable[[Sandbox], None]


@pytest.fixture
def network(launch_mode: str) -> Iterator[SharedNetwork]:
    """The conversation's network, made and entered by the launcher or by bwrap and
    nsenter."""
    with SharedNetwork.create() as made:
        yield made


@pytest.fixture
def serve(workspace: Path) -> Iterator[Serve]:
    """Start ``python3 -m http.server PORT`` in a sandbox, serving the workspace's hello.txt;
    stopped at teardown."""
    (workspace / "hello.txt").write_text(PAGE)
    servers: list[subprocess.Popen[bytes]] = []

    def start(sandbox: Sandbox) -> None:
        argv = sandbox.command([sys.executable, "-m", "http.server", str(PORT),
                                "--bind", "127.0.0.1"], cwd=workspace)
        servers.append(start_process(argv, pass_fds=sandbox.pass_fds, cwd=workspace,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True))

    yield start
    for server in servers:
        kill_group(server)


def _fetch(sandbox: Sandbox, port: int = PORT, patience: float = 0.0) -> str | None:
    """The page at 127.0.0.1:``port`` as a process in ``sandbox`` gets it (retrying for
    ``patience`` seconds while the server starts), or None if it cannot connect."""
    done = subprocess.run(sandbox.command([sys.executable, "-c", _FETCH, str(port),
                                           str(patience)]),
                          pass_fds=sandbox.pass_fds, capture_output=True, text=True, timeout=30)
    if done.returncode == 0:
        return done.stdout
    assert "unreachable" in done.stderr, done.stderr  # the sandbox itself started
    return None


def _sandbox(workspace: Path, network: SharedNetwork | None) -> Sandbox:
    return Sandbox(SandboxPolicy.WORKSPACE_WRITE, (workspace,), shared_network=network)


@needs_bwrap
@needs_sharing
def test_the_sandboxes_of_one_network_share_its_loopback(
        workspace: Path, network: SharedNetwork, serve: Serve) -> None:
    sandbox = _sandbox(workspace, network)
    assert sandbox.command(["true"])[:len(network.prefix)] == list(network.prefix)
    serve(sandbox)
    assert _fetch(sandbox, patience=10) == PAGE
    assert _fetch(sandbox.read_only()) == PAGE
    python = PythonSession(workspace, sandbox=sandbox)
    try:
        reply = python.run("import urllib.request\n"
                           f"print(urllib.request.urlopen('http://127.0.0.1:{PORT}/hello.txt',"
                           " timeout=3).read().decode(), end='')")
    finally:
        python.close()
    assert reply.stdout == PAGE, reply
    assert _fetch(_sandbox(workspace, None)) is None  # the old way: a loopback of its own


@needs_bwrap
@needs_sharing
def test_networks_are_isolated_from_each_other_and_from_the_host(
        workspace: Path, network: SharedNetwork, serve: Serve) -> None:
    serve(_sandbox(workspace, network))
    assert _fetch(_sandbox(workspace, network), patience=10) == PAGE
    with SharedNetwork.create() as other:
        assert _fetch(_sandbox(workspace, other)) is None
    for name, fd in zip(("user", "net"), network.pass_fds, strict=True):
        assert os.fstat(fd).st_ino != os.stat(f"/proc/self/ns/{name}").st_ino
    host = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    thread = threading.Thread(target=host.serve_forever, daemon=True)
    thread.start()
    try:
        port = host.server_address[1]
        assert _fetch(Sandbox(SandboxPolicy.WORKSPACE_WRITE, (workspace,), network=True),
                      port) == PAGE  # the server does answer where the host's net is shared
        assert _fetch(_sandbox(workspace, network), port) is None
    finally:
        host.shutdown()
        host.server_close()


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()
        self.wfile.write(PAGE.encode())

    def log_message(self, format: str, *args: object) -> None:
        pass


_PARENT = """\
import sys, time
from fencecall.sandbox import _launch
from fencecall.sandbox._netns import SharedNetwork
from fencecall.sandbox.host_programs import host_program
from fencecall.sandbox._processes import start_process
from fencecall.sandbox._bwrap import Sandbox, SandboxPolicy

if sys.argv[2] == "util-linux":
    _launch.PROGRAM = None
sandbox = Sandbox(SandboxPolicy.READ_ONLY, shared_network=SharedNetwork.create())
argv = sandbox.command([sys.executable, "-c",
                        "import time; print('up', flush=True); time.sleep(600)", sys.argv[1]])
assert argv[0].endswith("nsenter" if sys.argv[2] == "util-linux" else "fencecall-launch")
start_process(argv, pass_fds=sandbox.pass_fds, start_new_session=True)
time.sleep(600)
"""


@needs_bwrap
@needs_sharing
def test_a_sandbox_that_joins_the_network_dies_with_its_parent(launch_mode: str) -> None:
    marker = f"fencecall-netns-{os.getpid()}-{time.monotonic_ns()}"
    parent = subprocess.Popen([sys.executable, "-c", _PARENT, marker, launch_mode],
                              stdout=subprocess.PIPE)
    assert parent.stdout is not None
    try:
        assert select.select([parent.stdout], [], [], 30)[0], "the sandbox did not start"
        assert parent.stdout.readline() == b"up\n"
        inside = [pid for pid in running(marker) if pid != parent.pid]
        assert len(inside) >= 3  # bwrap, its init in the pid namespace, the command
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        parent.stdout.close()
    deadline = time.monotonic() + 10
    while [pid for pid in inside if alive(pid)] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [pid for pid in inside if alive(pid)]


@needs_bwrap
def test_without_nsenter_each_sandbox_keeps_a_loopback_of_its_own(
        monkeypatch: pytest.MonkeyPatch, workspace: Path) -> None:
    monkeypatch.setattr(_launch, "PROGRAM", None)
    monkeypatch.setattr(netns, "host_program", lambda name, *rest: (
        None if name == "nsenter" else host_program(name, *rest)))
    with pytest.raises(OSError, match="nsenter"):
        SharedNetwork.create()
    reason = sandbox_module._network_probe.__wrapped__()
    assert reason is not None and "nsenter" in reason
    monkeypatch.setattr(sandbox_module, "_network_probe", lambda: reason)
    sandbox, why = share_network(_sandbox(workspace, None))
    assert sandbox == _sandbox(workspace, None) and sandbox.pass_fds == ()
    assert why is not None and "loopback of its own" in why and "nsenter" in why
    assert subprocess.run(sandbox.command(["true"])).returncode == 0


@needs_bwrap
def test_a_failing_nsenter_is_explained(monkeypatch: pytest.MonkeyPatch,
                                        tmp_path: Path) -> None:
    failing = tmp_path / "nsenter"
    failing.write_text("#!/bin/sh\necho 'nsenter: reassociate to namespace failed' >&2\n"
                       "exit 1\n")
    failing.chmod(0o755)
    monkeypatch.setattr(_launch, "PROGRAM", None)
    monkeypatch.setattr(netns, "host_program", lambda name, *rest: (
        str(failing) if name == "nsenter" else host_program(name, *rest)))
    reason = sandbox_module._network_probe.__wrapped__()
    assert reason is not None and "reassociate to namespace failed" in reason


@needs_bwrap
@needs_sharing
def test_share_network_makes_one_only_where_it_is_needed(workspace: Path) -> None:
    off = Sandbox(SandboxPolicy.OFF, (workspace,))
    assert share_network(off) == (off, "the sandbox is off, so commands use the host's network")
    opened = Sandbox(SandboxPolicy.WORKSPACE_WRITE, (workspace,), network=True)
    assert share_network(opened)[0] is opened
    shared, why = share_network(_sandbox(workspace, None))
    assert why is None and shared.shared_network is not None
    with shared.shared_network as network:
        assert share_network(shared) == (shared, None)
        assert shared.read_only().shared_network is network
        assert shared.read_only().pass_fds == network.pass_fds
        ignored = Sandbox(SandboxPolicy.WORKSPACE_WRITE, (workspace,), network=True,
                          shared_network=network)
        assert ignored.pass_fds == () and "nsenter" not in ignored.command(["true"])[0]
    network.close()  # again: nothing happens
    with pytest.raises(ValueError, match="closed"):
        shared.command(["true"])


def _stuck_bwrap(folder: Path) -> Path:
    """A stand-in for bwrap that hangs before doing anything (as a real one can before it
    sets its own parent-death signal), found in ``ps`` by its path."""
    fake = folder / "bwrap"
    fake.write_text(f"#!{sys.executable}\nimport time\ntime.sleep(60)\n")
    fake.chmod(0o755)
    return fake


def _argv0(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
    except OSError:
        return ""


def _await_gone(pids: list[int], patience: float = 10.0) -> list[int]:
    """The pids still alive after up to ``patience`` seconds."""
    deadline = time.monotonic() + patience
    while [pid for pid in pids if alive(pid)] and time.monotonic() < deadline:
        time.sleep(0.05)
    return [pid for pid in pids if alive(pid)]


_HOLD = """\
import sys
from fencecall.sandbox import _netns as netns
netns._hold_namespaces(sys.argv[1], "cat")
"""


def test_a_holder_dies_with_fencecall_even_before_bwrap_sets_its_own_signal(
        tmp_path: Path) -> None:
    fake = _stuck_bwrap(tmp_path)
    parent = subprocess.Popen([sys.executable, "-c", _HOLD, str(fake)])
    holders: list[int] = []
    try:
        deadline = time.monotonic() + 10
        while not holders and time.monotonic() < deadline:
            time.sleep(0.05)  # the fake itself: setpriv's argv names it before its signal is set
            holders = [pid for pid in running(str(fake)) if pid != parent.pid
                       and not _argv0(pid).endswith("setpriv")]
        assert holders, "the holder did not start"
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    try:
        assert _await_gone(holders) == []
    finally:
        for pid in holders:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


_ORPHAN = """\
import os, subprocess, sys
from fencecall.sandbox import _netns as netns
for _ in range(2):
    holder = subprocess.Popen(netns._holder_argv(sys.argv[1], "cat", 0),
                              start_new_session=True, stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    print(holder.pid)
"""


def test_holders_a_dead_fencecall_left_are_swept_and_no_others(tmp_path: Path) -> None:
    fake = _stuck_bwrap(tmp_path)
    left = subprocess.run([sys.executable, "-c", _ORPHAN, str(fake)], capture_output=True,
                          text=True, check=True)  # it exits: its holders are left behind
    orphans = [int(pid) for pid in left.stdout.split()]
    mine = [subprocess.Popen(netns._holder_argv(str(fake), "cat", 0),
                             stdin=subprocess.DEVNULL) for _ in range(2)]
    unmarked = subprocess.Popen([str(fake), "--setenv", "FENCECALL", "1"])
    try:
        assert len(orphans) == 2 and all(alive(orphan) for orphan in orphans)
        swept = netns.sweep_holders()
        assert sorted(set(swept) & {*orphans, *(p.pid for p in mine), unmarked.pid}) == \
            sorted(orphans)
        assert _await_gone(orphans) == []
        assert all(proc.poll() is None for proc in (*mine, unmarked))
    finally:
        for proc in (*mine, unmarked):
            proc.kill()
            proc.wait()
        for orphan in orphans:
            if alive(orphan):
                os.kill(orphan, signal.SIGKILL)
