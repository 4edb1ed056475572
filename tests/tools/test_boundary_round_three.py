"""Issue 44's attacks on the shell, as a hostile tester ran them: a stopped command that ran
the rest of its line, unconfirmed runs that reached the network or ran a repository's
programs, floods that filled the disk, bombs without a limit, and a read-only sandbox that
wrote to the host. Real bash, real bwrap, real git, real listeners."""

from __future__ import annotations

import contextlib
import http.server
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from fencecall.tools.runtime.jobs import JobManager
from fencecall.tools.runtime.limits import GiB, MiB, ResourceLimits
from fencecall.tools.runtime.sandbox import Sandbox, SandboxPolicy, sandbox_support
from fencecall.tools.runtime.shell_session import ShellSession

SUPPORT = sandbox_support()
needs_bwrap = pytest.mark.skipif(not SUPPORT.available,
                                 reason=f"bubblewrap sandbox unavailable: {SUPPORT.reason}")
POLICIES = [pytest.param(SandboxPolicy.OFF, id="unsandboxed"),
            pytest.param(SandboxPolicy.WORKSPACE_WRITE, id="sandboxed", marks=needs_bwrap)]


@pytest.fixture
def shells(workspace: Path) -> Iterator[list[ShellSession]]:
    made: list[ShellSession] = []
    yield made
    for shell in made:
        shell.close()


def _shell(made: list[ShellSession], workspace: Path, policy: SandboxPolicy, *,
           network: bool = False, limits: ResourceLimits | None = None,
           jobs: JobManager | None = None) -> ShellSession:
    sandbox = Sandbox(policy, (workspace,), network, limits=limits or ResourceLimits())
    shell = ShellSession(workspace, env={"PATH": os.environ["PATH"], "HOME": str(workspace)},
                         sandbox=sandbox, jobs=jobs)
    made.append(shell)
    return shell


# -- 1. stopping a call stops its whole command -------------------------------------------

@pytest.mark.parametrize("policy", POLICIES)
def test_a_timeout_stops_the_rest_of_the_line(policy: SandboxPolicy, workspace: Path,
                                              shells: list[ShellSession]) -> None:
    shell = _shell(shells, workspace, policy)
    shell.run("mkdir -p sub && cd sub && export KEPT=yes")
    result = shell.run("sleep 4; echo T > after_timeout.txt", timeout=1)
    assert result.timed_out and result.exit_code is None
    assert result.stopped_at is not None and "sleep 4" in result.stopped_at
    time.sleep(3.5)
    assert not (workspace / "sub" / "after_timeout.txt").exists()
    after = shell.run("pwd; echo $KEPT")
    assert after.stdout == f"{workspace / 'sub'}\nyes\n"


@pytest.mark.parametrize("policy", POLICIES)
def test_loops_and_chains_stop_too(policy: SandboxPolicy, workspace: Path,
                                   shells: list[ShellSession]) -> None:
    shell = _shell(shells, workspace, policy)
    shell.run("for i in 1 2 3; do sleep 1; touch loop$i; done", timeout=1.5)
    shell.run("sleep 3 && touch chained", timeout=0.5)
    time.sleep(3)
    assert sorted(p.name for p in workspace.iterdir()) == ["loop1"]


@pytest.mark.parametrize("policy", POLICIES)
def test_ctrl_c_stops_the_rest_of_the_line(policy: SandboxPolicy, workspace: Path,
                                           shells: list[ShellSession]) -> None:
    shell = _shell(shells, workspace, policy)
    shell.run("export KEPT=yes")
    timer = threading.Timer(1.0, signal.pthread_kill,
                            (threading.main_thread().ident, signal.SIGINT))
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        shell.run("sleep 3; echo T > after_interrupt.txt", timeout=30)
    time.sleep(3)
    assert not (workspace / "after_interrupt.txt").exists()
    assert shell.run("echo $KEPT").stdout == "yes\n"


@needs_bwrap
def test_a_stopped_read_only_run_reports_where(workspace: Path,
                                               shells: list[ShellSession]) -> None:
    shell = _shell(shells, workspace, SandboxPolicy.WORKSPACE_WRITE)
    result = shell.run("sleep 5; ls", timeout=1, read_only=True)
    assert result.timed_out and result.stopped_at is not None and "sleep 5" in result.stopped_at


# -- 2. runs nobody confirmed are closed ---------------------------------------------------

class _Listener(http.server.BaseHTTPRequestHandler):
    hits: ClassVar[list[str]]

    def do_GET(self) -> None:
        self.hits.append(self.path)
        self.send_response(404)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def listener() -> Iterator[tuple[int, list[str]]]:
    hits: list[str] = []
    handler = type("Handler", (_Listener,), {"hits": hits})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1], hits
    server.shutdown()
    server.server_close()


@needs_bwrap
def test_an_unconfirmed_run_has_no_network_even_with_network_on(
        workspace: Path, shells: list[ShellSession],
        listener: tuple[int, list[str]]) -> None:
    port, hits = listener
    shell = _shell(shells, workspace, SandboxPolicy.WORKSPACE_WRITE, network=True)
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    fetch = (f"python3 -c \"import urllib.request as u; u.urlopen('http://127.0.0.1:{port}/py',"
             f" timeout=3)\"")
    shell.run(f"git remote show http://127.0.0.1:{port}/X; {fetch}", read_only=True)
    assert hits == []
    shell.run(fetch)  # a confirmed call has the network it was given
    assert hits == ["/py"]


def _hostile_repository(workspace: Path, port: int) -> None:
    """A checkout whose .git/config runs a program from every read-only git command."""
    def run(*args: str) -> None:
        subprocess.run(["git", "-C", str(workspace), *args], check=True, capture_output=True)

    run("init", "-q")
    (workspace / "f.txt").write_text("a\n")
    (workspace / ".gitattributes").write_text("f.txt filter=evil diff=evil\n")
    run("add", ".")
    run("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    (workspace / "f.txt").write_text("a\nb\n")
    os.utime(workspace / "f.txt", (1e9, 1e9))  # racy stat: status hashes it through clean
    evil = workspace / ".git" / "evil.sh"
    evil.write_text(f"echo PWNED-$1 >&2\npython3 -c \"import urllib.request as u; "
                    f"u.urlopen('http://127.0.0.1:{port}/'+'$1', timeout=2)\" 2>/dev/null\n"
                    "cat\n")
    run_evil = {what: f"sh {evil} {what}" for what in
                ("external", "fsmonitor", "clean", "textconv", "command", "gpg")}
    with (workspace / ".git" / "config").open("a") as config:
        config.write(f'[diff]\n\texternal = "{run_evil["external"]}"\n'
                     f'[core]\n\tfsmonitor = "{run_evil["fsmonitor"]}"\n'
                     f'[filter "evil"]\n\tclean = "{run_evil["clean"]}"\n'
                     f'[diff "evil"]\n\ttextconv = "{run_evil["textconv"]}"\n'
                     f'\tcommand = "{run_evil["command"]}"\n'
                     f'[log]\n\tshowSignature = true\n[gpg]\n\tprogram = "{run_evil["gpg"]}"\n')
    hook = workspace / ".git" / "hooks" / "post-index-change"
    hook.write_text("#!/bin/sh\necho PWNED-hook >&2\n")
    hook.chmod(0o755)


@needs_bwrap
def test_a_hostile_git_config_runs_nothing_unconfirmed(
        workspace: Path, shells: list[ShellSession],
        listener: tuple[int, list[str]]) -> None:
    port, hits = listener
    _hostile_repository(workspace, port)
    shell = _shell(shells, workspace, SandboxPolicy.WORKSPACE_WRITE, network=True)
    for command in ("git status", "git diff", "git diff --stat", "git log -p -1",
                    "git show --show-signature", "ls | xargs git diff --", "/usr/bin/git diff"):
        result = shell.run(command, read_only=True)
        assert "PWNED" not in result.stdout + result.stderr, command
    assert "f.txt" in shell.run("git status --short", read_only=True).stdout
    assert hits == []
    # the same command, confirmed, runs what the repository says: the guard is what differs
    confirmed = shell.run("git status")
    assert "PWNED" in confirmed.stderr


# -- 3. one output and resource cap for every tool process ---------------------------------

class _Sizes:
    """The biggest size on disk the unnamed capture files of this process reached."""

    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> _Sizes:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _watch(self) -> None:
        while not self._stop.wait(0.01):
            total = 0
            for name in os.listdir("/proc/self/fd"):
                with contextlib.suppress(OSError):
                    if "(deleted)" in os.readlink(f"/proc/self/fd/{name}") or \
                            "/#" in os.readlink(f"/proc/self/fd/{name}"):
                        total += os.fstat(int(name)).st_blocks * 512
            self.peak = max(self.peak, total)


@needs_bwrap
def test_an_unconfirmed_flood_stops_at_the_cap(workspace: Path,
                                               shells: list[ShellSession]) -> None:
    limits = ResourceLimits(output=8 * MiB)
    shell = _shell(shells, workspace, SandboxPolicy.WORKSPACE_WRITE, limits=limits)
    started = time.monotonic()
    with _Sizes() as sizes:
        result = shell.run("head -c 2G /dev/zero", timeout=60, read_only=True)
    assert result.overflowed and not result.timed_out
    assert time.monotonic() - started < 20
    assert sizes.peak <= 2 * 8 * MiB + MiB  # stdout and stderr, each capped by RLIMIT_FSIZE


@needs_bwrap
def test_an_unconfirmed_run_fills_no_memory_through_its_tmpfs(
        workspace: Path, shells: list[ShellSession]) -> None:
    shell = _shell(shells, workspace, SandboxPolicy.WORKSPACE_WRITE,
                   limits=ResourceLimits(tmp=4 * MiB))
    result = shell.run("head -c 64M /dev/zero > $TMPDIR/x; du -k $TMPDIR/x; "
                       "head -c 64M /dev/zero > /dev/shm/y; du -k /dev/shm/y", read_only=True)
    sizes = [int(line.split()[0]) for line in result.stdout.splitlines()]
    assert sizes and all(size <= 4 * 1024 for size in sizes)
    assert "No space left" in result.stderr or "File too large" in result.stderr


@pytest.mark.parametrize("policy", POLICIES)
def test_a_job_is_stopped_by_the_blocks_it_wrote(policy: SandboxPolicy, workspace: Path,
                                                 shells: list[ShellSession],
                                                 tmp_path: Path) -> None:
    jobs = JobManager(lambda: tmp_path, output_limit=1000, disk_limit=16 * MiB,
                      background_after=0.2)
    shell = _shell(shells, workspace, policy, jobs=jobs)
    with _Sizes() as sizes:
        result = shell.run("sleep 0.5; head -c 3G /dev/zero", timeout=60, background_after=0.2)
        assert result.job is not None
        view = jobs.wait(result.job, 30)
    jobs.close()
    assert view.state == "overflowed"
    assert sizes.peak < GiB  # counted by bytes copied, it reached gigabytes


@pytest.mark.parametrize("policy", POLICIES)
def test_a_fork_bomb_meets_the_process_limit(policy: SandboxPolicy, workspace: Path,
                                            shells: list[ShellSession]) -> None:
    shell = _shell(shells, workspace, policy, limits=ResourceLimits(processes=64))
    bomb = ("import os, time\nmade = 0\ntry:\n    for _ in range(300):\n"
            "        if os.fork() == 0:\n            time.sleep(2)\n            os._exit(0)\n"
            "        made += 1\nexcept OSError:\n    print('refused after', made)\n")
    (workspace / "bomb.py").write_text(bomb)
    result = shell.run("python3 bomb.py", timeout=30)
    assert "refused after" in result.stdout
    assert int(result.stdout.split()[-1]) < 64


@pytest.mark.parametrize("policy", POLICIES)
def test_a_memory_bomb_meets_the_memory_limit(policy: SandboxPolicy, workspace: Path,
                                             shells: list[ShellSession]) -> None:
    shell = _shell(shells, workspace, policy, limits=ResourceLimits(memory=256 * MiB))
    result = shell.run("python3 -c 'x = bytearray(1024**3); x[::4096] = b\"1\" * len(x[::4096])"
                       "; print(\"allocated\")'", timeout=60)
    assert "allocated" not in result.stdout and result.exit_code != 0
    assert shell.run("echo fine").stdout == "fine\n"


# -- 4. read-only writes nothing on the host -----------------------------------------------

def _host_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


@needs_bwrap
def test_the_read_only_sandbox_writes_nothing_on_the_host(workspace: Path,
                                                          shells: list[ShellSession]) -> None:
    shell = _shell(shells, workspace, SandboxPolicy.READ_ONLY)
    scratch = shell._dir
    for target in (f"{scratch}/x", f"{scratch}/../x", "$TMPDIR/x", "/tmp/x"):
        shell.run(f"head -c 10M /dev/zero > {target}")
    assert _host_bytes(scratch) < 64 * 1024  # the scripts fencecall wrote, no more
    assert not any(workspace.iterdir())
