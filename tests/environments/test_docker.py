"""The tools in a container driven by ``docker``: real podman behind a shim that refuses
podman's own flags (``--preserve-fds`` above all), so what passes here takes no path that
only podman has. The persistent shell and interpreter get their descriptors by name (see
fencecall.environments._handoff); their output is capped as it grows and a stop ends all
they started, as with podman."""

from __future__ import annotations

import os
import resource
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fencecall.environments import ContainerCli, ContainerEnvironment, ContainerError
from fencecall.errors import ToolError
from fencecall.evaluation._container import TrialContainer
from fencecall.tools.runtime.job_manager import JobManager
from fencecall.tools.runtime.python_session import PythonSession
from fencecall.tools.runtime.shell_session import ShellSession

from ..containers import base_image, docker

__all__ = ["base_image", "docker"]

_FLOOD = 300 * 2**20
_PROCESSES = "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done"


@pytest.fixture
def place(docker: ContainerCli, base_image: str, tmp_path: Path
          ) -> Iterator[ContainerEnvironment]:
    with ContainerEnvironment.start(base_image, tmp_path / "files", cli=docker) as env:
        yield env


def test_the_shim_is_docker_without_podmans_flags(docker: ContainerCli, base_image: str) -> None:
    assert "Docker Engine" in docker.call("version").stdout
    container = docker.start(base_image)
    try:
        refused = docker.call("exec", "--preserve-fds=1", container, "true", check=False)
        assert refused.returncode == 125 and "--preserve-fds" in refused.stderr
        assert docker.init_argv() == ["/sbin/docker-init", "-s", "--"]
        # podman behind: its containers have podman's init, found where it is
        assert docker.init_argv(f"/proc/{docker.init_pid(container)}/root") == [
            "/run/podman-init", "--"]
    finally:
        docker.remove(container)


def test_the_shell_keeps_its_state_caps_a_flood_and_a_stop_ends_everything(
        place: ContainerEnvironment, tmp_path: Path) -> None:
    jobs = JobManager(lambda: tmp_path, output_limit=1000, disk_limit=1 << 20)
    shell = ShellSession(place.files, environment=place, disk_limit=1 << 20, jobs=jobs)
    try:
        assert shell.run("mkdir sub; cd sub; export GREETING=hi; echo out; echo err >&2") \
            .stdout == "out\n"
        again = shell.run('pwd; echo "$GREETING"')
        assert again.stdout == "/work/sub\nhi\n" and again.exit_code == 0
        clock = time.monotonic()
        flood = shell.run("yes; touch /work/after-flood", timeout=60)
        assert flood.overflowed and time.monotonic() - clock < 10, flood
        stopped = shell.run("(sleep 62 &); sleep 61; touch /work/after-stop", timeout=2)
        assert stopped.timed_out
        listing = shell.run(f"pwd; {_PROCESSES}")
        assert listing.stdout.startswith("/work/sub\n"), listing  # the state came back
        assert "sleep 6" not in listing.stdout, listing.stdout
        job = shell.run("sleep 1; echo from-the-job", background_after=0.3)
        assert job.job == 1
        assert jobs.wait(1, 20).output == "from-the-job\n"
        assert not list(place.files.glob("after-*"))
    finally:
        jobs.close()
        shell.close()


def test_python_runs_keeps_its_names_and_a_timeout_kills_what_it_started(
        place: ContainerEnvironment) -> None:
    python = PythonSession(place.files, environment=place, disk_limit=1 << 20)
    try:
        assert python.run("import os; x = 41; print(os.getcwd())").stdout == "/work\n"
        assert python.run("x + 1").result == "42"
        flood = python.run("while True: print('x' * 1000)", timeout=60)
        assert flood.overflowed, flood
        stopped = python.run("import subprocess\n"
                             "subprocess.run('sleep 63; touch /work/late', shell=True)",
                             timeout=2)
        assert stopped.timed_out
        code, out, _ = place.exec(["sh", "-c", _PROCESSES], timeout=30)
        assert code == 0 and "sleep 63" not in out, out
        assert python.run("import os; os._exit(3)").restarted  # a new interpreter, new files
        assert python.run("print('back')").stdout == "back\n"
    finally:
        python.close()


def test_the_handoff_names_are_gone_once_the_processes_hold_them(
        place: ContainerEnvironment) -> None:
    shell = ShellSession(place.files, environment=place)
    python = PythonSession(place.files, environment=place)
    try:
        assert shell.run("ls -A " + str(place._handoff.folder)).stdout == ""
        assert python.run("print(1)").stdout == "1\n"
        assert not list(place._handoff.folder.iterdir())
    finally:
        python.close()
        shell.close()


def test_a_process_that_cannot_open_its_descriptors_is_an_error_not_a_hang(
        place: ContainerEnvironment) -> None:
    read, write = place.pipe()
    try:
        clock = time.monotonic()
        with pytest.raises(Exception, match="could not open the descriptors"):
            place.spawn(["true"], fds=[read], env={"PATH": "/nonexistent"},
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        assert time.monotonic() - clock < 30
    finally:
        os.close(read)
        os.close(write)


def test_a_flooding_exec_and_a_verifiers_read_are_bounded_and_a_timeout_ends_all(
        place: ContainerEnvironment, base_image: str) -> None:
    flood = f"echo first; head -c {_FLOOD} /dev/zero | tr '\\0' x; echo; echo last"
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    code, out, _ = place.exec(["sh", "-c", flood], timeout=120)
    assert code == 0 and out.startswith("first\n") and out.endswith("\nlast\n")
    assert len(out) < 2 * 2**20 and f"[... {_FLOOD + 12 - 2**20} bytes cut ...]" in out
    assert place.exec(["sh", "-c", f"{{ {flood}; }} > /tmp/test-stdout.txt"], timeout=120)[0] == 0
    # the verifier reads the tests' output through the CLI: its tail, not all of it
    trial = TrialContainer(place, base_image, place.files.parent / "logs")
    tail = trial.read({"/tmp/test-stdout.txt": 2000})["/tmp/test-stdout.txt"]
    assert tail is not None and tail.endswith("x\nlast\n") and len(tail) == 2000
    grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak
    assert grew < 100 * 1024, f"{grew} kB more: a flood was held whole"
    clock = time.monotonic()
    code, out, _ = place.exec(["sh", "-c", "echo before; (sleep 64 &); sleep 65"], timeout=1)
    assert (code, out) == (124, "before\n") and time.monotonic() - clock < 15
    assert "sleep 6" not in place.exec(["sh", "-c", _PROCESSES], timeout=30)[1]


def test_a_container_that_swaps_the_handoff_names_for_links_writes_nothing_on_the_host(
        place: ContainerEnvironment, tmp_path: Path) -> None:
    target = tmp_path / "host-only"  # a host folder the container cannot see
    target.mkdir()
    handoff = place._handoff.folder
    swap = (f"while :; do for d in {handoff}/*; do [ -L \"$d\" ] && continue; "
            f"rm -rf \"$d\" && ln -s {target} \"$d\"; done; done")
    shell = ShellSession(place.files, environment=place)
    try:
        assert shell.run(f"({swap}) >/dev/null 2>&1 &").exit_code == 0
        time.sleep(0.5)
        failed = []
        for _ in range(5):  # each start races the loop: it may fail, never write there
            try:
                PythonSession(place.files, environment=place).close()
            except (ContainerError, ToolError, OSError) as err:
                failed.append(err)
        assert failed, "the loop swapped nothing"
        assert list(target.iterdir()) == []
    finally:
        shell.close()
