"""One call builds the agent the command line would, from the user's configuration, against
a real (local, fake) model server; and closes what it started."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fencecall import agent_from_config, auto_yes
from fencecall.agent import Outcome
from fencecall.assembly import NoModel
from fencecall.config import ConfigError
from fencecall.tools import ResourceKey

from ..fakeserver import FakeModelServer, Reply
from ..support import F


def env_for(tmp_path: Path, server: FakeModelServer, text: str = "") -> dict[str, str]:
    config = tmp_path / "config.toml"
    config.write_text(text)
    return {"FENCECALL_CONFIG": str(config), "FENCECALL_HOME": str(tmp_path / "home"),
            "FENCECALL_LOCAL_BASE_URL": server.openai_url}


def test_one_call_builds_a_configured_agent_that_runs_and_closes(tmp_path: Path) -> None:
    replies = [Reply(f"{F}shell\necho hello\n{F}\n"), Reply("It printed hello.")]
    with FakeModelServer(replies) as server:
        env = env_for(tmp_path, server, "max_steps = 9\nnear_misses = 1\nretries = 0\n")
        env["FENCECALL_FORMAT"] = "xml"  # a keyword wins over the environment, as a flag does
        with agent_from_config("local/fake", workspace=tmp_path / "ws", confirm=auto_yes,
                               env=env, format="markdown", sandbox="off", max_tokens=300,
                               max_steps=4) as agent:
            assert (agent.settings.max_steps, agent.settings.feedback_limit) == (4, 1)
            assert agent.format.name == "markdown" and agent.model == "fake"
            run = agent.run("Say hello with the shell.")
            session = agent.session
    assert run.outcome is Outcome.DONE and run.answer == "It printed hello."
    assert "hello" in run.messages[2].content
    assert (tmp_path / "ws").is_dir() and session.workspace == (tmp_path / "ws").resolve()
    assert [request.body["max_tokens"] for request in server.requests] == [300, 300]
    with pytest.raises(RuntimeError, match="closed"):  # the session ended with the block
        session.resource(ResourceKey("probe"), object)


def test_calls_that_need_a_yes_are_declined_unless_confirm_says_so(tmp_path: Path) -> None:
    replies = [Reply(f"{F}shell\ntouch made\n{F}\n"), Reply("Could not.")]
    with FakeModelServer(replies) as server:
        built = agent_from_config("local/fake", workspace=tmp_path / "ws", sandbox="off",
                                  env=env_for(tmp_path, server))
        try:
            run = built.agent.run("Make a file.")
        finally:
            built.close()
    assert "not confirmed" in run.messages[2].content
    assert not (tmp_path / "ws" / "made").exists()


@pytest.mark.parametrize(("settings", "message"), [
    ({"max_step": 3}, "agent_from_config: max_step: unknown setting; did you mean max_steps?"),
    ({"max_steps": 0}, "agent_from_config: max_steps must be an integer of at least 1, got 0"),
    ({"sandbox": "jail"}, "agent_from_config: sandbox must be one of read-only"),
    ({"telemetry": True}, "agent_from_config: telemetry: unknown setting"),
    ({"timeout": 5, "request_timeout": 5},
     "agent_from_config: timeout and request_timeout: timeout is the old name"),
    ({"budget_usd": -1}, "agent_from_config: budget_usd must be a number"),
])
def test_a_bad_name_or_value_is_a_clear_config_error(
        tmp_path: Path, settings: dict[str, Any], message: str) -> None:
    with FakeModelServer([]) as server:
        with pytest.raises(ConfigError) as caught:
            agent_from_config("local/fake", env=env_for(tmp_path, server), **settings)
        assert server.requests == []
    assert str(caught.value).startswith(message), caught.value


def test_old_names_are_keywords_too_and_a_model_is_needed(tmp_path: Path) -> None:
    with FakeModelServer([]) as server:
        env = env_for(tmp_path, server)
        with agent_from_config("local/fake", workspace=tmp_path / "ws", env=env, near_misses=0,
                               timeout=3, budget_tokens=1000) as agent:
            assert agent.settings.feedback_limit == 0
            assert agent.billing.spend.limits.tokens == 1000
        with pytest.raises(NoModel, match="no model configured"):
            agent_from_config(env=env)
