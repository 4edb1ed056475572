"""Batch tasks with an ``image``: each runs its tools in a container of its own, whose working
folder is the task's workspace, removed when the task ends, at its timeout too (real podman,
the base image of tests/containers.py)."""

from __future__ import annotations

import subprocess
from dataclasses import replace
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
        base_image: str, script: Script, options: BatchOptions, tmp_path: Path) -> None:
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
    inside = replace(options, environment=f"container:{base_image}", folder=tmp_path / "b2")
    script.shell_then_answer("all", "grep -c bookworm /etc/os-release; pwd")
    [every] = run_batch([task("all")], inside)  # the batch's --env, for tasks without image
    assert every.status == "done" and "/work" in Path(str(every.log)).read_text()
    assert mine() == []


LIMITS = ("cat /sys/fs/cgroup/memory.max /sys/fs/cgroup/memory/memory.limit_in_bytes "
          "/sys/fs/cgroup/cpu.max /sys/fs/cgroup/cpu/cpu.cfs_quota_us 2>/dev/null; true")


def test_a_task_s_cpus_and_memory_mb_limit_its_container(
        base_image: str, script: Script, options: BatchOptions) -> None:
    """Seen from inside, in cgroup v1's files or v2's: 256 MB, half a CPU (50 ms in 100)."""
    script.shell_then_answer("small", LIMITS)
    script.shell_then_answer("free", LIMITS)
    script.shell_then_answer("bare", "echo never runs")
    results = {r.id: r for r in run_batch(
        [task("small", image=base_image, cpus=0.5, memory_mb=256),
         task("free", image=base_image), task("bare", cpus=1)], options)}
    small = Path(str(results["small"].log)).read_text()
    assert str(256 * 1024 * 1024) in small and "50000" in small
    free = Path(str(results["free"].log)).read_text()
    assert str(256 * 1024 * 1024) not in free and "50000" not in free
    bare = results["bare"]
    assert bare.status == "error" and "give the task an image" in str(bare.error)
    assert mine() == []
