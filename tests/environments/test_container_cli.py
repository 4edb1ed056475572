"""Choosing the container CLI that answers, and reading what it lists, without containers
(the real podman runs in test_containers.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from fencecall.environments import (
    ContainerCli,
    ContainerUnavailable,
    choose_container_cli,
    owner,
)
from fencecall.environments._container_cli import ULIMITS, _label, _owner_gone


def fake_cli(folder: Path, name: str, *, answers: bool) -> None:
    script = folder / name
    script.write_text("#!/bin/sh\n" + ("exit 0\n" if answers else
                      "echo 'Cannot connect to the Docker daemon at unix:///var/run/docker.sock."
                      " Is the docker daemon running?' >&2\nexit 1\n"))
    script.chmod(0o755)


def test_a_docker_without_its_daemon_is_not_chosen_and_the_error_says_why(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_cli(tmp_path, "docker", answers=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ContainerUnavailable) as caught:
        choose_container_cli()
    said = str(caught.value)
    assert "podman is not installed" in said
    assert "docker is installed but does not answer" in said and "daemon running" in said
    fake_cli(tmp_path, "podman", answers=True)
    assert choose_container_cli().program == "podman"
    with pytest.raises(ContainerUnavailable, match="docker is installed but does not answer"):
        choose_container_cli("docker")  # the configuration's choice, and only it


def test_labels_are_read_as_podman_and_docker_list_them() -> None:
    me = owner()
    assert _label(f"map[dev.fencecall:1 dev.fencecall.owner:{me}]", "dev.fencecall.owner") == me
    assert _label(f"dev.fencecall=1,dev.fencecall.owner={me}", "dev.fencecall.owner") == me
    assert _label("map[other:x]", "dev.fencecall.owner") is None


def test_a_container_is_stale_only_when_its_owner_of_this_host_is_gone() -> None:
    assert not _owner_gone(f"abc map[dev.fencecall.owner:{owner()}]")  # this process
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    pid = int(dead.stdout)
    host = owner().split(":")[0]
    assert _owner_gone(f"abc map[dev.fencecall.owner:{host}:{pid}:12345]")
    # the same pid started again is another process: its start time differs
    assert _owner_gone(f"abc map[dev.fencecall.owner:{host}:{os.getpid()}:1]")
    assert not _owner_gone(f"abc map[dev.fencecall.owner:elsewhere:{pid}:12345]")
    assert not _owner_gone("abc map[dev.fencecall:1]")


def test_starts_at_once_that_fail_on_rlimits_all_start_with_the_fix(tmp_path: Path) -> None:
    """runc says 'error setting rlimit type 7' where the default limits cannot be set; two
    starts fail so at once, one adopts the --ulimit fix, and the other tries again with it
    instead of failing; each prunes only what its own start left."""
    script = tmp_path / "podman"
    script.write_text("#!/bin/sh\n"
                      f'echo "$*" >> {tmp_path}/calls\n'
                      'case "$*" in *--ulimit*) echo started; exit 0;; esac\n'
                      'case "$1" in run) sleep 0.5; echo "Error: runc create failed: error '
                      'setting rlimits for ready process: error setting rlimit type 7: '
                      'operation not permitted" >&2; exit 126;; esac\n'
                      "exit 0\n")
    script.chmod(0o755)
    cli = ContainerCli("podman", str(script))
    with ThreadPoolExecutor(2) as pool:
        started = list(pool.map(lambda _: cli.start("img"), range(2)))
    assert started == ["started", "started"]
    assert cli.run_flags == ULIMITS
    # what a failed start may have left is pruned by its own label: not the container
    # another thread created and has yet to start (copying an image's folder out, say)
    prunes = [line for line in (tmp_path / "calls").read_text().splitlines()
              if line.startswith("container prune")]
    assert prunes and all(" --filter label=dev.fencecall.start=" in line for line in prunes)
