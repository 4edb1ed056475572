"""One resolver owns every run setting's precedence and every derived rule."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from fencecall.assembly import NoModel, Overrides, provider, resolve_settings, toolchain
from fencecall.assembly._run_settings import DEFAULT_WINDOW
from fencecall.config import Config, ConfigError, load_config
from fencecall.sandbox._bwrap import SandboxPolicy
from fencecall.tools.mcp import McpServerConfig

CONFIG = """
max_steps = 12
max_tokens = 2000
retries = 4
format = "xml"
sandbox = "read-only"
[models."local/small"]
temperature = 0.2
stop = ["<|end|>"]
context_window = 4096
[models."local/big"]
max_tokens = 900
context_window = 100000
[mcp.servers.files]
command = "files-server"
"""

NO_ENV: dict[str, str] = {}


def config_in(tmp_path: Path) -> Config:
    path = tmp_path / "config.toml"
    path.write_text(CONFIG)
    return load_config({"FENCECALL_CONFIG": str(path), "FENCECALL_HOME": str(tmp_path)})


def small(**said: object) -> Overrides:
    return Overrides(model="local/small", **said)  # type: ignore[arg-type]


def test_the_first_source_that_says_wins_then_the_model_then_the_file(tmp_path: Path) -> None:
    config = config_in(tmp_path)
    plain = resolve_settings(config, small(), env=NO_ENV)
    assert (plain.max_steps, plain.retries, plain.sampling.temperature, plain.sampling.stop) == (
        12, 4, 0.2, ("<|end|>",))
    task, options = Overrides(max_steps=3), Overrides(max_steps=7, retries=0, temperature=0.9)
    chosen = resolve_settings(config, task, options, small(), env=NO_ENV)
    assert (chosen.max_steps, chosen.retries, chosen.sampling.temperature) == (3, 0, 0.9)
    assert resolve_settings(config, Overrides(), options, small(), env=NO_ENV).max_steps == 7
    assert resolve_settings(config, small(stop=("STOP",)), env=NO_ENV).sampling.stop == ("STOP",)


def test_flags_beat_the_environment_which_beats_the_file(tmp_path: Path) -> None:
    config = config_in(tmp_path)
    env = {"FENCECALL_MODEL": "local/big", "FENCECALL_FORMAT": "tool",
           "FENCECALL_TOOLS": "shell, read", "FENCECALL_SANDBOX": "off"}
    from_env = resolve_settings(config, env=env)
    assert (from_env.model, from_env.format.name, from_env.tools, from_env.sandbox) == (
        "local/big", "tool", ("shell", "read"), SandboxPolicy.OFF)
    assert from_env.max_tokens == 900  # the environment's model brings its own table
    flagged = resolve_settings(config, Overrides(model="local/small", format="markdown",
                                                 tools=("save",), sandbox="workspace-write"),
                               env=env)
    assert (flagged.model, flagged.format.name, flagged.tools, flagged.sandbox) == (
        "local/small", "markdown", ("save",), SandboxPolicy.WORKSPACE_WRITE)
    from_file = resolve_settings(config, env=NO_ENV)
    assert (from_file.model, from_file.format.name, from_file.sandbox) == (
        None, "xml", SandboxPolicy.READ_ONLY)


def test_batch_precedence_is_task_then_options_then_config(tmp_path: Path) -> None:
    config = config_in(tmp_path)
    task = Overrides(model="local/big", workspace=tmp_path / "task")
    options = Overrides(model="local/small", max_steps=5, request_timeout=9.0, network=True)
    settings = resolve_settings(config, task, options, env=NO_ENV)
    assert (settings.model, settings.max_steps, settings.request_timeout, settings.network) == (
        "local/big", 5, 9.0, True)
    assert settings.workspace == (tmp_path / "task").resolve()
    assert resolve_settings(config, Overrides(), options, env=NO_ENV).model == "local/small"


def test_roots_and_mcp_servers_add_up_and_the_nearer_server_wins_its_name(
        tmp_path: Path) -> None:
    config = config_in(tmp_path)
    (tmp_path / "w").mkdir()
    near = McpServerConfig("files", "near-server")
    extra = McpServerConfig("web", "web-server")
    settings = resolve_settings(
        config, Overrides(workspace=tmp_path / "w", roots=(tmp_path / "a",), mcp=(near,)),
        Overrides(roots=(tmp_path / "b", tmp_path / "a"), mcp=(extra,)), env=NO_ENV)
    assert settings.roots == tuple(p.resolve() for p in (tmp_path / "w", tmp_path / "a",
                                                         tmp_path / "b"))
    assert {s.name: s.command for s in settings.mcp_servers} == {
        "files": "near-server", "web": "web-server"}


def test_derived_rules_reply_share_compact_prompt_and_the_servers_window(
        tmp_path: Path) -> None:
    config = config_in(tmp_path)
    little = resolve_settings(config, small(), env=NO_ENV)
    assert (little.context_window, little.max_tokens, little.compact) == (4096, 1024, True)
    assert not resolve_settings(config, small(prompt="full"), env=NO_ENV).compact
    big = resolve_settings(config, Overrides(model="local/big"), env=NO_ENV)
    assert (big.max_tokens, big.compact) == (900, False)  # its own limit, a large window
    asked: list[tuple[str, str]] = []

    def served(base_url: str, model: str) -> int | None:
        asked.append((base_url, model))
        return 2048

    other = Overrides(model="local/other")
    settings = resolve_settings(config, other, env=NO_ENV, ask_server=True, served=served)
    assert asked == [(config.providers["local"].base_url, "other")]
    assert (settings.context_window, settings.max_tokens, settings.compact) == (2048, 512, True)
    unasked = resolve_settings(config, other, env=NO_ENV, served=served)
    assert unasked.context_window == DEFAULT_WINDOW  # not asked: the default, stated
    off = resolve_settings(config, Overrides(model="local/other", compaction="off"), env=NO_ENV)
    assert off.context_window is None  # nothing to keep inside a window
    hosted = resolve_settings(config, Overrides(model="openai/gpt-4o"), env=NO_ENV)
    assert hosted.context_window == 128_000  # genai-prices' model table
    resolve_settings(config, small(), env=NO_ENV, ask_server=True, served=served)  # configured
    assert len(asked) == 1
    flagged = resolve_settings(config, Overrides(model="local/other", context_window=32000,
                                                 max_tokens=100),
                               env=NO_ENV, ask_server=True, served=served)
    assert (flagged.context_window, flagged.max_tokens, len(asked)) == (32000, 100, 1)


@pytest.mark.parametrize(("said", "message"), [
    (Overrides(format="yaml"), "format"),
    (Overrides(sandbox="jail"), "sandbox 'jail': choose one of read-only"),
])
def test_a_value_no_source_could_mean_is_a_clear_error(
        tmp_path: Path, said: Overrides, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        resolve_settings(config_in(tmp_path), said, env=NO_ENV)


def test_a_run_without_a_model_says_how_to_name_one(tmp_path: Path) -> None:
    config = config_in(tmp_path)
    with pytest.raises(NoModel, match="pass --model provider/name or set FENCECALL_MODEL"):
        provider(resolve_settings(config, env=NO_ENV), config, {})


def test_autonomous_comes_from_the_first_source_then_the_file(tmp_path: Path) -> None:
    config = config_in(tmp_path)
    assert resolve_settings(config, small(), env=NO_ENV).autonomous is False
    assert resolve_settings(config, small(autonomous=True), env=NO_ENV).autonomous is True
    on = replace(config, autonomous=True)
    assert resolve_settings(on, small(), env=NO_ENV).autonomous is True
    assert resolve_settings(on, Overrides(autonomous=False), small(autonomous=True),
                            env=NO_ENV).autonomous is False


def test_the_config_key_is_read_and_checked(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    env = {"FENCECALL_CONFIG": str(path), "FENCECALL_HOME": str(tmp_path)}
    path.write_text("autonomous = true\n")
    assert load_config(env).autonomous is True
    path.write_text('autonomous = "yes"\n')
    with pytest.raises(ConfigError, match="autonomous must be true or false"):
        load_config(env)


def test_an_autonomous_run_gets_complete_besides_its_allowlist(tmp_path: Path) -> None:
    config = config_in(tmp_path)
    for tools in (("shell",), None):
        plain = resolve_settings(config, small(tools=tools, workspace=tmp_path), env=NO_ENV)
        autonomous = replace(plain, autonomous=True)
        assert "complete" not in toolchain(plain, config).names()
        names = toolchain(autonomous, config).names()
        assert names[-1] == "complete" and names[:-1] == toolchain(plain, config).names()
    named = resolve_settings(config, small(tools=("complete",), workspace=tmp_path), env=NO_ENV)
    assert toolchain(replace(named, autonomous=True), config).names() == ["complete"]


def test_commands_without_the_flag_are_never_autonomous(tmp_path: Path) -> None:
    """``fencecall run``, ``tools`` and ``mcp serve`` run no model: the configuration's
    ``autonomous`` gives them no complete tool."""
    from fencecall.cli._arguments import build_parser
    from fencecall.cli.options import overrides_of

    on = replace(config_in(tmp_path), autonomous=True)
    parser = build_parser()
    for argv in (["tools"], ["run", "reply.md"], ["mcp", "serve"]):
        assert resolve_settings(on, overrides_of(parser.parse_args(argv)), small(),
                                env=NO_ENV).autonomous is False
    for argv, expected in ((["chat", "hi"], True), (["chat", "--no-autonomous", "hi"], False),
                           (["batch", "t.jsonl", "-o", "r.jsonl"], True)):
        assert resolve_settings(on, overrides_of(parser.parse_args(argv)), small(),
                                env=NO_ENV).autonomous is expected
