"""Background jobs: a long shell command goes on as a job instead of being killed, a command
that leaves processes behind is tracked, and no job outlives its session."""

from __future__ import annotations

import os
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from fencecall.execution import Session
from fencecall.message import Message
from fencecall.sandbox._bwrap import sandbox_support
from fencecall.tools.runtime.job_manager import JobManager, JobView
from fencecall.tools.runtime.shell_session import ShellSession
from fencecall.tools.tool_context import SHELL

from ..ports import free_port
from ..processes import running
from ..support import F, made, needs_bwrap, tool_session

SANDBOXES = [pytest.param("workspace-write", marks=needs_bwrap), "off"]


@pytest.fixture(params=SANDBOXES)
def jobs_session(request: pytest.FixtureRequest, workspace: Path) -> Iterator[Session]:
    with tool_session(workspace, ["shell"], sandbox=request.param, background_after=1.0,
                      max_jobs=2) as session:
        yield session


def call(session: Session, text: str) -> Message:
    [result] = session.execute(text)
    return result


def shell(command: str) -> str:
    return f"{F}shell\n{command}\n{F}\n"


def gone(marker: str, within: float = 3.0) -> bool:
    deadline = time.monotonic() + within
    while running(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    return running(marker) == []


def test_a_server_goes_on_as_a_job_and_later_calls_reach_it(jobs_session: Session) -> None:
    port = free_port()
    started = time.monotonic()
    result = call(jobs_session, shell(f"python3 -m http.server {port} --bind 127.0.0.1"))
    assert time.monotonic() - started < 1.0 + 2
    assert "Still running after 1 s: it goes on in the background as job 1." in result.content
    assert f"{F}jobs output 1\n" in result.content and result.metadata["job"] == 1
    fetch = (f"python3 -c \"import urllib.request, time\nfor _ in range(50):\n try:\n"
             f"  print(urllib.request.urlopen('http://127.0.0.1:{port}/').status); break\n"
             f" except OSError: time.sleep(0.1)\"")
    fetched = call(jobs_session, shell(fetch))
    assert "200" in fetched.content, fetched.content
    killed = call(jobs_session, f"{F}jobs kill 1\n{F}\n")
    assert "was killed" in killed.content and "GET / HTTP" in killed.content
    assert gone(str(port))


@needs_bwrap
def test_a_read_only_run_reaches_a_jobs_port(workspace: Path) -> None:
    with tool_session(workspace, ["shell"], background_after=1.0) as session:
        port = free_port()
        assert "job 1" in call(session, shell(f"python3 -m http.server {port}")).content
        shell_session = made(session, SHELL)
        assert isinstance(shell_session, ShellSession)
        result = shell_session.run(
            f"for i in $(seq 50); do exec 3<>/dev/tcp/127.0.0.1/{port} && break; "
            f"sleep 0.1; done; printf 'GET / HTTP/1.0\\r\\n\\r\\n' >&3; head -1 <&3",
            read_only=True)
        assert "200 OK" in result.stdout, result


def test_a_wait_returns_the_jobs_end_and_output(jobs_session: Session) -> None:
    result = call(jobs_session, shell("echo start; sleep 3; echo done"))
    assert "stdout:\n```\nstart\n```" in result.content and "job 1" in result.content
    started = time.monotonic()
    waited = call(jobs_session, f"{F}jobs wait 1 30\n{F}\n")
    assert time.monotonic() - started < 4
    assert "ended after" in waited.content and "done" in waited.content
    assert "output:\n```\ndone\n```" in waited.content  # start was read already
    assert "Exit code: 0" in waited.content and waited.metadata["job_state"] == "ended"
    assert jobs_session.job_notices() == []  # the model saw the end


def test_a_command_put_in_the_background_neither_hangs_nor_loses_output(
        jobs_session: Session) -> None:
    started = time.monotonic()
    result = call(jobs_session, shell("(sleep 1.5; echo late; sleep 3112.5) & echo now"))
    assert time.monotonic() - started < 1.0
    assert "now" in result.content and "Exit code: 0" in result.content
    assert "left processes running in the background: they are job 1" in result.content
    time.sleep(2)
    assert "late" in call(jobs_session, f"{F}jobs output 1\n{F}\n").content
    assert running("3112.5")
    listing = call(jobs_session, f"{F}jobs\n{F}\n").content
    assert "1  running for" in listing
    call(jobs_session, f"{F}jobs kill 1\n{F}\n")
    assert gone("3112.5")


def test_the_shell_after_a_job_keeps_cwd_and_exported_variables(jobs_session: Session,
                                                                 workspace: Path) -> None:
    (workspace / "sub").mkdir()
    call(jobs_session, shell("cd sub && export KEPT=yes"))
    assert "job 1" in call(jobs_session, shell("sleep 3113.1")).content
    after = call(jobs_session, shell("pwd; echo $KEPT"))
    assert f"{workspace / 'sub'}\nyes" in after.content
    assert "restarted" not in after.content


def test_a_job_that_ends_unwatched_is_noticed_once(jobs_session: Session) -> None:
    call(jobs_session, shell("sleep 1.5; exit 3"))
    deadline = time.monotonic() + 5
    notices: list[JobView] = []
    while not notices and time.monotonic() < deadline:
        time.sleep(0.1)
        notices = jobs_session.job_notices()
    [notice] = notices
    assert (notice.id, notice.state, notice.exit_code) == (1, "ended", 3)
    assert jobs_session.job_notices() == []


def test_an_explicit_timeout_still_kills(jobs_session: Session) -> None:
    result = call(jobs_session, f"{F}shell 2\nsleep 3114.2\n{F}\n")
    assert "Timed out after 2 s" in result.content and "job" not in result.metadata
    assert gone("3114.2")


def test_past_the_job_limit_processes_left_behind_are_killed(jobs_session: Session) -> None:
    call(jobs_session, shell("sleep 3115.1 &"))
    call(jobs_session, shell("sleep 3115.2 &"))
    result = call(jobs_session, shell("sleep 3115.3 & echo third"))
    assert "third" in result.content and "2 jobs are running already" in result.content
    assert gone("3115.3") and len(running("3115.")) == 2


def test_closing_the_session_ends_every_job_tree(workspace: Path) -> None:
    for sandbox in ("off", "workspace-write") if sandbox_support().available else ("off",):
        with tool_session(workspace, ["shell"], sandbox=sandbox, background_after=0.5) as session:
            call(session, shell("setsid sleep 3116.1 & nohup sleep 3116.2 >/dev/null & "
                                "(sleep 3116.3 &) ; sleep 3116.4"))
            assert len(running("3116.")) == 4
        assert gone("3116."), sandbox


def test_output_past_the_disk_cap_stops_the_job(workspace: Path, tmp_path: Path) -> None:
    jobs = JobManager(lambda: tmp_path, output_limit=1000, disk_limit=1_000_000)
    shell_session = ShellSession(workspace, jobs=jobs)
    try:
        result = shell_session.run("sleep 1; yes fencecall", background_after=0.5)
        assert result.job == 1
        view = jobs.wait(1, 10)
        assert view.state == "overflowed"
        assert (tmp_path / "1.log").stat().st_size == 1_000_000
        assert "bytes cut" in view.output and len(view.output) < 1100
    finally:
        jobs.close()
        shell_session.close()


def test_job_numbers_go_on_from_the_logs_of_the_conversation(workspace: Path,
                                                             tmp_path: Path) -> None:
    logs = tmp_path / "jobs"
    logs.mkdir()
    for number in (1, 2):
        (logs / f"{number}.log").write_text("earlier run\n")
    with tool_session(workspace, ["shell"], sandbox="off", background_after=0.5) as session:
        session.serve_agent(jobs_folder=logs)
        assert "as job 3" in call(session, shell("echo hi; sleep 3117")).content
        assert session.jobs.wait(3, 0).log == logs / "3.log"
    assert (logs / "3.log").read_text() == "hi\n"
    assert oct(os.stat(logs / "3.log").st_mode & 0o777) == "0o600"


def test_the_jobs_tool_comes_with_the_shell_and_explains_mistakes(
        jobs_session: Session) -> None:
    assert jobs_session.toolchain.get("jobs") is not None
    assert "no background jobs" in call(jobs_session, f"{F}jobs\n{F}\n").content.lower()
    missing = call(jobs_session, f"{F}jobs output\n{F}\n")
    assert "needs a job id" in missing.content and f"{F}jobs output 1" in missing.content
    unknown = call(jobs_session, f"{F}jobs wait 7 1\n{F}\n")
    assert "there is no job 7" in unknown.content


@needs_bwrap
def test_a_page_fetched_from_the_host_is_not_the_sandboxes(workspace: Path) -> None:
    """The shared loopback is the conversation's own: a job's server is not on the host."""
    with tool_session(workspace, ["shell"], background_after=0.5) as session:
        port = free_port()
        call(session, shell(f"python3 -m http.server {port} --bind 127.0.0.1"))
        time.sleep(1)
        with pytest.raises(OSError):
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2)


class _Broken:
    """A job whose processes cannot be looked at."""

    def poll(self) -> tuple[bool, int | None]:
        raise ValueError("unreadable")

    def kill(self) -> None:
        pass

    def close(self) -> None:
        pass


class _Sleeper:
    def __init__(self, seconds: float):
        self._until = time.monotonic() + seconds

    def poll(self) -> tuple[bool, int | None]:
        return (True, 0) if time.monotonic() >= self._until else (False, None)

    def kill(self) -> None:
        self._until = 0

    def close(self) -> None:
        pass


def test_a_job_that_breaks_the_pump_is_stopped_and_the_others_are_watched(
        tmp_path: Path) -> None:
    jobs = JobManager(lambda: tmp_path, output_limit=1000, disk_limit=1000)
    try:
        broken, _ = jobs.adopt("broken", _Broken(), ())
        sleeper, _ = jobs.adopt("sleeper", _Sleeper(0.5), ())
        assert jobs.wait(sleeper, 5).state == "ended"
        assert jobs.output(broken).state == "stopped"
    finally:
        jobs.close()


def test_a_wait_of_no_real_length_is_refused(jobs_session: Session) -> None:
    call(jobs_session, shell("sleep 3119.1 &"))
    result = call(jobs_session, f"{F}jobs wait 1 nan\n{F}\n")
    assert "positive number of seconds" in result.content


def test_a_flood_on_the_shells_own_stdout_is_not_kept(workspace: Path) -> None:
    """A command can write to bash's saved stdout (the marker pipe): fencecall reads past it
    without keeping it, and still sees the command end."""
    shell_session = ShellSession(workspace)
    try:
        started = time.monotonic()
        result = shell_session.run("head -c 200000000 /dev/zero > /proc/$$/fd/10; echo done",
                                   timeout=60)
        assert result.stdout == "done\n" and result.exit_code == 0
        assert time.monotonic() - started < 30
        assert shell_session._bash is not None and len(shell_session._bash._buffer) < 1000
    finally:
        shell_session.close()


@needs_bwrap
def test_a_read_only_run_cannot_reach_the_shells_scratch_folder(workspace: Path) -> None:
    """It runs unasked: the scripts and state the writable shell sources next are not in
    its reach, not even to read."""
    with tool_session(workspace, ["shell"], background_after=0.5) as session:
        call(session, shell("export KEPT=1"))
        call(session, shell("sleep 3120.1"))  # a job: the state before it is pending
        shell_session = made(session, SHELL)
        assert isinstance(shell_session, ShellSession)
        folder = shell_session._dir
        assert folder is not None  # made for the pending state
        result = shell_session.run(f"echo $KEPT; ls {folder}; touch {folder}/x.state",
                                   read_only=True)
        assert result.stdout == "1\n" and result.exit_code != 0
        assert not (folder / "x.state").exists()
        assert "export KEPT" not in result.stdout
