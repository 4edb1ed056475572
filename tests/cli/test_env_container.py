"""Tools in a container, end to end: the real CLI (``--env container:IMAGE``) against the
scripted model server, with real podman and the base image (tests/containers.py).

One image on top of the base (built once, without running anything: COPY and WORKDIR) has
a working folder with a file in it and an ``os-release`` of its own, so what a command
sees is the container's, not the host's (a Debian bookworm too).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fencecall.assembly import Overrides, resolve_settings, tool_session
from fencecall.config import Config
from fencecall.environments import LABEL, ContainerEnvironment
from fencecall.execution import auto_yes
from fencecall.tools.runtime.shell_session import ShellSession

from ..containers import base_image, docker_shim
from ..fakeserver import FakeModelServer, Reply
from ..support import F
from .conftest import CLI, cli_env, log_of

__all__ = ["base_image"]

IMAGE = "fencecall-test-app"
RELEASE = 'PRETTY_NAME="fencecall test image"\nID=fencecall\n'


def _podman(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["podman", *args], capture_output=True, text=True, timeout=300,
                          check=check)


@pytest.fixture(scope="session")
def app_image(base_image: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The base image with ``/app`` (holding ``from-image.txt``) as its WORKDIR."""
    context = tmp_path_factory.mktemp("app-image")
    (context / "from-image.txt").write_text("made in the image\n")
    (context / "os-release").write_text(RELEASE)
    (context / "Containerfile").write_text(
        f"FROM {base_image}\nCOPY os-release /usr/lib/os-release\nWORKDIR /app\n"
        "COPY from-image.txt /app/from-image.txt\n")
    _podman("build", "--tag", IMAGE, str(context))
    return IMAGE


def ours(*, running: bool = False) -> set[str]:
    """The ids of fencecall's containers of this file's image now (``running``, or in any
    state): other tests may start containers of other images meanwhile."""
    which = ["--filter", "status=running"] if running else ["--all"]
    done = _podman("ps", *which, "--no-trunc", "--filter", f"label={LABEL}", "--format",
                   "{{.ID}} {{.Image}}")
    return {line.split()[0] for line in done.stdout.splitlines()
            if line.split()[1:] and line.split()[1].rpartition("/")[2].startswith(IMAGE + ":")}


@pytest.fixture
def before() -> Iterator[set[str]]:
    """The containers there were before the test (a killed run's, say)."""
    yield ours()


@dataclass(frozen=True)
class Via:
    """The container CLI a run is told to use, and what its environment adds for it."""

    name: str
    env: dict[str, str]

    @property
    def args(self) -> list[str]:
        return ["--container-cli", self.name]


@pytest.fixture(params=["podman", "docker"])
def via(request: pytest.FixtureRequest, tmp_path: Path) -> Via:
    """podman, or docker: podman behind a shim first on PATH that refuses podman's own
    flags (tests/containers.py), so the run takes docker's path."""
    if request.param == "podman":
        return Via("podman", {})
    shims = docker_shim(tmp_path / "shims")
    return Via("docker", {"PATH": f"{shims}:{os.environ['PATH']}"})


def shell(command: str, timeout: int | None = None) -> Reply:
    return Reply(f"{F}shell{f' {timeout}' if timeout else ''}\n{command}\n{F}\n")


def results(tmp_path: Path, name: str) -> list[str]:
    return [r["content"] for r in log_of(tmp_path, name) if r["role"] == "system"]


def test_every_tool_acts_inside_the_container_and_it_is_removed_after(
        app_image: str, fencecall: CLI, tmp_path: Path, workspace: Path,
        before: set[str], via: Via) -> None:
    replies = [
        shell("grep ^PRETTY_NAME= /etc/os-release; mkdir -p sub; cd sub; export GREETING=hi"),
        Reply(f"{F}save /app/sub/saved.txt\nsaved by the model\n{F}\n"),
        shell('pwd; echo "greeting=$GREETING"; cat saved.txt'),
        Reply(f"{F}read from-image.txt\n{F}\n"),
        Reply(f"{F}patch sub/saved.txt\n<<<<<<< ORIGINAL\nsaved by the model\n=======\n"
              f"patched\n>>>>>>> UPDATED\n{F}\n"),
        Reply(f"{F}ipython\nimport os\nprint(os.getcwd(), open('sub/saved.txt').read(), "
              f"open('/etc/os-release').read())\n{F}\n"),
        shell("sleep 2; echo job-done > /app/job.txt"),
        Reply(f"{F}jobs wait 1 30\n{F}\n"),
        shell("cat /app/job.txt; ls /sys/class/net"),
        Reply("Done."),
    ]
    with FakeModelServer(replies) as server:
        done = fencecall("-y", *via.args, "--env", f"container:{app_image}", "--model",
                         "local/m", "--name", "in", "--background-after", "1", "--tools",
                         "shell,ipython,save,patch,read,jobs", "work in the container",
                         base_url=server.openai_url,
                         env=cli_env(tmp_path, server.openai_url, **via.env))
    assert done.returncode == 0, done.stderr
    release, saved, after, read, patched, python, job, waited, last = results(tmp_path, "in")
    assert "fencecall test image" in release, release
    assert "Created sub/saved.txt" in saved, saved
    assert "/app/sub" in after and "greeting=hi" in after and "saved by the model" in after
    assert "made in the image" in read, read
    assert "Patched sub/saved.txt" in patched, patched
    assert "/app patched" in python and "fencecall test image" in python, python
    assert "job 1" in job, job
    assert "Exit code: 0" in waited, waited
    assert "job-done" in last and last.split("stdout:")[1].split("```")[1].split() == [
        "job-done", "lo"], last  # no network: the loopback alone
    assert (workspace / "sub" / "saved.txt").read_text() == "patched\n"  # the host copy
    assert ours() <= before


def test_a_stop_ends_the_whole_command_inside_the_container(
        app_image: str, fencecall: CLI, tmp_path: Path, workspace: Path,
        before: set[str], via: Via) -> None:
    processes = "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done"
    replies = [
        shell("(sleep 62 &); sleep 60; touch /app/after-shell", timeout=2),  # an orphan too
        Reply(f"{F}ipython 2\nimport subprocess\n"
              f"subprocess.run('sleep 61; touch /app/after-python', shell=True)\n{F}\n"),
        shell(f"sleep 1; ls; {processes}"),
        Reply("Stopped."),
    ]
    with FakeModelServer(replies) as server:
        done = fencecall("-y", *via.args, "--env", f"container:{app_image}", "--model",
                         "local/m", "--name", "stop", "--tools", "shell,ipython", "stop it",
                         base_url=server.openai_url,
                         env=cli_env(tmp_path, server.openai_url, **via.env))
    assert done.returncode == 0, done.stderr
    shell_stop, python_stop, listing = results(tmp_path, "stop")
    assert "Timed out after 2 s" in shell_stop, shell_stop
    assert "Timed out after 2 s" in python_stop, python_stop
    assert "after-" not in listing and "sleep 6" not in listing, listing
    assert not list(workspace.glob("after-*"))
    assert ours() <= before


def test_ctrl_c_or_sigterm_removes_the_container_and_kill_9_leaves_it_to_the_next_start(
        app_image: str, tmp_path: Path, workspace: Path, before: set[str]) -> None:
    started: list[str] = []
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        replies = [shell("sleep 60; touch /app/after", timeout=90), Reply("never")]
        with FakeModelServer(replies) as server:
            proc = subprocess.Popen(
                [sys.executable, "-m", "fencecall.cli.main", "-y", "--env",
                 f"container:{app_image}", "--model", "local/m", "-w", str(workspace),
                 "--tools", "shell", "wait"],
                env=cli_env(tmp_path, server.openai_url), stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL)
            known = before | set(started)
            new = _wait_for(lambda known=known: ours(running=True) - known, proc)
            time.sleep(1.5)  # the command runs
            proc.send_signal(signum)
            proc.wait(timeout=30)
        started += new
        if signum != signal.SIGKILL:
            assert not (ours() & set(new)), f"{signum!r} left its container"
    assert set(started[-1:]) <= ours(), "kill -9 cannot remove its container itself"
    _start_and_stop(app_image, tmp_path)  # the next start sweeps the dead owner's
    assert not (ours() & set(started))
    assert not (workspace / "after").exists()


def test_an_environment_started_outside_runs_a_session_commands_and_copies_files(
        app_image: str, tmp_path: Path, before: set[str]) -> None:
    with ContainerEnvironment.start(app_image, tmp_path / "files") as env:
        assert env.workdir == "/app"
        assert (tmp_path / "files" / "from-image.txt").read_text() == "made in the image\n"
        code, out, err = env.exec(["sh", "-c", "pwd; echo oops >&2; exit 3"], timeout=30)
        assert (code, out, err) == (3, "/app\n", "oops\n")
        settings = resolve_settings(Config(), Overrides(workspace=tmp_path / "x"), env={})
        with tool_session(settings, Config(), confirm=auto_yes, environment=env) as session:
            [said] = session.execute(f"{F}shell\ngrep PRETTY /etc/os-release; pwd\n{F}")
        assert "fencecall test image" in said.content and "/app" in said.content
        assert env.exec(["true"], timeout=30)[0] == 0  # the caller's: still running
        (tmp_path / "test.sh").write_text("echo verified > /tmp/reward\n")
        env.copy_in(tmp_path / "test.sh", "/tmp/test.sh")
        assert env.exec(["sh", "/tmp/test.sh"], timeout=30)[0] == 0
        env.copy_out("/tmp/reward", tmp_path / "reward")
        assert (tmp_path / "reward").read_text() == "verified\n"
        clock = time.monotonic()
        code, _, _ = env.exec(["sh", "-c", "sleep 30; touch /app/late"], timeout=1)
        assert code == 124 and time.monotonic() - clock < 10
        time.sleep(0.5)
        assert "sleep 30" not in env.exec(
            ["sh", "-c", "cat /proc/[0-9]*/cmdline | tr '\\0' ' '"], timeout=30)[1]
        shell = ShellSession(env.files, environment=env, disk_limit=1 << 20)
        try:  # the output cap holds in the container too: the files are fencecall's
            clock = time.monotonic()
            flood = shell.run("yes; touch /app/after-flood", timeout=60)
            assert flood.overflowed and time.monotonic() - clock < 10, flood
            assert shell.run("ls").stdout.split() == ["from-image.txt"]
        finally:
            shell.close()
        container = env.container
    assert container not in ours() and ours() <= before


def _wait_for(found: Any, proc: subprocess.Popen[bytes]) -> list[str]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if new := found():
            return sorted(new)
        time.sleep(0.2)
    raise AssertionError("no container was started")


def _start_and_stop(image: str, tmp_path: Path) -> None:
    """A start of a container environment in a new process, as the next fencecall's."""
    code = ("import sys, pathlib; from fencecall.environments import ContainerEnvironment\n"
            "ContainerEnvironment.start(sys.argv[1], pathlib.Path(sys.argv[2])).close()\n")
    subprocess.run([sys.executable, "-c", code, image, str(tmp_path / "next")], check=True,
                   timeout=120)
