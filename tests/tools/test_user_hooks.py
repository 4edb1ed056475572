"""User hooks in one process: the runner's limits, the reading of a hook's reply, and the
adapters on a real session's hook points (real commands, no model)."""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from fencecall.config import ConfigError, load_config
from fencecall.execution import Session, auto_no
from fencecall.message import Status
from fencecall.secrecy import Redactor
from fencecall.tools import HookRegistry, Toolchain
from fencecall.tools.user_hooks import OUTPUT_CAP, UserHook, UserHooks, read_hooks
from fencecall.tools.user_hooks._runner import Finished, run_hook
from fencecall.tools.user_hooks._verdict import Verdict, verdict

from ..support import F


def sh(command: str, event: str = "pre_tool", **options: object) -> UserHook:
    [hook] = read_hooks([{"event": event, "command": command, **options}])
    return hook


def test_a_flooding_hook_keeps_only_the_cap_and_gets_its_input(tmp_path: Path) -> None:
    flood = (f"{sys.executable} -c \"import sys; data = sys.stdin.read(); "
             "sys.stdout.write(data * 1000000); sys.stderr.write('e' * 10000000)\"")
    started = time.monotonic()
    done = run_hook(sh(flood).argv, b"xy", cwd=tmp_path, env={"PATH": "/usr/bin:/bin"},
                    timeout=30)
    assert time.monotonic() - started < 20
    assert done.exit_code == 0
    assert done.stdout == "xy" * (OUTPUT_CAP // 2) and len(done.stderr) == OUTPUT_CAP


def test_what_a_hook_left_running_is_killed_with_it(tmp_path: Path) -> None:
    pid = tmp_path / "pid"
    done = run_hook(sh(f"sleep 30 & echo $! > {pid}").argv, b"", cwd=tmp_path,
                    env={"PATH": "/usr/bin:/bin"}, timeout=10)
    assert done.exit_code == 0
    assert gone(int(pid.read_text()))


def test_ctrl_c_stops_a_running_hook(tmp_path: Path) -> None:
    pid = tmp_path / "pid"
    timer = threading.Timer(1.0, signal.raise_signal, [signal.SIGINT])
    timer.start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        run_hook(sh(f"echo $$ > {pid}; exec sleep 30").argv, b"", cwd=tmp_path,
                 env={"PATH": "/usr/bin:/bin"}, timeout=60)
    assert time.monotonic() - started < 10
    assert gone(int(pid.read_text()))


def gone(pid: int) -> bool:
    """Whether process ``pid`` has ended (a signal is delivered soon, not at once)."""
    status = Path(f"/proc/{pid}/status")
    for _ in range(100):
        try:
            if "zombie" in status.read_text():
                return True
        except FileNotFoundError:
            return True
        time.sleep(0.02)
    return False


@pytest.mark.parametrize(("event", "code", "out", "err", "expected"), [
    ("pre_tool", 2, "", "no\n", Verdict(block="no")),
    ("pre_tool", 1, "", "oops", Verdict(block="hooks[0] (pre_tool) failed with exit status "
                                               "1: oops", problem="hooks[0] (pre_tool) failed "
                                                                  "with exit status 1: oops")),
    ("post_tool", 1, "", "", Verdict(problem="hooks[0] (post_tool) failed with exit status 1")),
    ("post_tool", 2, "", "lint errors", Verdict(context=("lint errors",))),
    ("session_end", 2, "", "bye", Verdict(problem="hooks[0] (session_end): bye")),
    ("pre_tool", 0, '{"decision": "approve", "reason": "fine"}', "", Verdict(allow="fine")),
    ("pre_tool", 0, '{"decision": "ask", "additionalContext": "careful"}', "",
     Verdict(context=("careful",))),
    ("stop", 0, '{"decision": "block", "reason": "go on"}', "", Verdict(block="go on")),
    ("stop", 0, "not json", "", Verdict()),
    ("prompt", 0, "plain context\n", "", Verdict(context=("plain context",))),
    ("prompt", 0, '{"hookSpecificOutput": {"additionalContext": "ctx"}}', "",
     Verdict(context=("ctx",))),
])
def test_a_hooks_exit_status_and_reply_are_read_as_claude_codes(
        event: str, code: int, out: str, err: str, expected: Verdict) -> None:
    assert verdict(sh("true", event), Finished(code, out, err)) == expected


def test_a_timed_out_guard_blocks_but_other_hooks_do_not() -> None:
    assert verdict(sh("true", timeout=2), Finished(None, "", "")).block is not None
    assert verdict(sh("true", "prompt", timeout=2), Finished(None, "", "")).block is None


def test_only_tool_events_take_a_matcher_and_globs_match_tool_names(tmp_path: Path) -> None:
    hook = sh("true", matcher="save|mcp.github.*")
    assert hook.matches("save") and hook.matches("mcp.github.issues")
    assert not hook.matches("shell") and not hook.matches("mcp.gitlab.x")
    config = tmp_path / "config.toml"
    config.write_text('[[hooks]]\nevent = "prompt"\nmatcher = "x"\ncommand = "true"\n')
    with pytest.raises(ConfigError, match=r"config.toml: hooks\[0\].matcher"):
        load_config({"FENCECALL_CONFIG": str(config)})


def test_hooks_on_a_session_guard_and_read_its_calls(workspace: Path, tmp_path: Path) -> None:
    """A guard that allows skips confirmation (here: every call would be declined); one that
    matches another tool leaves the call alone; a post hook reads the result."""
    seen = tmp_path / "seen"
    hooks = HookRegistry()
    warned: list[str] = []
    UserHooks((sh("""echo '{"decision": "allow"}'""", matcher="shell"),
               sh("exit 2", matcher="save"),
               sh(f"cat > {seen}", "post_tool")), redact=Redactor({"KEY": "sk-1234"}),
              warn=warned.append).register(hooks)
    with Session(Toolchain.build(["shell"]), workspace=workspace, confirm=auto_no,
                 hooks=hooks, sandbox="off") as session:
        [result] = session.execute(f"{F}shell\necho hi sk-1234\n{F}\n")
    assert result.status is None and "hi" in result.content
    event = json.loads(seen.read_text())
    assert event["tool_input"] == {"command": "echo hi [REDACTED:KEY]"}
    assert "hi [REDACTED:KEY]" in event["tool_result"]["content"]
    assert warned == []


def test_a_hook_that_cannot_start_blocks_a_guarded_call(workspace: Path) -> None:
    hooks = HookRegistry()
    warned: list[str] = []
    missing = UserHook("pre_tool", ("/nonexistent/hook",), name="hooks[0] (pre_tool)")
    UserHooks((missing,), redact=str, warn=warned.append).register(hooks)
    with Session(Toolchain.build(["shell"]), workspace=workspace, confirm=auto_no,
                 hooks=hooks, sandbox="off") as session:
        [result] = session.execute(f"{F}shell\necho hi\n{F}\n")
    assert result.status is Status.BLOCKED and "could not start" in result.content
    assert len(warned) == 1 and "could not start" in warned[0]
