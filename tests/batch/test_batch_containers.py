"""Batch tasks with an ``image``: each runs its tools in a container of its own, whose working
folder is the task's workspace, removed when the task ends, at its timeout too (real podman,
the base image of tests/containers.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from fencecall.batch import BatchOptions, run_batch
from fencecall.environments import OWNER_LABEL, owner

from ..containers import base_image
from .conftest import Script, task

__all__ = ["base_image"]


def mine() -> list[str]:
    """The containers this process owns."""
    done = subprocess.run(["podman", "ps", "--all", "--quiet", "--filter",
                           f"label={OWNER_LABEL}={owner()}"], capture_output=True, text=True,
                          check=True, timeout=60)
    return done.stdout.split()


def test_a_task_with_an_image_works_in_a_container_removed_at_its_end_or_timeout(
        base_image: str, script: Script, options: BatchOptions) -> None:
    script.shell_then_answer("in", "pwd; echo made > made.txt; ls /sys/class/net")
    script.shell_then_answer("late", "sleep 60; touch late.txt")
    results = {r.id: r for r in run_batch(
        [task("in", image=base_image), task("late", image=base_image, task_timeout=4)],
        options)}
    done, late = results["in"], results["late"]
    assert (done.status, done.error) == ("done", None)
    log = Path(str(done.log)).read_text()
    assert "/work" in log  # the image's working folder
    assert Path(str(done.workspace), "made.txt").read_text() == "made\n"  # the host copy
    assert late.status == "timeout"
    assert not Path(str(late.workspace), "late.txt").exists()
    assert mine() == []
