"""End to end: the user's ``[[hooks]]`` commands, run by the real CLI against the fake model
server (real scripts, real processes)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from ..fakeserver import FakeModelServer, Reply
from .conftest import CLI, cli_env

SHELL_CALL = "```shell\ntouch side-effect && echo made it\n```\n"


def configure(tmp_path: Path, text: str) -> None:
    """The user's configuration file, where the ``fencecall`` fixture's runs read it."""
    config = tmp_path / "config" / "fencecall" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(text)


def script(tmp_path: Path, name: str, body: str) -> str:
    """A python hook script outside the workspace; the command line that runs it."""
    path = tmp_path / "hooks" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(body)
    return f"{sys.executable} {path}"


def hook(event: str, command: str, **extra: object) -> str:
    keys = "".join(f"{key} = {json.dumps(value)}\n" for key, value in extra.items())
    return f"[[hooks]]\nevent = {json.dumps(event)}\ncommand = {json.dumps(command)}\n{keys}"


def last_said(server: FakeModelServer) -> str:
    return json.dumps(server.requests[-1].body["messages"][-1])


def test_a_pre_tool_hook_that_exits_2_blocks_the_call_even_with_yes(
        fencecall: CLI, workspace: Path, tmp_path: Path) -> None:
    configure(tmp_path, hook("pre_tool", "echo 'no shell today' >&2; exit 2",
                             matcher="read|shell"))
    with FakeModelServer([Reply(SHELL_CALL), Reply("Fine.")]) as server:
        result = fencecall("-y", "--model", "local/m", "go", base_url=server.openai_url)
    assert result.returncode == 0, result.stderr
    assert not (workspace / "side-effect").exists()
    assert len(server.requests) == 2 and "no shell today" in last_said(server)
    assert "was blocked" in last_said(server)


def test_a_pre_tool_hook_that_allows_lets_the_call_run_without_yes_or_a_terminal(
        fencecall: CLI, workspace: Path, tmp_path: Path) -> None:
    configure(tmp_path, hook("pre_tool", """echo '{"decision": "allow"}'""", matcher="shell"))
    with FakeModelServer([Reply(SHELL_CALL), Reply("Fine.")]) as server:
        result = fencecall("--model", "local/m", "go", base_url=server.openai_url, stdin="")
    assert result.returncode == 0, result.stderr
    assert (workspace / "side-effect").exists()
    assert "made it" in last_said(server)


def test_a_pre_tool_hook_that_denies_in_json_tells_the_model_why(
        fencecall: CLI, workspace: Path, tmp_path: Path) -> None:
    reply = {"hookSpecificOutput": {"permissionDecision": "deny",
                                    "permissionDecisionReason": "not on Fridays"}}
    configure(tmp_path, hook("pre_tool", f"echo '{json.dumps(reply)}'"))
    with FakeModelServer([Reply(SHELL_CALL), Reply("Fine.")]) as server:
        result = fencecall("-y", "--model", "local/m", "go", base_url=server.openai_url)
    assert result.returncode == 0, result.stderr
    assert not (workspace / "side-effect").exists()
    assert "not on Fridays" in last_said(server)


def test_a_post_tool_hook_reads_the_result_and_adds_context(
        fencecall: CLI, workspace: Path, tmp_path: Path) -> None:
    seen = tmp_path / "seen.json"
    body = ("import json, sys\n"
            f"open({str(seen)!r}, 'w').write(sys.stdin.read())\n"
            "print(json.dumps({'additionalContext': 'the linter is happy'}))\n")
    configure(tmp_path, hook("post_tool", script(tmp_path, "post.py", body), matcher="sh*"))
    with FakeModelServer([Reply(SHELL_CALL), Reply("Fine.")]) as server:
        result = fencecall("-y", "--model", "local/m", "--name", "p", "go",
                           base_url=server.openai_url)
    assert result.returncode == 0, result.stderr
    event = json.loads(seen.read_text())
    assert {key: event[key] for key in ("hook_event", "session_id", "workspace", "cwd",
                                        "tool", "tool_input")} == {
        "hook_event": "post_tool", "session_id": "p", "workspace": str(workspace),
        "cwd": str(workspace), "tool": "shell",
        "tool_input": {"command": "touch side-effect && echo made it"}}
    outcome = event["tool_result"]
    assert "made it" in outcome["content"]
    assert (outcome["status"], outcome["exit_code"]) == ("ok", 0)
    assert 0 <= outcome["duration_ms"] < 60_000
    assert "the linter is happy" in json.dumps(server.requests[1].body["messages"])


def test_a_stop_hook_that_exits_2_once_makes_the_agent_go_on(
        fencecall: CLI, tmp_path: Path) -> None:
    seen = tmp_path / "stops.jsonl"
    body = ("import sys\n"
            f"with open({str(seen)!r}, 'a') as log: log.write(sys.stdin.read() + '\\n')\n"
            f"if len(open({str(seen)!r}).readlines()) == 1:\n"
            "    print('the tests still fail, fix them', file=sys.stderr)\n"
            "    sys.exit(2)\n")
    configure(tmp_path, hook("stop", script(tmp_path, "stop.py", body)))
    with FakeModelServer([Reply("All done."), Reply("Now really done.")]) as server:
        result = fencecall("--model", "local/m", "go", base_url=server.openai_url)
    assert result.returncode == 0, result.stderr
    assert len(server.requests) == 2
    assert server.requests[1].body["messages"][-1] == {
        "role": "user", "content": "the tests still fail, fix them"}
    first, second = (json.loads(line) for line in seen.read_text().splitlines())
    assert (first["hook_event"], first["outcome"], first["stop_hook_active"]) == (
        "stop", "done", False)
    assert first["reason"] == "the model answered without a tool call"
    assert second["stop_hook_active"] is True
    assert "Now really done." in result.stdout


def test_a_prompt_hook_that_exits_2_keeps_the_prompt_from_the_model(
        fencecall: CLI, tmp_path: Path) -> None:
    configure(tmp_path, hook("prompt", "grep -q secret-project && { echo 'not that one' >&2; "
                                       "exit 2; }; echo 'Answer in French.'"))
    with FakeModelServer([Reply("Bonjour.")]) as server:
        blocked = fencecall("--model", "local/m", "about secret-project",
                            base_url=server.openai_url)
        assert not server.requests
        allowed = fencecall("--model", "local/m", "hello", base_url=server.openai_url)
    assert blocked.returncode == 1 and "not that one" in blocked.stdout
    assert allowed.returncode == 0, allowed.stderr
    said = [m["content"] for m in server.requests[0].body["messages"][1:]]
    assert said[0] == "hello" and "Answer in French." in said[1]


def test_a_hook_past_its_timeout_is_killed_and_the_run_goes_on(
        fencecall: CLI, workspace: Path, tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    sleeper = f"sleep 30 & echo $! >> {pids}; wait"
    configure(tmp_path, hook("prompt", sleeper, timeout=1)
              + hook("pre_tool", sleeper, timeout=1.5))
    started = time.monotonic()
    with FakeModelServer([Reply(SHELL_CALL), Reply("Fine.")]) as server:
        result = fencecall("-y", "--model", "local/m", "go", base_url=server.openai_url)
    assert time.monotonic() - started < 25
    assert result.returncode == 0, result.stderr
    assert "hooks[0] (prompt) took over 1 s and was stopped" in result.stderr
    assert not (workspace / "side-effect").exists()  # a guard that failed blocks
    assert "hooks[1] (pre_tool) took over 1.5 s" in last_said(server)
    for pid in pids.read_text().split():
        assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(
            f"/proc/{pid}/status").read_text()


def test_a_hook_gets_the_tool_environment_without_the_api_key(
        fencecall: CLI, tmp_path: Path) -> None:
    secret = "sk-hooks-must-not-see-this-1234"
    dump = tmp_path / "env.json"
    body = f"import json, os\nopen({str(dump)!r}, 'w').write(json.dumps(dict(os.environ)))\n"
    configure(tmp_path, hook("session_start", script(tmp_path, "env.py", body)))
    with FakeModelServer([Reply("Hi.")]) as server:
        env = cli_env(tmp_path, server.openai_url, OPENAI_API_KEY=secret,
                      OPENAI_BASE_URL=server.openai_url)
        result = fencecall("--model", "openai/m", "hi", base_url=server.openai_url, env=env)
    assert result.returncode == 0, result.stderr
    assert server.requests[0].headers["authorization"] == f"Bearer {secret}"
    seen = json.loads(dump.read_text())
    assert "OPENAI_API_KEY" not in seen and secret not in json.dumps(seen)
    assert seen["FENCECALL_HOOK_EVENT"] == "session_start" and seen["PATH"]
    assert not [name for name in seen if name.startswith("FENCECALL_") and name not in (
        "FENCECALL_HOOK_EVENT",)]


@pytest.mark.parametrize(("entry", "said"), [
    ('[[hooks]]\nevent = "pre_tools"\ncommand = "true"\n',
     "hooks[0].event must be one of session_start, prompt, pre_tool"),
    ('[[hooks]]\nevent = "stop"\nmatcher = "shell"\ncommand = "true"\n',
     "hooks[0].matcher: a tool name glob"),
    ('[[hooks]]\nevent = "stop"\ncommand = []\n', "hooks[0].command must be a command line"),
    ('[[hooks]]\nevent = "stop"\ncommand = "true"\ntimeout = 0\n',
     "hooks[0].timeout must be a number of seconds above 0"),
    ('[[hooks]]\nevent = "stop"\ncommand = "true"\n[[hooks]]\nevent = "stop"\n'
     'comand = "true"\n', "hooks[1].comand: unknown setting; did you mean command?"),
    ('hooks = "true"\n', "hooks must be an array of tables"),
])
def test_bad_hook_entries_are_clear_errors(fencecall: CLI, tmp_path: Path, entry: str,
                                           said: str) -> None:
    configure(tmp_path, entry)
    result = fencecall("--model", "local/m", "hi", base_url="http://127.0.0.1:9/v1")
    assert result.returncode == 2
    assert said in result.stderr and "config.toml" in result.stderr
