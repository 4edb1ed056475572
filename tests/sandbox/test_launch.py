"""The launcher (fencecall-launch) against the programs it replaces, with real processes.

Whichever starts a process, it must be in its control groups and under its rlimits before
the program runs, a sandbox must join the conversation's network, and a holder must make new
namespaces with the loopback up and die with fencecall. The launcher must also keep the
namespace descriptors from the program, and a failed step must stop the start.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from fencecall.sandbox import _launch
from fencecall.sandbox import _netns as netns
from fencecall.sandbox._bwrap import Sandbox, SandboxPolicy, share_network
from fencecall.sandbox._netns import SharedNetwork
from fencecall.sandbox._processes import start_process
from fencecall.sandbox._resource_limits import _PRLIMIT, Cgroup, MiB, ResourceLimits, limited
from fencecall.tools.runtime.shell_session import ShellSession

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


_SHOW_NAMESPACES = "readlink /proc/self/ns/user /proc/self/ns/net; ls /proc/self/fd"


def _show_namespaces(network: SharedNetwork) -> tuple[list[str], list[str]]:
    """The namespaces a program started behind the network's prefix is in, and the
    descriptors it has open."""
    done = _run([*network.prefix, "sh", "-c", _SHOW_NAMESPACES], pass_fds=network.pass_fds)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.split("\n")
    return lines[:2], lines[2:]


def test_the_namespaces_are_entered_and_their_descriptors_kept_from_the_program(
        launch_mode: str) -> None:
    with SharedNetwork.create() as network:
        made, _ = _show_namespaces(network)  # launched, the first makes them
        entered, listed = _show_namespaces(network)
        user, net = network.pass_fds
        assert entered == made == [f"user:[{os.fstat(user).st_ino}]",
                                   f"net:[{os.fstat(net).st_ino}]"]
        if launch_mode == "launcher":  # nsenter leaves them open
            assert str(user) not in listed and str(net) not in listed


def _launched_network() -> SharedNetwork:
    if _launch.launcher() is None:
        pytest.skip("fencecall-launch was not built here")
    return SharedNetwork.create()


_SHOW_MADE = ("readlink /proc/self/ns/user /proc/self/ns/net; cat /proc/self/uid_map "
              "/proc/self/gid_map /proc/self/setgroups; ls /proc/self/fd; "
              "echo; cat /proc/self/net/fib_trie")


def test_the_first_sandbox_makes_new_namespaces_with_the_loopback_up() -> None:
    with _launched_network() as network:
        prefix, inherited = network.prefix, network.pass_fds
        assert prefix[1] == f"--new-netns={inherited[0]}"
        done = _run([*prefix, "sh", "-c", _SHOW_MADE], pass_fds=inherited)
        assert done.returncode == 0, done.stderr
        lines = done.stdout.split("\n")
        for name, line in zip(("user", "net"), lines[:2], strict=True):
            assert line != os.readlink(f"/proc/self/ns/{name}")
        uid, gid = os.getuid(), os.getgid()
        assert lines[2].split() == [str(uid), str(uid), "1"]
        assert lines[3].split() == [str(gid), str(gid), "1"]
        assert lines[4] == "deny"
        listed = lines[5:lines.index("")]
        assert str(inherited[0]) not in listed  # the socket went before the program ran
        routes = done.stdout.partition("Local:")[2]
        assert netns._LOOPBACK_ROUTE.search(routes)
        network.prefix  # noqa: B018 (taking what it made)
        user, net = network.pass_fds
        assert lines[:2] == [f"user:[{os.fstat(user).st_ino}]", f"net:[{os.fstat(net).st_ino}]"]


def test_when_the_first_sandbox_makes_nothing_the_next_one_does() -> None:
    with _launched_network() as network:
        prefix = network.prefix
        failed = _run([prefix[0], "--sideways", *prefix[1:], "true"], pass_fds=network.pass_fds)
        assert failed.returncode == 126
        assert network.prefix[1].startswith("--new-netns=")  # nothing to join: make again
        network.prefix  # noqa: B018 (never started: made again by the next)
        made, _ = _show_namespaces(network)
        joined, _ = _show_namespaces(network)
        assert joined == made and made[1] != os.readlink("/proc/self/ns/net")


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
        network.prefix  # noqa: B018 (taking what the shell's launcher made)
        net = os.fstat(network.pass_fds[1]).st_ino
        assert result.stdout.split() == [str(5 * MiB // 1024), f"net:[{net}]"], result


def test_no_process_is_started_for_the_namespaces_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first sandbox makes them: a conversation with one sandbox starts one process."""
    def refuse(*args: object, **options: object) -> None:
        raise AssertionError("a process was started for the namespaces")

    monkeypatch.setattr(netns, "start_process", refuse)
    with _launched_network() as network:
        made, _ = _show_namespaces(network)
        assert made[1] != os.readlink("/proc/self/ns/net")


def test_the_namespaces_are_taken_when_descriptors_are_numbered_past_1024() -> None:
    """A batch holds thousands of descriptors: ``select`` would refuse the socket's."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1200:
        pytest.skip(f"this process may open only {hard} descriptors")
    resource.setrlimit(resource.RLIMIT_NOFILE, (1200 if hard == resource.RLIM_INFINITY
                                                else min(hard, 4096), hard))
    filler: list[int] = []
    try:
        while not filler or filler[-1] < 1100:
            filler.append(os.open("/dev/null", os.O_RDONLY | os.O_CLOEXEC))
        with _launched_network() as network:
            prefix, inherited = network.prefix, network.pass_fds
            assert inherited[0] > 1024
            made = _run([*prefix, "readlink", "/proc/self/ns/net"], pass_fds=inherited)
            joined, _ = _show_namespaces(network)
            assert joined[1] == made.stdout.strip() != os.readlink("/proc/self/ns/net")
    finally:
        for fd in filler:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
