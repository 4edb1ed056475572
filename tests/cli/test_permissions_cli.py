"""Permission rules through the real command line: ``--allow``, ``--deny`` and the
configuration's ``[permissions]``, with no terminal to ask."""

from __future__ import annotations

import json
from pathlib import Path

from ..fakeserver import FakeModelServer, Reply
from .conftest import CLI, cli_env
from .test_run_cmd import fencecall as run_cli

F = "```"
MODEL = ("--model", "local/test-model", "--sandbox", "off")  # off: every shell call asks


def test_an_allow_rule_runs_a_call_without_a_terminal(fencecall: CLI, workspace: Path) -> None:
    replies = [Reply(f"{F}shell\necho hi > /dev/null; echo hi\n{F}"), Reply("Done.")]
    with FakeModelServer(replies) as server:
        result = fencecall(*MODEL, "--allow", "shell(echo *)", "say hi",
                           base_url=server.openai_url)
    assert result.returncode == 0, result.stderr
    assert "hi" in server.requests[1].body["messages"][-1]["content"]
    assert "not confirmed" not in json.dumps(server.requests[1].body["messages"])


def test_an_allow_rule_does_not_let_a_compound_line_through(fencecall: CLI,
                                                            workspace: Path) -> None:
    replies = [Reply(f"{F}shell\necho hi; touch pwned\n{F}"), Reply("Done.")]
    with FakeModelServer(replies) as server:
        result = fencecall(*MODEL, "--allow", "shell(echo *)", "say hi",
                           base_url=server.openai_url)
    assert not (workspace / "pwned").exists()
    told = server.requests[1].body["messages"][-1]["content"]
    assert "not confirmed" in told, result.stderr


def test_a_deny_rule_wins_over_yes_and_the_model_hears_it(fencecall: CLI,
                                                          workspace: Path) -> None:
    replies = [Reply(f"{F}shell\necho hi && touch pwned\n{F}"), Reply("Done.")]
    with FakeModelServer(replies) as server:
        fencecall(*MODEL, "-y", "--deny", "shell(touch *)", "say hi",
                  base_url=server.openai_url)
    assert not (workspace / "pwned").exists()
    told = server.requests[1].body["messages"][-1]["content"]
    assert "The shell call was blocked: the user's deny rule shell(touch *) refuses it " \
           "(touch pwned)" in told


def test_the_configured_rules_work_the_same(fencecall: CLI, workspace: Path,
                                            tmp_path: Path) -> None:
    config = tmp_path / "config" / "fencecall" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[permissions]\nallow = ["shell(echo *)", "shell(touch made)"]\n'
                      'deny = ["read(**/.env)"]\n')
    (workspace / ".env").write_text("SECRET=1\n")
    replies = [Reply(f"{F}shell\necho hi; touch made\n{F}"), Reply(f"{F}read .env\n{F}"),
               Reply("Done.")]
    with FakeModelServer(replies) as server:
        result = fencecall(*MODEL, "go", base_url=server.openai_url)
    assert result.returncode == 0, result.stderr
    assert (workspace / "made").exists()
    told = server.requests[2].body["messages"][-1]["content"]
    assert "deny rule read(**/.env) refuses it (.env)" in told and "SECRET" not in told


def test_a_malformed_rule_exits_2_and_names_it(fencecall: CLI, workspace: Path,
                                               tmp_path: Path) -> None:
    result = fencecall(*MODEL, "--allow", "shell(git status", "go", base_url="http://x")
    assert result.returncode == 2
    assert "permission rule 'shell(git status': the pattern must end with ')'" in result.stderr
    assert "Traceback" not in result.stderr
    config = tmp_path / "bad.toml"
    config.write_text('[permissions]\ndeny = ["rm *)"]\n')
    env = cli_env(tmp_path, "http://x", FENCECALL_CONFIG=str(config))
    result = fencecall(*MODEL, "go", base_url="http://x", env=env)
    assert result.returncode == 2
    assert f"{config}: permissions.deny: permission rule 'rm *)'" in result.stderr


def test_run_applies_the_rules_to_a_saved_reply(tmp_path: Path) -> None:
    reply = tmp_path / "reply.md"
    reply.write_text(f"{F}save src/a.py\nx = 1\n{F}\n{F}save b.py\ny = 2\n{F}\n")
    result = run_cli("run", "-w", str(tmp_path / "ws"), "--allow", "save(src/**)", str(reply))
    assert result.returncode == 1  # b.py was declined
    assert (tmp_path / "ws" / "src" / "a.py").read_text() == "x = 1\n"
    assert not (tmp_path / "ws" / "b.py").exists()
    result = run_cli("run", "-y", "-w", str(tmp_path / "ws"), "--deny", "save", str(reply))
    assert result.returncode == 1 and "deny rule save refuses it" in result.stdout
    assert not (tmp_path / "ws" / "b.py").exists()
