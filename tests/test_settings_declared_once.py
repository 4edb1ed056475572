"""Each setting is declared once: its key, default and check in one Config field (or one
constant of :mod:`fencecall.defaults` where other layers need it too), one name in the file,
the flags, batch tasks and the Python API, and an old name that still loads."""

from __future__ import annotations

import argparse
import inspect
import tomllib
from dataclasses import MISSING, fields
from pathlib import Path
from typing import Any

import pytest

import fencecall.config as config_module
from fencecall import defaults
from fencecall.agent import AgentSettings
from fencecall.assembly import Overrides, RunSettings, resolve_settings
from fencecall.assembly._run_settings import PLAIN
from fencecall.batch import BatchOptions
from fencecall.batch._tasks import Task, TaskError, parse_tasks
from fencecall.cli._arguments import build_parser
from fencecall.cli.options import overrides_of
from fencecall.config import (
    LIMIT_KEYS,
    READERS,
    RENAMED,
    TOP_LEVEL,
    Config,
    ConfigError,
    load_config,
)
from fencecall.execution import Session
from fencecall.sandbox import ResourceLimits
from fencecall.tools.runtime.job_manager import JobManager

NOT_IN_FILE = {"home", "path"}
"""Config fields the file never sets (the environment gives them)."""
UNDER_OTHER_KEYS = {"mcp_servers": {"mcp"}, "limits": set(LIMIT_KEYS)}
WITHOUT_A_FLAG = {"feedback_limit", "result_share", "max_jobs", "pass_env", "secrets",
                  "telemetry", "telemetry_content", "tool_packages"}
"""Single-valued keys no command-line flag sets (the file, or agent_from_config)."""


RUN_ONLY = {"pass_env", "secrets", "telemetry", "telemetry_content", "tool_packages"}
"""Single-valued keys that are the configuration's alone: no source of a run's settings
says them."""


def command(name: str) -> argparse.ArgumentParser:
    """The parser of one command of the command line."""
    [commands] = [action for action in build_parser()._actions
                  if isinstance(action, argparse._SubParsersAction)]
    found: argparse.ArgumentParser = commands.choices[name]
    return found


def defaults_of(cls: type) -> dict[str, Any]:
    return {item.name: item.default for item in fields(cls) if item.default is not MISSING}


def load(tmp_path: Path, text: str) -> Config:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return load_config({"FENCECALL_CONFIG": str(path), "FENCECALL_HOME": str(tmp_path / "h")})


def test_the_known_keys_are_the_config_fields() -> None:
    expected: set[str] = set()
    for item in fields(Config):
        if item.name not in NOT_IN_FILE:
            expected |= UNDER_OTHER_KEYS.get(item.name, {item.name})
    assert expected == TOP_LEVEL
    assert set(READERS) <= {item.name for item in fields(Config)}
    assert set(RENAMED.values()) <= set(READERS) and not set(RENAMED) & TOP_LEVEL
    single_valued = {item.name for item in fields(Config) if item.default is not MISSING}
    assert single_valued - NOT_IN_FILE - set(UNDER_OTHER_KEYS) == set(READERS)


def test_every_layer_has_the_configurations_defaults() -> None:
    file = defaults_of(Config)
    for cls in (AgentSettings, RunSettings):
        shared = defaults_of(cls).keys() & file.keys()
        assert shared, cls
        assert {name: defaults_of(cls)[name] for name in shared} == {
            name: file[name] for name in shared}, cls
    assert file["max_jobs"] == defaults.MAX_JOBS
    for callable_ in (Session.__init__, JobManager.__init__):  # their owners' keywords
        keywords = inspect.signature(callable_).parameters
        assert keywords["max_jobs"].default == file["max_jobs"], callable_
        assert keywords["background_after"].default == file["background_after"], callable_
    assert defaults_of(BatchOptions)["concurrency"] == defaults.CONCURRENCY
    assert build_parser().parse_args(["batch", "t", "-o", "r"]).concurrency == \
        defaults.CONCURRENCY


def test_a_run_with_no_file_gets_the_declared_defaults(tmp_path: Path) -> None:
    config = load(tmp_path, "")
    settings = resolve_settings(config, Overrides(workspace=tmp_path), env={})
    for name in PLAIN:
        assert getattr(settings, name) == getattr(Config(), name), name
    assert settings.max_tokens == Config().max_tokens  # no model: no window to share
    agent = AgentSettings()
    assert (settings.max_steps, settings.retries, settings.feedback_limit,
            settings.result_share) == (agent.max_steps, agent.retries, agent.feedback_limit,
                                       agent.result_share)


def test_the_documented_example_names_every_key_with_its_default() -> None:
    example = tomllib.loads((config_module.__doc__ or "").split("\n\n", 2)[2])
    assert set(READERS) <= example.keys()
    numbers = {key: value for key, value in defaults_of(Config).items()
               if key in READERS and isinstance(value, int | float)
               and not isinstance(value, bool)}
    assert numbers and {key: example[key] for key in numbers} == numbers
    assert example["resources"] == defaults_of(ResourceLimits)


def test_a_setting_has_one_name_in_the_file_the_sources_and_the_flags() -> None:
    said = {item.name for item in fields(Overrides)}
    assert set(PLAIN) <= said & set(READERS) & {item.name for item in fields(RunSettings)}
    assert set(READERS) - RUN_ONLY <= said  # a source says each run setting by its key
    flags = {option for action in command("chat")._actions for option in action.option_strings}
    for key in set(READERS) - WITHOUT_A_FLAG:
        assert "--" + key.replace("_", "-") in flags, key


@pytest.mark.parametrize(("old", "new", "value", "read"), [
    ("timeout", "request_timeout", "5", 5.0),
    ("near_misses", "feedback_limit", "1", 1),
])
def test_an_old_key_still_loads_and_both_names_are_an_error(
        tmp_path: Path, old: str, new: str, value: str, read: float) -> None:
    assert getattr(load(tmp_path, f"{old} = {value}\n"), new) == read
    assert getattr(load(tmp_path, f"{new} = {value}\n"), new) == read
    with pytest.raises(ConfigError, match=f"{old} and {new}: {old} is the old name of {new}"):
        load(tmp_path, f"{old} = {value}\n{new} = {value}\n")
    with pytest.raises(ConfigError, match=f"config.toml: {old} must be"):
        load(tmp_path, f'{old} = "x"\n')  # the message names the key as written


def test_the_old_key_reaches_the_run(tmp_path: Path) -> None:
    config = load(tmp_path, "timeout = 7\nnear_misses = 0\n")
    settings = resolve_settings(config, Overrides(workspace=tmp_path), env={})
    assert (settings.request_timeout, settings.feedback_limit) == (7.0, 0)


def test_an_old_task_key_still_loads_and_both_names_are_an_error() -> None:
    [old] = parse_tasks(['{"id": "a", "prompt": "p", "timeout": 9}'])
    [new] = parse_tasks(['{"id": "a", "prompt": "p", "task_timeout": 9}'])
    assert old == new == Task("a", "p", task_timeout=9)
    with pytest.raises(TaskError, match="line 1: timeout and task_timeout: timeout is the "
                                        "old name of task_timeout"):
        parse_tasks(['{"id": "a", "prompt": "p", "timeout": 9, "task_timeout": 9}'])


def test_old_flags_are_hidden_aliases_of_the_new_ones() -> None:
    parser = build_parser()
    for argv in (["chat", "--timeout", "5"], ["chat", "--request-timeout", "5"],
                 ["acp", "--timeout", "5"]):
        assert overrides_of(parser.parse_args(argv)).request_timeout == 5.0, argv
    for argv in (["batch", "t", "-o", "r", "--timeout", "5"],
                 ["batch", "t", "-o", "r", "--task-timeout", "5"]):
        args = parser.parse_args(argv)
        assert (args.task_timeout, overrides_of(args).request_timeout) == (5.0, None), argv
    batch = parser.parse_args(["batch", "t", "-o", "r", "--request-timeout", "3"])
    assert overrides_of(batch).request_timeout == 3.0
    chat, batch_help = command("chat").format_help(), command("batch").format_help()
    assert "--request-timeout" in chat and "--timeout" not in chat
    assert "--task-timeout" in batch_help and "--timeout" not in batch_help
