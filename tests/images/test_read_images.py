"""The read tool shows an image file to the model as an image, through the real agent and the
real local server in both wire formats; a model configured ``vision = false`` gets a note."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from fencecall import agent_from_config
from fencecall.agent import Outcome
from fencecall.config import ConfigError, load_config

from ..fakeserver import FakeModelServer, Reply
from ..support import F
from .test_wire_images import png, size_of

MODELS = {"openai": "local/fake", "anthropic": "claude/fake"}


def _run(tmp_path: Path, kind: str, table: str = "") -> list[dict[str, Any]]:
    """The bodies of the requests of a run whose model reads ``shot.png``, 3000 by 1500."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "shot.png").write_bytes(png(3000, 1500))
    replies = [Reply(f"{F}read shot.png\n{F}\n"), Reply("A red rectangle.")]
    with FakeModelServer(replies) as server:
        config = tmp_path / "config.toml"
        config.write_text(f'[providers.claude]\nkind = "anthropic"\nbase_url = '
                          f'"{server.base_url}"\n{table}')
        env = {"FENCECALL_CONFIG": str(config), "FENCECALL_HOME": str(tmp_path / "home"),
               "FENCECALL_LOCAL_BASE_URL": server.openai_url}
        with agent_from_config(MODELS[kind], workspace=workspace, env=env, sandbox="off",
                               format="markdown") as agent:
            run = agent.run("What is in shot.png?")
    assert run.outcome is Outcome.DONE
    return [served.body for served in server.requests]


def _parts(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Every content part or block of a request's messages."""
    return [part for message in body["messages"] if isinstance(message["content"], list)
            for part in message["content"]]


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_the_read_tool_shows_an_image_downscaled_to_the_providers_limit(
        tmp_path: Path, kind: str) -> None:
    first, second = _run(tmp_path, kind)
    assert not [p for p in _parts(first) if p["type"] in ("image", "image_url")]
    if kind == "openai":
        [part] = [p for p in _parts(second) if p["type"] == "image_url"]
        data = part["image_url"]["url"].split(",", 1)[1]
        assert size_of(base64.b64decode(data)) == (2048, 1024)
    else:
        [block] = [p for p in _parts(second) if p["type"] == "image"]
        assert size_of(base64.b64decode(block["source"]["data"])) == (1568, 784)
    assert "shot.png: an image (image/png, 2048×1024 pixels)" in str(second["messages"])  # noqa: RUF001


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_model_without_vision_gets_a_note_instead(tmp_path: Path, kind: str) -> None:
    table = f'[models."{MODELS[kind]}"]\nvision = false\n'
    _, second = _run(tmp_path, kind, table)
    assert not [p for p in _parts(second) if p["type"] in ("image", "image_url")]
    assert "an image of 2048×1024 (shot.png); this model takes no images" in str(  # noqa: RUF001
        second["messages"])


def test_a_vision_setting_must_be_true_or_false(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[models."local/fake"]\nvision = "no"\n')
    with pytest.raises(ConfigError, match="vision must be true or false"):
        load_config({"FENCECALL_CONFIG": str(config)})
    config.write_text('[models."local/fake"]\nvision = false\n')
    assert not load_config({"FENCECALL_CONFIG": str(config)}).model_settings(
        "local/fake").vision
