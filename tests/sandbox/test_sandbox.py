"""The bubblewrap sandbox of the shell and python tools, attacked with real bwrap.

The sandbox is the boundary against a hostile model, so each test tries to get past it: write
outside the workspace by any route, read fencecall's secrets, reach the network, leave
processes behind, or trick fencecall itself (which reads the sandbox's output files) into
following a symlink. Tests that need bwrap are skipped, with the reason, where it cannot run.
"""

from __future__ import annotations

import http.server
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from fencecall.sandbox import _bwrap as sandbox_module
from fencecall.sandbox._bwrap import (
    Sandbox,
    SandboxPolicy,
    SandboxSupport,
    choose_sandbox,
)
from fencecall.tools.runtime.python_session import PythonSession
from fencecall.tools.runtime.shell_session import ShellSession

from ..processes import running
from ..support import needs_bwrap

SECRET = "fake-secret-" + secrets.token_hex(8)
StartShell = Callable[..., ShellSession]


def _path_env() -> dict[str, str]:
    return {"PATH": os.environ["PATH"]}


@pytest.fixture
def start_shell(workspace: Path) -> Iterator[StartShell]:
    """Start sandboxed shells in the workspace (closed at teardown); the environment holds
    PATH only, as fencecall passes a filtered one."""
    shells: list[ShellSession] = []

    def start(policy: SandboxPolicy = SandboxPolicy.WORKSPACE_WRITE, *,
              network: bool = False) -> ShellSession:
        shell = ShellSession(workspace, env=_path_env(),
                             sandbox=Sandbox(policy, (workspace,), network))
        shells.append(shell)
        return shell

    yield start
    for shell in shells:
        shell.close()


@pytest.fixture
def outside() -> Iterator[Path]:
    """A folder outside the workspace that the sandbox sees (read-only): not under /tmp,
    which is private in there, so a failed write is the read-only mount's doing."""
    folder = Path(tempfile.mkdtemp(prefix="fencecall-outside-", dir="/var/tmp"))
    (folder / "existing").write_text("original\n")
    yield folder
    shutil.rmtree(folder)


def _running(fragment: str) -> list[int]:
    """Host pids whose command line contains ``fragment`` (arguments joined by spaces)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if fragment in cmdline:
            found.append(int(entry.name))
    return found


def _wait_gone(fragment: str, seconds: float = 5.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while (left := _running(fragment)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def _wait_running(fragment: str, count: int, seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while len(_running(fragment)) < count and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(_running(fragment)) >= count, f"{fragment!r} never started"


def _sleep_tag() -> str:
    """A sleep duration no other process uses, to find this test's sleeps on the host."""
    return str(900_000 + secrets.randbelow(90_000) * 10)


# -- the sandbox description itself (no bwrap needed) ------------------------------------


def test_off_leaves_the_command_alone() -> None:
    off = Sandbox(SandboxPolicy.OFF, (Path("/w"),))
    assert not off.enforced
    assert off.command(["bash", "-c", "x"], scratch=[Path("/s")], cwd=Path("/w")) == [
        "bash", "-c", "x"]
    assert off.read_only() is off


def test_argv_isolates_and_mounts_parents_first(tmp_path: Path) -> None:
    workspace, scratch = tmp_path / "ws", tmp_path / "scratch"
    argv = Sandbox(SandboxPolicy.WORKSPACE_WRITE, (workspace,)).command(
        ["bash"], scratch=[scratch], cwd=workspace)
    joined = " ".join(argv)
    for flag in ("--unshare-all", "--die-with-parent", "--cap-drop ALL", "--proc /proc",
                 "--dev /dev"):
        assert flag in joined
    assert "--share-net" not in argv
    assert joined.index("--ro-bind / /") < joined.index("--tmpfs /tmp") < joined.index(
        f"--bind-try {workspace} {workspace}")
    assert f"--bind {scratch} {scratch}" in joined
    assert argv[-2:] == ["--", "bash"] and f"--chdir {workspace}" in joined


def test_read_only_binds_roots_read_only_and_has_no_network(tmp_path: Path) -> None:
    """A run nobody confirmed gets no network, whatever --network says."""
    argv = Sandbox(SandboxPolicy.WORKSPACE_WRITE, (tmp_path,), network=True).read_only().command(
        ["true"], scratch=[tmp_path / "scratch"])
    joined = " ".join(argv)
    assert f"--ro-bind-try {tmp_path} {tmp_path}" in joined
    assert f"--bind {tmp_path / 'scratch'}" in joined
    assert "--share-net" not in argv


def test_a_given_tmp_folder_is_made_read_only_after_the_binds_below_it(tmp_path: Path) -> None:
    box = Sandbox(SandboxPolicy.WORKSPACE_WRITE, (Path("/tmp/ws"),), tmp=tmp_path)
    writable = " ".join(box.command(["true"], scratch=[Path("/tmp/scratch")]))
    assert f"--bind {tmp_path} /tmp" in writable and "--remount-ro /tmp" not in writable
    read_only = box.read_only().command(["true"], scratch=[Path("/tmp/scratch")])
    joined = " ".join(read_only)
    assert joined.index(f"--bind {tmp_path} /tmp") < joined.index("--bind /tmp/scratch")
    assert joined.index("--ro-bind-try /tmp/ws") < joined.index("--remount-ro /tmp ")


def test_a_root_of_slash_cannot_bring_back_the_hosts_proc() -> None:
    joined = " ".join(Sandbox(SandboxPolicy.WORKSPACE_WRITE, (Path("/"),)).command(["true"]))
    assert joined.index("--bind-try / /") < joined.index("--proc /proc")
    assert joined.index("--bind-try / /") < joined.index("--tmpfs /tmp")


def test_unavailable_sandbox_falls_back_to_off_with_a_warning(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox_module, "sandbox_support",
                        lambda: SandboxSupport(False, "bwrap is missing; apt-get install -y x"))
    chosen, warning = choose_sandbox("workspace-write", [Path("/w")])
    assert chosen.policy is SandboxPolicy.OFF and chosen.writable == (Path("/w"),)
    assert warning is not None and "WITHOUT" in warning and "apt-get install" in warning
    assert choose_sandbox(SandboxPolicy.OFF, []) == (Sandbox(SandboxPolicy.OFF), None)
    with pytest.raises(ValueError):
        choose_sandbox("everything-goes", [])


def test_probe_explains_a_missing_or_failing_bwrap(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    monkeypatch.setattr(sandbox_module, "host_program", lambda name: None)
    missing, _ = sandbox_module._probe.__wrapped__()
    assert not missing.available and "apt-get install -y bubblewrap" in missing.reason
    failing = tmp_path / "bwrap"
    failing.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\n"
                       "exit 1\n")
    failing.chmod(0o755)
    monkeypatch.setattr(sandbox_module, "host_program", lambda name: str(failing))
    broken, _ = sandbox_module._probe.__wrapped__()
    assert not broken.available
    assert "No permissions to create new namespace" in broken.reason
    assert "apt-get install -y bubblewrap" in broken.reason


def test_read_only_without_an_enforced_sandbox_is_refused(workspace: Path) -> None:
    shell = ShellSession(workspace)
    try:
        with pytest.raises(ValueError, match="read_only needs an enforced sandbox"):
            shell.run("ls", read_only=True)
    finally:
        shell.close()


# -- writes ---------------------------------------------------------------------------------


@needs_bwrap
def test_workspace_write_allows_the_workspace(start_shell: StartShell, workspace: Path) -> None:
    result = start_shell().run("echo hi > a && mkdir d && cp a d/b && git init -q && "
                               "echo private > /tmp/p && cat /tmp/p && id -u")
    assert result.exit_code == 0, result.stderr
    assert (workspace / "d" / "b").read_text() == "hi\n" and (workspace / ".git").is_dir()
    assert result.stdout == f"private\n{os.getuid()}\n"  # fencecall's own uid (root stays root)


WRITE_TRICKS = [
    "echo x > {o}/new",
    "echo x >> {o}/existing",
    "cp /etc/passwd {o}/new",
    "sort -o {o}/existing /etc/passwd",
    "echo x | tee {o}/new {o}/existing",
    "python3 -c \"open('{o}/new', 'w').write('x')\"",
    "python3 -c \"import os; os.rename('{o}/existing', '{o}/moved')\"",
    "ln -s {o}/existing link; echo x > link",
    "ln -s {o} dir; echo x > dir/new",
    "echo x > {rel}/new",
    "echo x > /proc/self/root{o}/new",
    "echo x > /proc/1/cwd/{rel}/new",
    "ln {o}/existing hard; echo x >> hard",
    "mv {o}/existing here",
    "rm -f {o}/existing",
    "chmod 777 {o}/existing",
    "touch -d 2000-01-01 {o}/existing",
    "mount -o remount,rw / && echo x > {o}/new",
    "mount -o remount,bind,rw / && echo x > {o}/new",
    "mount -o remount,bind,rw {o} && echo x > {o}/new",
    "mount --bind . {o}",
    "umount -l {o}; umount -l /; echo x > {o}/new",
    "unshare -rm sh -c 'mount -o remount,rw /; echo x > {o}/new'",
    "echo x > /etc/fencecall-sandbox-test",
]


@needs_bwrap
@pytest.mark.parametrize("trick", WRITE_TRICKS)
def test_workspace_write_blocks_every_write_outside(start_shell: StartShell, workspace: Path,
                                                    outside: Path, trick: str) -> None:
    before = (outside / "existing").stat()
    command = trick.format(o=outside, rel=os.path.relpath(outside, workspace))
    start_shell().run(command)
    assert sorted(path.name for path in outside.iterdir()) == ["existing"]
    after = (outside / "existing").stat()
    assert (outside / "existing").read_text() == "original\n"
    assert (after.st_mode, after.st_mtime_ns) == (before.st_mode, before.st_mtime_ns)
    assert not Path("/etc/fencecall-sandbox-test").exists()


@needs_bwrap
def test_kernel_settings_cannot_be_written(start_shell: StartShell) -> None:
    """As root, sysctls are guarded by the uid alone; kernel.core_pattern would let a
    command run a program as root outside the sandbox. (The write puts back the value read.)"""
    shell = start_shell()
    result = shell.run('v=$(cat /proc/sys/kernel/core_pattern) && '
                       'echo "$v" > /proc/sys/kernel/core_pattern')
    assert result.exit_code != 0 and "Read-only file system" in result.stderr
    writable = shell.run("find /proc/sys /sys -writable -type f 2>/dev/null | head -3")
    assert writable.stdout == ""


@needs_bwrap
def test_tmp_is_private(start_shell: StartShell, tmp_path: Path) -> None:
    name = f"fencecall-private-{secrets.token_hex(4)}"
    (tmp_path / "host-only").write_text("host")
    result = start_shell().run(f"echo x > /tmp/{name} && ls /tmp; cat {tmp_path}/host-only")
    assert name in result.stdout and "host" not in result.stdout
    assert not (Path("/tmp") / name).exists()


READ_ONLY_TRICKS = [
    "touch new",
    "echo x > keep.txt",
    "echo x >> keep.txt",
    "sort -o keep.txt keep.txt",
    "git init -q",
    "mkdir d",
    "rm -f keep.txt",
    "mv keep.txt moved",
    "cp keep.txt copy",
    "ln -s keep.txt link",
    "python3 -c \"open('new', 'w').write('x')\"",
    "mount -o remount,rw {w} && touch new",
]


@needs_bwrap
@pytest.mark.parametrize("how", ["read-only session", "read_only run"])
@pytest.mark.parametrize("trick", READ_ONLY_TRICKS)
def test_read_only_blocks_every_write_workspace_included(start_shell: StartShell,
                                                         workspace: Path, how: str,
                                                         trick: str) -> None:
    (workspace / "keep.txt").write_text("original\n")
    command = trick.format(w=workspace)
    if how == "read-only session":
        result = start_shell(SandboxPolicy.READ_ONLY).run(command)
    else:
        result = start_shell().run(command, read_only=True)
    assert result.exit_code != 0 or not result.stdout  # failed, or did nothing visible
    assert sorted(path.name for path in workspace.iterdir()) == ["keep.txt"]
    assert (workspace / "keep.txt").read_text() == "original\n"


# -- the read_only one-shot run ---------------------------------------------------------------


@needs_bwrap
def test_an_abort_ends_a_read_only_run_too(start_shell: StartShell) -> None:
    shell = start_shell()
    results: list[object] = []
    worker = threading.Thread(target=lambda: results.append(
        shell.run("sleep 3232.5", timeout=120, read_only=True)))
    started = time.monotonic()
    worker.start()
    while not running("3232.5") and time.monotonic() - started < 30:
        time.sleep(0.01)
    assert running("3232.5")
    shell.abort()
    worker.join(30)
    assert not worker.is_alive() and running("3232.5") == []
    assert time.monotonic() - started < 60  # ended by the abort, not by its timeout


@needs_bwrap
def test_read_only_run_sees_the_shells_state_but_cannot_change_it(start_shell: StartShell,
                                                                  workspace: Path) -> None:
    (workspace / "sub").mkdir()
    shell = start_shell()
    shell.run("cd sub && export GREETING='hi there' && echo content > f")
    result = shell.run("pwd; echo $GREETING; cat f; echo oops >&2; exit 3", read_only=True)
    assert result.stdout == f"{workspace / 'sub'}\nhi there\ncontent\n"
    assert result.stderr == "oops\n" and result.exit_code == 3 and not result.timed_out
    shell.run("export NOT_EXPORTED_BACK=1")
    changed = shell.run("cd /; export GREETING=changed; unset PATH; kill -9 -1; pkill bash",
                        read_only=True)
    assert changed.exit_code is not None
    after = shell.run("pwd; echo $GREETING; echo $NOT_EXPORTED_BACK")
    assert after.stdout == f"{workspace / 'sub'}\nhi there\n1\n" and after.restarted is None


@needs_bwrap
def test_read_only_run_sees_the_shells_tmp_read_only_and_has_its_own_tmpdir(
        start_shell: StartShell) -> None:
    shell = start_shell()
    shell.run("mkdir /tmp/work && echo data > /tmp/work/f && cd /tmp/work")
    result = shell.run("pwd; cat f; f=$(mktemp) && echo temp > $f && cat $f; echo x > /tmp/g",
                       read_only=True)
    assert result.stdout == "/tmp/work\ndata\ntemp\n" and "Read-only" in result.stderr
    assert shell.run("ls /tmp/work; ls /tmp/g").stdout == "f\n"


@needs_bwrap
def test_read_only_run_cannot_plant_anything_for_the_shell(start_shell: StartShell) -> None:
    """The run shares the shell's scratch folder (writable): whatever it leaves there is
    never used, since every name the shell uses is new."""
    shell = start_shell()
    shell.run("export KEPT=yes")
    shell.run('d=$(dirname "$(readlink /proc/$$/fd/1)"); for f in "$d"/*; do rm -rf "$f"; '
              'ln -s /etc/passwd "$f"; mkdir -p "$f.sh" "$f.out"; done', read_only=True)
    after = shell.run("echo $KEPT; echo err >&2")
    assert (after.stdout, after.stderr, after.restarted) == ("yes\n", "err\n", None)


@needs_bwrap
def test_read_only_run_times_out_and_leaves_nothing(start_shell: StartShell) -> None:
    tag = _sleep_tag()
    shell = start_shell()
    started = time.monotonic()
    result = shell.run(f"echo partial; sleep {tag} & setsid sleep {tag} & sleep {tag}",
                       timeout=1, read_only=True)
    assert time.monotonic() - started < 5
    assert result.timed_out and result.exit_code is None and result.stdout == "partial\n"
    assert _wait_gone(f"sleep {tag}") == []
    assert shell.run("echo alive").stdout == "alive\n"


# -- network ---------------------------------------------------------------------------------


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"hello from the host")

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def http_port() -> Iterator[int]:
    """A real HTTP server on the host's 127.0.0.1."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def _fetch(port: int) -> str:
    return (f"python3 -c \"import urllib.request; print(urllib.request.urlopen("
            f"'http://127.0.0.1:{port}/', timeout=3).read().decode())\"")


@needs_bwrap
def test_network_is_unreachable_unless_allowed(start_shell: StartShell, http_port: int) -> None:
    closed = start_shell()
    blocked = closed.run(_fetch(http_port))
    assert "hello from the host" not in blocked.stdout and blocked.exit_code != 0
    tcp = closed.run(f"exec 3<>/dev/tcp/127.0.0.1/{http_port} && echo connected")
    assert "connected" not in tcp.stdout
    assert closed.run(_fetch(http_port), read_only=True).exit_code != 0
    opened = start_shell(network=True)
    assert opened.run(_fetch(http_port)).stdout == "hello from the host\n"
    unconfirmed = opened.run(_fetch(http_port), read_only=True)  # the network is for confirmed
    assert "hello from the host" not in unconfirmed.stdout and unconfirmed.exit_code != 0


def _connect_unix(address: str) -> str:
    return ("python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); "
            f"s.connect({address!r}); print(s.recv(100).decode())\"")


@needs_bwrap
def test_host_unix_sockets_in_run_and_abstract_ones_are_unreachable(
        start_shell: StartShell) -> None:
    """Sockets of host daemons (docker, D-Bus, systemd --user) would let a command act
    outside; /run is empty inside, and abstract sockets belong to the network namespace."""
    if not os.access("/run", os.W_OK):
        pytest.skip("cannot create a test socket in /run")
    path = f"/run/fencecall-test-{secrets.token_hex(4)}.sock"
    abstract = f"\0fencecall-test-{secrets.token_hex(4)}"
    servers = []
    for address in (path, abstract):
        server = socket.socket(socket.AF_UNIX)
        server.bind(address)
        server.listen()
        servers.append(server)
    try:
        shell = start_shell()
        for address in (path, abstract):
            result = shell.run(_connect_unix(address), timeout=5)
            assert result.exit_code != 0 and not result.timed_out, result
    finally:
        for server in servers:
            server.close()
        Path(path).unlink(missing_ok=True)


# -- secrets ----------------------------------------------------------------------------------


_FENCECALL = """\
import json, os, sys
from pathlib import Path
from fencecall.tools.runtime.python_session import PythonSession
from fencecall.sandbox._bwrap import Sandbox, SandboxPolicy
from fencecall.tools.runtime.shell_session import ShellSession

spec = json.loads(sys.argv[1])
workspace, pid = Path(spec["workspace"]), str(os.getpid())
sandbox = Sandbox(SandboxPolicy(spec["policy"]), (workspace,))
env = {"PATH": os.environ["PATH"]}
shell = ShellSession(workspace, env=env, sandbox=sandbox)
python = PythonSession(workspace, env=env, sandbox=sandbox)
shell_out = [shell.run(c.replace("HOST_PID", pid)) for c in spec["shell"]]
python_out = [python.run(c.replace("HOST_PID", pid)) for c in spec["python"]]
print(json.dumps([r.stdout + r.stderr for r in shell_out]
                 + [f"{r.stdout}{r.stderr}{r.result}{r.error}" for r in python_out]))
shell.close()
python.close()
"""


def _as_fencecall(workspace: Path, policy: SandboxPolicy, shell: list[str],
                  python: list[str] = []) -> list[str]:  # noqa: B006 (never mutated)
    """The output of each command, run by a separate fencecall process that was started with
    FAKE_SECRET in its environment (its /proc/PID/environ holds it, as it would an API key;
    setting os.environ in this process would not put it there)."""
    spec = {"workspace": str(workspace), "policy": policy.value, "shell": shell,
            "python": python}
    done = subprocess.run([sys.executable, "-c", _FENCECALL, json.dumps(spec)],
                          env={**os.environ, "FAKE_SECRET": SECRET}, capture_output=True,
                          text=True, timeout=60, check=True)
    outputs: list[str] = json.loads(done.stdout)
    return outputs


SECRET_PROBES = [
    "env",
    "cat /proc/1/environ",
    "cat /proc/*/environ",
    "cat /proc/$PPID/environ",
    "for d in /proc/[0-9]*; do cat $d/environ; done",
    "cat /proc/HOST_PID/environ",
    "grep -ao 'FAKE_SECRE[T]=[^[:cntrl:]]*' /proc/[0-9]*/environ /proc/[0-9]*/task/*/environ",
    "grep -rao 'FAKE_SECRE[T]=[^[:cntrl:]]*' /dev/shm /tmp /run /proc/[0-9]*/cwd/",
    "cat /proc/1/task/*/environ; cat /proc/*/task/*/environ",
    # fencecall reads the output files by name, from outside: a symlink put in their place
    # must not make it read its own environment back to the model
    'for fd in 1 2; do f=$(readlink /proc/$$/fd/$fd); rm -f "$f"; ln -s /proc/self/environ "$f";'
    " done",
]
PYTHON_SECRET_PROBE = """\
import glob, os
found = [os.environ.get('FAKE_SECRET'), os.path.exists('/proc/HOST_PID')]
for path in glob.glob('/proc/*/environ') + glob.glob('/proc/*/task/*/environ'):
    try:
        text = open(path, 'rb').read().decode(errors='replace')
    except OSError as err:
        text = str(err)
    if 'FAKE_SECRET' in text or 'denied' in text:  # all of every environment would be cut
        found.append(text)
found"""


@needs_bwrap
def test_fencecalls_environment_cannot_be_read(workspace: Path) -> None:
    outputs = _as_fencecall(workspace, SandboxPolicy.WORKSPACE_WRITE, SECRET_PROBES,
                            [PYTHON_SECRET_PROBE])
    for probe, output in zip([*SECRET_PROBES, "python"], outputs, strict=True):
        assert SECRET not in output, probe
    assert outputs[-1].startswith("[None, False")  # no variable, no host pid in /proc


def test_the_secret_probes_do_find_an_unsandboxed_secret(workspace: Path) -> None:
    """The control: without the sandbox the same probes read fencecall's environment (bash's
    parent is the reaper, fencecall the reaper's)."""
    outputs = _as_fencecall(workspace, SandboxPolicy.OFF,
                            ["cat /proc/$(cut -d' ' -f4 /proc/$PPID/stat)/environ"],
                            [PYTHON_SECRET_PROBE])
    assert all(SECRET in output for output in outputs)


@needs_bwrap
def test_proc_shows_only_the_sandboxs_processes(start_shell: StartShell) -> None:
    result = start_shell().run("ls /proc | grep -E '^[0-9]+$'")
    pids = {int(pid) for pid in result.stdout.split()}
    assert pids and max(pids) < 1000 and os.getpid() not in pids
    assert start_shell().run(f"test -e /proc/{os.getpid()}").exit_code != 0


@needs_bwrap
def test_commands_hold_no_capabilities(start_shell: StartShell) -> None:
    """Root inside keeps fencecall's uid but no capability, so it cannot remount."""
    result = start_shell().run("grep -E '^Cap(Eff|Prm|Amb)' /proc/self/status")
    assert [line.split()[1] for line in result.stdout.splitlines()] == ["0" * 16] * 3


@needs_bwrap
def test_an_output_file_swapped_for_a_fifo_does_not_block_fencecall(
        start_shell: StartShell) -> None:
    started = time.monotonic()
    start_shell().run('for fd in 1 2; do f=$(readlink /proc/$$/fd/$fd); rm -f "$f"; '
                      'mkfifo "$f"; done')
    assert time.monotonic() - started < 5


# -- processes --------------------------------------------------------------------------------


@needs_bwrap
def test_timeout_kills_every_process_of_the_command_but_keeps_the_shell(
        start_shell: StartShell, workspace: Path) -> None:
    (workspace / "sub").mkdir()
    shell = start_shell()
    shell.run("cd sub && export KEPT=yes")
    tag = _sleep_tag()
    started = time.monotonic()
    result = shell.run(f"sleep {tag} & setsid sleep {tag} & (sleep {tag} &); sleep {tag}",
                       timeout=1)
    assert time.monotonic() - started < 5 and result.timed_out
    assert _wait_gone(f"sleep {tag}", 2.0) == []
    after = shell.run("pwd; echo $KEPT")
    assert after.stdout == f"{workspace / 'sub'}\nyes\n" and after.restarted is None


@needs_bwrap
def test_ctrl_c_kills_the_command_but_keeps_the_shell(start_shell: StartShell) -> None:
    shell = start_shell()
    shell.run("export KEPT=yes")
    tag = _sleep_tag()
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        shell.run(f"sleep {tag} & sleep {tag}")
    timer.join()
    assert _wait_gone(f"sleep {tag}", 2.0) == []
    after = shell.run("echo $KEPT")
    assert after.stdout == "yes\n" and after.restarted is None


@needs_bwrap
def test_exit_and_stuck_builtins_still_restart_the_shell(start_shell: StartShell) -> None:
    shell = start_shell()
    exited = shell.run("exit 7")
    assert exited.exit_code == 7 and exited.restarted
    shell.run("export KEEP=1")
    stuck = shell.run("while true; do :; done", timeout=1)
    assert stuck.timed_out and stuck.restarted
    assert shell.run("echo [$KEEP]").stdout == "[1]\n"  # exported state survives a restart


@needs_bwrap
def test_close_leaves_no_process_behind(workspace: Path) -> None:
    tag = _sleep_tag()
    shell = ShellSession(workspace, sandbox=Sandbox(SandboxPolicy.WORKSPACE_WRITE, (workspace,)))
    shell.run(f"sleep {tag} & setsid sleep {tag} & (sleep {tag} &)")
    _wait_running(f"sleep {tag}", 3)
    shell.close()
    assert _wait_gone(f"sleep {tag}") == []


_ORPHAN_SCRIPT = """\
import os, sys, time
from pathlib import Path
from fencecall.tools.runtime.python_session import PythonSession
from fencecall.sandbox._bwrap import Sandbox, SandboxPolicy
from fencecall.tools.runtime.shell_session import ShellSession

workspace, tag = Path(sys.argv[1]), sys.argv[2]
sandbox = Sandbox(SandboxPolicy.WORKSPACE_WRITE, (workspace,))
shell = ShellSession(workspace, sandbox=sandbox)
shell.run(f"sleep {tag} & setsid sleep {tag} & (sleep {tag} &)")
python = PythonSession(workspace, sandbox=sandbox)
python.run(f"import subprocess; subprocess.Popen(['sleep', '{tag}'], start_new_session=True)")
print(os.getpid(), shell._own_tmp, flush=True)
time.sleep(60)
"""


@needs_bwrap
def test_no_orphans_when_fencecall_is_killed(workspace: Path) -> None:
    tag = _sleep_tag()
    child = subprocess.Popen([sys.executable, "-c", _ORPHAN_SCRIPT, str(workspace), tag],
                             stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    pid, *folders = child.stdout.readline().split()
    try:
        _wait_running(f"sleep {tag}", 4)
        os.kill(int(pid), signal.SIGKILL)
        child.wait()
        assert _wait_gone(f"sleep {tag}") == []
    finally:
        child.kill()
        child.wait()
        for folder in folders:  # what the killed process could not clean up
            shutil.rmtree(folder)


@needs_bwrap
def test_a_shell_started_in_a_short_lived_thread_survives_it(workspace: Path) -> None:
    """--die-with-parent fires when the thread that forked bwrap exits, not the process."""
    shells: list[ShellSession] = []

    def start() -> None:
        shell = ShellSession(workspace, sandbox=Sandbox(SandboxPolicy.WORKSPACE_WRITE,
                                                        (workspace,)))
        shell.run("export MADE_IN_THREAD=yes")
        shells.append(shell)

    thread = threading.Thread(target=start)
    thread.start()
    thread.join()
    time.sleep(0.3)
    [shell] = shells
    try:
        after = shell.run("echo $MADE_IN_THREAD")
        assert after.stdout == "yes\n" and after.restarted is None
    finally:
        shell.close()


# -- the python tool --------------------------------------------------------------------------


@pytest.fixture
def python(workspace: Path) -> Iterator[PythonSession]:
    """A sandboxed interpreter with one function registered by a tool."""
    session = PythonSession(workspace, {"add": lambda a, b: a + b}, env=_path_env(),
                            sandbox=Sandbox(SandboxPolicy.WORKSPACE_WRITE, (workspace,)))
    yield session
    session.close()


@needs_bwrap
def test_python_writes_only_in_the_workspace(python: PythonSession, workspace: Path,
                                             outside: Path) -> None:
    assert python.run("open('inside', 'w').write('ok')").error is None
    assert (workspace / "inside").read_text() == "ok"
    for target in (outside / "new", outside / "existing", Path("/etc/fencecall-sandbox-test")):
        result = python.run(f"open({str(target)!r}, 'a').write('x')")
        assert result.error is not None and "Read-only file system" in result.error
    assert sorted(path.name for path in outside.iterdir()) == ["existing"]
    assert (outside / "existing").read_text() == "original\n"


@needs_bwrap
def test_python_functions_and_interrupts_work_through_the_sandbox(
        python: PythonSession) -> None:
    assert python.run("add(2, 3) * 10").result == "50"
    python.run("kept = 'yes'")
    started = time.monotonic()
    result = python.run("import time\nwhile True: time.sleep(0.01)", timeout=1)
    assert time.monotonic() - started < 5
    assert result.timed_out and result.error is not None and "KeyboardInterrupt" in result.error
    assert result.restarted is None and python.run("kept").result == "'yes'"
    crashed = python.run("import os\nos._exit(1)")
    assert crashed.restarted and python.run("add(1, 1)").result == "2"
