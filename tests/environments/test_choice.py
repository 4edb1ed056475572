"""Choosing where the tools run (``--env``, ``environment =``, a task's ``image``), and
paths as a container's processes see them, without containers."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from fencecall.assembly import Overrides, resolve_settings
from fencecall.batch._tasks import TaskError, parse_tasks
from fencecall.cli._arguments import build_parser
from fencecall.cli.options import overrides_of
from fencecall.config import Config, ConfigError, load_config
from fencecall.environments import (
    EnvironmentChoice,
    parse_environment,
)
from fencecall.errors import ToolError
from fencecall.sandbox import SandboxPolicy
from fencecall.tools.builtin._environment_paths import in_workspace
from fencecall.tools.runtime._in_environment import spawn_python


def test_the_choices_are_read_and_anything_else_names_them() -> None:
    assert parse_environment("host") == EnvironmentChoice("host")
    assert parse_environment("container:debian:12") == EnvironmentChoice("container",
                                                                          "debian:12")
    assert str(parse_environment("container:img")) == "container:img"
    for bad in ("container:", "docker:img", "vm"):
        with pytest.raises(ValueError, match="choose host, sandbox or container:IMAGE"):
            parse_environment(bad)


def test_the_flag_the_file_and_a_task_say_it_and_only_the_sandbox_keeps_bwrap(
        tmp_path: Path) -> None:
    args = build_parser().parse_args(["chat", "--env", "container:img", "--container-cli",
                                      "podman"])
    said = overrides_of(args)
    settings = resolve_settings(Config(), said, Overrides(workspace=tmp_path), env={})
    assert (settings.environment, settings.container_cli) == ("container:img", "podman")
    assert settings.sandbox is SandboxPolicy.OFF  # the container is the boundary
    host = resolve_settings(Config(), Overrides(environment="host", workspace=tmp_path),
                            env={})
    assert host.sandbox is SandboxPolicy.OFF
    default = resolve_settings(Config(), Overrides(workspace=tmp_path), env={})
    assert (default.environment, default.sandbox) == ("sandbox", SandboxPolicy.WORKSPACE_WRITE)
    with pytest.raises(ConfigError, match="choose host, sandbox or container:IMAGE"):
        resolve_settings(Config(), Overrides(environment="vm", workspace=tmp_path), env={})
    path = tmp_path / "config.toml"
    path.write_text('environment = "container:img"\n')
    config = load_config({"FENCECALL_CONFIG": str(path), "FENCECALL_HOME": str(tmp_path)})
    assert config.environment == "container:img"
    path.write_text('environment = "vm"\n')
    with pytest.raises(ConfigError, match="environment must be one of host, sandbox"):
        load_config({"FENCECALL_CONFIG": str(path), "FENCECALL_HOME": str(tmp_path)})


def test_a_task_with_an_image_runs_in_a_container_of_it() -> None:
    [task] = parse_tasks(['{"id": "a", "prompt": "p", "image": "img", "workdir": "/app"}'])
    assert (task.overrides.environment, task.workdir) == ("container:img", "/app")
    [plain] = parse_tasks(['{"id": "a", "prompt": "p"}'])
    assert plain.overrides.environment is None
    with pytest.raises(TaskError, match="workdir must be an absolute path"):
        parse_tasks(['{"id": "a", "prompt": "p", "image": "img", "workdir": "app"}'])


def test_a_path_under_the_containers_working_folder_is_the_workspaces() -> None:
    inside = SimpleNamespace(environment=SimpleNamespace(workdir="/app"))
    assert in_workspace("/app/src/x.py", inside) == "src/x.py"
    assert in_workspace("/app", inside) == "."
    assert in_workspace("/etc/passwd", inside) == "/etc/passwd"
    assert in_workspace("src/x.py", inside) == "src/x.py"
    here = SimpleNamespace(environment=None)
    assert in_workspace("/app/x", here) == "/app/x"


def test_an_image_without_python3_is_named_as_the_reason() -> None:
    without = SimpleNamespace(has_program=lambda name: False)
    with pytest.raises(ToolError, match="the environment has no python3"):
        spawn_python(without, ["python3"], ())
