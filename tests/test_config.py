"""Configuration from TOML and the environment, and choosing a provider."""

from __future__ import annotations

from pathlib import Path

import pytest

from fencecall.assembly import resolve_settings
from fencecall.config import ConfigError, load_config
from fencecall.providers import get_provider


def env_for(tmp_path: Path, text: str | None = None, **extra: str) -> dict[str, str]:
    path = tmp_path / "config.toml"
    if text is not None:
        path.write_text(text)
    return {"FENCECALL_CONFIG": str(path), "FENCECALL_HOME": str(tmp_path / "home"), **extra}


def test_file_values_and_environment_overrides(tmp_path: Path) -> None:
    text = ('model = "local/a"\nformat = "xml"\ntools = ["shell", "read"]\nmax_steps = 5\n'
            '[providers.vllm]\nkind = "openai"\nbase_url = "http://127.0.0.1:8000/v1"\n'
            'api_key_env = "VLLM_KEY"\n')
    config = load_config(env_for(tmp_path, text))
    assert (config.model, config.format.name, config.tools, config.max_steps) == (
        "local/a", "xml", ("shell", "read"), 5)
    assert config.home == tmp_path / "home"
    assert "VLLM_KEY" in config.secret_env_names()
    settings = resolve_settings(config, env={"FENCECALL_MODEL": "vllm/b",
                                             "FENCECALL_FORMAT": "tool", "FENCECALL_TOOLS": "save"})
    assert (settings.model, settings.format.name, settings.tools) == ("vllm/b", "tool", ("save",))
    provider, model = get_provider("vllm/b", config, {"VLLM_KEY": "k"})
    assert (provider.name, model) == ("vllm", "b")


@pytest.mark.parametrize(("text", "message"), [
    ("model = ", "not valid TOML"),
    ('[providers.x]\nkind = "grpc"\n', "kind must be 'openai' or 'anthropic'"),
    ('[providers.x]\nkind = "openai"\napi_key = "sk-1"\n', "keep keys out of files"),
    ('format = "yaml"\n', "format"),
    ("max_steps = 0\n", "max_steps must be an integer of at least 1, got 0"),
    ("max_tokens = 2.5\n", "max_tokens must be an integer of at least 1"),
    ("retries = -1\n", "retries must be an integer of at least 0"),
    ('timeout = "soon"\n', "timeout must be a number"),
    ("network = 1\n", "network must be true or false"),
    ('sandbox = "jail"\n', "sandbox must be one of read-only, workspace-write, off"),
    ('compaction = "fold"\n', "compaction must be one of summary, drop, off"),
    ('pass_env = "PATH"\n', "pass_env must be a list"),
    ("model = 5\n", "model must be a string"),
    ('tools = "shell"\n', "tools must be a list of tool names"),
    ('providers = "x"\n', r"providers must hold \[providers.NAME\] tables"),
    ('[providers.x]\nkind = "openai"\nbase_url = 8080\n', "providers.x.base_url must be a"),
])
def test_bad_config_is_a_clear_error(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(env_for(tmp_path, text))


def test_missing_explicit_file_and_model_syntax(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(env_for(tmp_path))
    config = load_config(env_for(tmp_path, ""))
    with pytest.raises(ConfigError, match="provider/name"):
        get_provider("gpt-4o", config, {})
    with pytest.raises(ConfigError, match="needs an API key"):
        get_provider("anthropic/claude", config, {})
    provider, _ = get_provider("openai/gpt-4o", config, {"OPENAI_API_KEY": "k"})
    assert provider.name == "openai"


@pytest.mark.parametrize(("text", "message"), [
    ("max_step = 5\n", "max_step: unknown setting; did you mean max_steps?"),
    ("sandbx = 'off'\n", "sandbx: unknown setting; did you mean sandbox?"),
    ("zzz = 1\n", "zzz: unknown setting; known: autonomous, background_after, budget_tokens"),
    ('[providers.x]\nkind = "openai"\nbase_ur = "http://h"\n',
     "providers.x.base_ur: unknown setting; did you mean base_url?"),
    ('[models."local/m"]\ntemprature = 0.1\n',
     "models.local/m.temprature: unknown setting; did you mean temperature?"),
    ("[mcp]\nserves = {}\n", "mcp.serves: unknown setting; did you mean servers?"),
    ('[mcp.servers.t]\ncomand = "x"\n',
     "mcp.servers.t.comand: unknown setting; did you mean command?"),
])
def test_a_typo_at_any_level_names_the_file_the_key_and_the_nearest(
        tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(env_for(tmp_path, text))
    said = str(caught.value)
    assert said.startswith(f"{tmp_path / 'config.toml'}: "), said
    assert message in said, said


def test_every_documented_setting_is_known(tmp_path: Path) -> None:
    """The config module's own example (its docstring) loads: no documented key is refused."""
    import fencecall.config as module

    example = (module.__doc__ or "").split("\n\n", 2)[2]
    config = load_config(env_for(tmp_path, example, DOCS_TOKEN="t"))
    assert config.max_steps == 30 and config.models["local/smollm2"].context_window == 2048


def test_resource_limits_come_from_the_resources_table(tmp_path: Path) -> None:
    from fencecall.assembly import Overrides, environment
    from fencecall.sandbox._resource_limits import ResourceLimits

    config = load_config(env_for(tmp_path, "[resources]\nprocesses = 64\nmemory = 0\n"))
    assert config.resources == ResourceLimits(processes=64, memory=0)
    assert load_config(env_for(tmp_path, "")).resources == ResourceLimits()
    settings = resolve_settings(config, Overrides(workspace=tmp_path / "ws"), env={})
    sandbox = environment(settings, config, {}).sandbox
    assert sandbox.limits.processes == 64 and sandbox.read_only().limits.processes == 64
    for text, said in (("[resources]\nprocess = 1\n", "did you mean processes"),
                       ("[resources]\nmemory = -1\n", "resources.memory must be"),
                       ("[resources]\noutput = 1.5\n", "resources.output must be"),
                       ("resources = 3\n", "resources must be a table")):
        with pytest.raises(ConfigError, match=said):
            load_config(env_for(tmp_path, text))
