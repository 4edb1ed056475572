"""The shell tool, driven by real markdown replies."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from fencecall.execution import Session
from fencecall.sandbox._processes import live_processes
from fencecall.tools.runtime.shell_policy import is_read_only
from fencecall.tools.runtime.shell_session import ShellResult, ShellSession
from fencecall.tools.tool_context import SHELL

from ..support import F, made, tool_session
from .conftest import Run


def shell(command: str) -> str:
    return f"Let me run it.\n{F}shell\n{command}\n{F}\n"


def session_members(sid: int) -> list[int]:
    """The live processes of session ``sid``, zombies left out."""
    return [info.pid for info in live_processes() if info.sid == sid]


def test_stdout_stderr_and_exit_code_are_separate(run: Run) -> None:
    [result] = run(shell("echo out; echo err >&2; exit 3"))
    assert "stdout:\n```\nout\n```" in result.content
    assert "stderr:\n```\nerr\n```" in result.content
    assert "Exit code: 3" in result.content
    assert result.exit_code == 3


def test_cwd_and_environment_persist(run: Run, workspace: Path) -> None:
    (workspace / "sub").mkdir()
    run(shell("cd sub && export GREETING=hi"))
    [result] = run(shell("pwd; echo $GREETING"))
    assert f"{workspace / 'sub'}\nhi" in result.content


def test_timeout_kills_the_whole_process_group(run: Run, session: Session,
                                               workspace: Path) -> None:
    marker = workspace / "survived"
    started = time.monotonic()
    [result] = run(f"{F}shell 1\n(sleep 3; touch {marker}) & sleep 30 | cat\n{F}\n")
    assert time.monotonic() - started < 10
    assert "Timed out after 1 s" in result.content
    assert result.metadata["timed_out"] is True
    assert not made(session, SHELL).has_processes()
    time.sleep(3.5)
    assert not marker.exists()
    [after] = run(shell("echo still here"))
    assert "still here" in after.content


def test_stuck_builtin_loop_restarts_the_shell(run: Run, workspace: Path) -> None:
    (workspace / "sub").mkdir()
    run(shell("cd sub; export KEEP=1; LOCAL=2; f() { :; }"))
    [result] = run(f"{F}shell 1\nwhile true; do :; done\n{F}\n")
    assert "Timed out" in result.content and "The shell was restarted" in result.content
    [after] = run(shell("echo [$KEEP][$LOCAL]; pwd; type f"))
    assert f"[1][]\n{workspace / 'sub'}" in after.content  # exported state kept
    assert "not found" in after.content


def test_exit_restarts_the_shell(run: Run) -> None:
    [result] = run(shell("exit 7"))
    assert "Exit code: 7" in result.content and "restarted" in result.content
    [after] = run(shell("echo alive"))
    assert "alive" in after.content


def test_commands_reading_stdin_do_not_hang(run: Run) -> None:
    [result] = run(shell("read line; echo got:$line; cat"))
    assert "got:" in result.content and "Exit code: 0" in result.content


def test_long_output_is_cut_in_the_middle(run: Run) -> None:
    [result] = run(shell("seq 1 200000"))
    assert "\n1\n2\n" in result.content and "\n200000\n" in result.content
    assert "bytes cut ...]" in result.content
    assert len(result.content) < 20_000


def test_output_with_fences_gets_a_longer_fence(run: Run) -> None:
    [result] = run(shell("printf '```\\ninner\\n```\\n'"))
    assert "stdout:\n````\n```\ninner\n```\n````" in result.content


def test_closing_the_session_kills_jobs_in_their_own_process_group(workspace: Path) -> None:
    """``set -m`` gives each background job a process group of its own, which killing
    bash's group misses; they are still in bash's session, and closing ends them."""
    shell_session = ShellSession(workspace)
    shell_session.run("set -m; sleep 61 & sleep 62 & (sleep 63 &)")
    pid = shell_session.pid
    members = [member for member in session_members(pid) if member != pid]
    assert len(members) == 4  # bash (under the reaper, pid) and the sleeps
    assert {os.getpgid(member) for member in members} != {pid}
    shell_session.close()
    deadline = time.monotonic() + 5
    while session_members(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert session_members(pid) == []


def test_empty_command_is_refused(run: Run) -> None:
    [result] = run(f"{F}shell\n{F}\n")
    assert "the command is empty" in result.content


def test_closing_the_session_kills_background_jobs(workspace: Path) -> None:
    shell_session = ShellSession(workspace)
    shell_session.run("sleep 60 &")
    pid = shell_session.pid
    assert len(session_members(pid)) == 3  # the reaper, bash and sleep
    shell_session.close()
    deadline = time.monotonic() + 5
    while session_members(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert session_members(pid) == []
    assert not os.path.exists(f"/proc/{pid}")


def test_read_only_commands_skip_confirmation(workspace: Path) -> None:
    asked: list[str] = []

    def confirm(request: object) -> bool:
        asked.append("asked")
        return False

    with tool_session(workspace, ["shell"], confirm=confirm) as s:
        [ok] = list(s.execute(shell("ls -la | grep x; git status")))
        assert "Exit code" in ok.content and asked == []
        [declined] = list(s.execute(shell("rm -rf build")))
        assert "not confirmed" in declined.content and asked == ["asked"]


def test_under_yes_a_read_only_command_runs_in_the_persistent_shell(
        workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With every call approved a one-shot sandbox protects nothing more, so it is not paid
    for; asked, a read-only command still runs unasked in one (where the sandbox holds)."""
    one_shot: list[bool] = []
    run = ShellSession.run

    def spy(self: ShellSession, command: str, **options: Any) -> ShellResult:
        one_shot.append(options.get("read_only", False))
        return run(self, command, **options)

    monkeypatch.setattr(ShellSession, "run", spy)
    with tool_session(workspace, ["shell"]) as yes:
        [ran] = list(yes.execute(shell("echo hi")))
        enforced = yes.sandbox.enforced
    with tool_session(workspace, ["shell"], confirm=lambda request: False) as asks:
        [unasked] = list(asks.execute(shell("echo hi")))
    assert "hi" in ran.content and "hi" in unasked.content
    assert one_shot == [False, enforced]


def test_read_only_policy() -> None:
    for command in ("ls -la", "cat a.txt | grep -n foo | wc -l", "git log --oneline -5",
                    "find . -name '*.py'", "pwd && echo hi"):
        assert is_read_only(command), command
    for command in ("rm -rf /", "ls > out.txt", "echo $(rm x)", "ls `rm x`", "ls\nrm x",
                    "find . -delete", "git push", "git -c core.pager=x log", "sort -o f f",
                    "FOO=1 ls", "(ls)", "cat <(rm x)", "", "python -c 1", "git commit -m x"):
        assert not is_read_only(command), command


def test_real_ctrl_c_stops_the_command_but_keeps_the_shell(run: Run, session: Session,
                                                           tmp_path: Path) -> None:
    import signal
    import threading

    run(shell("export KEPT=yes"))
    marker = tmp_path / "finished"
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    started = time.monotonic()
    [result] = run(shell(f"sleep 5 && touch {marker}"))
    timer.join()
    assert time.monotonic() - started < 4
    assert result.content == "Interrupted: the shell call was stopped by the user (Ctrl-C)."
    time.sleep(5)
    assert not marker.exists()
    [after] = run(shell("echo $KEPT"))
    assert "yes" in after.content


def test_the_shell_runs_when_the_process_holds_over_a_thousand_descriptors(
        run: Run) -> None:
    """A batch of a thousand sessions holds thousands of descriptors: the shell's pipe may
    be numbered past 1024, which ``select`` refuses."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if min(hard, 4096) < 1100:
        pytest.skip("this machine allows too few open files")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4096)), hard))
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        [result] = run(shell("echo far"))
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert "far" in result.content and result.exit_code == 0, result.content
