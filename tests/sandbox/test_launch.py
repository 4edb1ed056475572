"""The launcher (fencecall-launch) against the programs it replaces, with real processes.

Whichever starts a process, it must be in its control groups and under its rlimits before
the program runs, a sandbox must join the conversation's network, and a holder must make new
namespaces with the loopback up and die with fencecall. The launcher must also keep the
namespace descriptors from the program, and a failed step must stop the start.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fencecall.sandbox import _launch
from fencecall.sandbox import _netns as netns
from fencecall.sandbox._bwrap import Sandbox, SandboxPolicy, share_network
from fencecall.sandbox._netns import SharedNetwork
from fencecall.sandbox._processes import start_process
from fencecall.sandbox._resource_limits import _PRLIMIT, Cgroup, MiB, ResourceLimits, limited
from fencecall.tools.runtime.shell_session import ShellSession

from ..processes import alive
from ..support import needs_bwrap

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="the launcher needs Linux (namespaces, /proc)")

_SHOW_LIMITS = ("import resource as r; "
                "print(*r.getrlimit(r.RLIMIT_FSIZE), *r.getrlimit(r.RLIMIT_AS))")


def _run(argv: list[str], pass_fds: tuple[int, ...] = ()) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=30, pass_fds=pass_fds)


def _needs_prlimit(launch_mode: str) -> None:
    if launch_mode == "util-linux" and _PRLIMIT is None:
        pytest.skip("util-linux's prlimit is not installed")


def test_the_rlimits_are_set_before_the_program_runs(launch_mode: str) -> None:
    _needs_prlimit(launch_mode)
    limits = ResourceLimits(file_size=3 * MiB, memory=256 * MiB)
    argv = limited([sys.executable, "-c", _SHOW_LIMITS], limits, None)
    assert Path(argv[0]).name == ("fencecall-launch" if launch_mode == "launcher"
                                  else "prlimit")
    done = _run(argv)
    assert done.returncode == 0, done.stderr
    size, space = 3 * MiB, 2 * 256 * MiB
    assert done.stdout.split() == [str(size), str(size), str(space), str(space)]


def test_the_process_is_in_its_groups_before_the_program_runs(launch_mode: str) -> None:
    group = Cgroup.create(ResourceLimits())
    if group is None:
        pytest.skip("fencecall cannot make control groups here")
    argv = limited(["cat", "/proc/self/cgroup"], ResourceLimits(), group)
    assert (argv[0] == _launch.launcher()) == (launch_mode == "launcher")
    done = _run(argv)
    assert done.returncode == 0, done.stderr
    for folder in group.folders:
        assert f"/{folder.name}\n" in done.stdout


def test_a_group_that_cannot_be_joined_stops_the_start(launch_mode: str,
                                                        tmp_path: Path) -> None:
    missing = Cgroup([tmp_path / "no-such-group"], limits_processes=True, limits_memory=True)
    ran = tmp_path / "ran"
    done = _run(limited(["touch", str(ran)], ResourceLimits(), missing))
    assert done.returncode == 126 and not ran.exists()


def test_a_limit_that_cannot_be_set_stops_the_start(tmp_path: Path) -> None:
    launcher = _launch.launcher()
    if launcher is None:
        pytest.skip("fencecall-launch was not built here")
    ran = tmp_path / "ran"
    for bad in ("--fsize=-1", "--fsize=lots", "--userns=3", "--sideways"):
        done = _run([launcher, bad, "--", "touch", str(ran)])
        assert done.returncode == 126 and not ran.exists(), (bad, done.stderr)
    assert _run([launcher, "--", str(tmp_path / "missing")]).returncode == 127


def _open_descriptors(count: int) -> list[int]:
    fds = [os.open(os.devnull, os.O_RDONLY) for _ in range(count)]
    for fd in fds:
        os.set_inheritable(fd, True)
    return fds


_WHICH_OPEN = """\
import os, sys
def is_open(fd):
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True
print(*[fd for fd in map(int, sys.argv[1:]) if is_open(fd)])
"""
"""Which of the descriptors named in its argv the process has open (without opening one)."""


def test_the_launcher_keeps_the_descriptors_listed_and_closes_every_other() -> None:
    launcher = _launch.launcher()
    if launcher is None:
        pytest.skip("fencecall-launch was not built here")
    fds = _open_descriptors(8)
    try:
        kept = [fds[5], fds[1], fds[2]]  # neighbours, unsorted
        done = subprocess.run([launcher, f"--keep={','.join(map(str, kept))}", "--",
                               sys.executable, "-c", _WHICH_OPEN, *map(str, fds)],
                              capture_output=True, text=True, timeout=30, close_fds=False)
        assert done.returncode == 0, done.stderr
        assert sorted(map(int, done.stdout.split())) == sorted(kept)
        for bad in ("", "2", "5,", "5,x", ",".join(["9"] * 65)):
            refused = subprocess.run([launcher, f"--keep={bad}", "--", "true"],
                                     capture_output=True, text=True, timeout=30)
            assert refused.returncode == 126 and "not descriptors" in refused.stderr, bad
    finally:
        for fd in fds:
            os.close(fd)


def test_a_launched_process_gets_only_its_descriptors_and_they_stay_private(
        launch_mode: str) -> None:
    fds = _open_descriptors(6)
    private = [os.open(os.devnull, os.O_RDONLY) for _ in range(2)]  # neighbours
    try:
        argv = limited([sys.executable, "-c", _WHICH_OPEN, *map(str, fds + private)],
                       ResourceLimits(file_size=MiB), None)
        proc = start_process(argv, limits=None, stdout=subprocess.PIPE, pass_fds=private)
        out, _ = proc.communicate(timeout=30)
        assert sorted(map(int, out.split())) == sorted(private)
        assert not any(os.get_inheritable(fd) for fd in private)  # as they were
        assert all(os.get_inheritable(fd) for fd in fds)
    finally:
        for fd in fds + private:
            os.close(fd)


def test_the_namespaces_are_entered_and_their_descriptors_kept_from_the_program(
        launch_mode: str) -> None:
    with SharedNetwork.create() as network:
        user, net = network.pass_fds
        done = _run([*network.prefix, "sh", "-c",
                     "readlink /proc/self/ns/user /proc/self/ns/net; ls /proc/self/fd"],
                    pass_fds=network.pass_fds)
        assert done.returncode == 0, done.stderr
        entered, listed = done.stdout.split("\n", 2)[:2], done.stdout.split("\n")[2:]
        assert entered == [f"user:[{os.fstat(user).st_ino}]", f"net:[{os.fstat(net).st_ino}]"]
        if launch_mode == "launcher":  # nsenter leaves them open
            assert str(user) not in listed and str(net) not in listed


def _start_holder(parent: int) -> subprocess.Popen[bytes]:
    launcher = _launch.launcher()
    if launcher is None:
        pytest.skip("fencecall-launch was not built here")
    return start_process([launcher, "--hold", netns._MARK, str(parent)], reaper=True,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_the_holder_makes_new_namespaces_with_the_loopback_up() -> None:
    holder = _start_holder(os.getpid())
    assert holder.stdin is not None and holder.stdout is not None
    try:
        holder.stdin.write(b"\n")
        holder.stdin.flush()
        assert holder.stdout.read(1) == b"\n"
        proc = Path(f"/proc/{holder.pid}")
        for name in ("user", "net"):
            assert os.readlink(proc / "ns" / name) != os.readlink(f"/proc/self/ns/{name}")
        uid, gid = os.getuid(), os.getgid()
        assert (proc / "uid_map").read_text().split() == [str(uid), str(uid), "1"]
        assert (proc / "gid_map").read_text().split() == [str(gid), str(gid), "1"]
        assert (proc / "setgroups").read_text() == "deny\n"
        routes = (proc / "net" / "fib_trie").read_text().partition("Local:")[2]
        assert netns._LOOPBACK_ROUTE.search(routes)
    finally:
        holder.stdin.close()
        assert holder.wait(10) == 0
        holder.stdout.close()
        assert holder.stderr is not None and holder.stderr.read() == b""
        holder.stderr.close()


def test_a_holder_whose_parent_is_not_the_one_named_makes_nothing() -> None:
    holder = _start_holder(1)  # its parent died before it could set its signal: init's now
    out, _ = holder.communicate(b"\n", timeout=10)
    assert holder.returncode == 128 + signal.SIGKILL and out == b""


_PARENT = """\
import os, subprocess, sys, time
from fencecall.sandbox import _launch
from fencecall.sandbox._processes import start_process
holder = start_process([_launch.launcher(), "--hold", "FENCECALL_NETNS_HOLDER",
                        str(os.getpid())], reaper=True, stdin=subprocess.PIPE,
                       stdout=subprocess.PIPE)
holder.stdin.write(b"\\n"); holder.stdin.flush(); holder.stdout.read(1)
print(holder.pid, flush=True)
time.sleep(600)
"""


def test_a_holder_dies_with_fencecall() -> None:
    if _launch.launcher() is None:
        pytest.skip("fencecall-launch was not built here")
    parent = subprocess.Popen([sys.executable, "-c", _PARENT], stdout=subprocess.PIPE)
    assert parent.stdout is not None
    try:
        holder = int(parent.stdout.readline())
        assert alive(holder)
    finally:
        parent.kill()
        parent.wait()
        parent.stdout.close()
    deadline = time.monotonic() + 10
    while alive(holder) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(holder)


@needs_bwrap
def test_a_sandboxed_shell_is_limited_and_shares_the_network(launch_mode: str,
                                                              workspace: Path) -> None:
    limits = ResourceLimits(file_size=5 * MiB)
    sandbox, why = share_network(Sandbox(SandboxPolicy.WORKSPACE_WRITE, (workspace,),
                                         limits=limits))
    assert why is None and sandbox.shared_network is not None
    with sandbox.shared_network as network:
        if launch_mode == "launcher":  # one launch: the limits join the network's prefix
            argv = limited(sandbox.command(["true"]), limits, None)
            assert argv.count(network.prefix[0]) == 1 and argv[0] == network.prefix[0]
        shell = ShellSession(workspace, sandbox=sandbox)
        try:
            result = shell.run("ulimit -H -f; readlink /proc/self/ns/net")
        finally:
            shell.close()
        net = os.fstat(network.pass_fds[1]).st_ino
        assert result.stdout.split() == [str(5 * MiB // 1024), f"net:[{net}]"], result
