"""Control groups kept for the next start once their processes have ended, with real groups.

Making a group (a memory group most of all) costs the kernel far more than reading that one
is empty, and every shell and interpreter gets one: one whose process was reaped is handed
out again, for the same limits only, never while a process is in it or before its process
ended, and never while it is still charged with memory that the next process would lose
from its limit.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fencecall.sandbox import _resource_limits as limits_module
from fencecall.sandbox._resource_limits import Cgroup, MiB, ResourceLimits, limited

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="control groups are Linux's")

LIMITS = ResourceLimits()


@pytest.fixture(autouse=True)
def own_pool(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A pool of this test's own, whose groups are looked at on every start; removed
    after."""
    monkeypatch.setattr(limits_module, "_made", {})
    monkeypatch.setattr(limits_module, "_idle", {})
    monkeypatch.setattr(limits_module, "_FIRST_LOOK", 0.0)
    yield
    limits_module._remove_all()


def _group(limits: ResourceLimits = LIMITS) -> Cgroup:
    group = Cgroup.create(limits)
    if group is None:
        pytest.skip("fencecall cannot make control groups here")
    return group


@contextlib.contextmanager
def _running_in(group: Cgroup, command: str) -> Iterator[None]:
    """``command`` (which ends in an ``exec``) in ``group``, joined once this yields, and
    killed after."""
    process = subprocess.Popen(limited(["sh", "-c", command], LIMITS, group))
    group.started(process)
    try:
        for procs in group.procs:
            deadline = time.monotonic() + 10
            while not procs.read_text().strip():
                assert time.monotonic() < deadline, "the process did not join its group"
                time.sleep(0.01)
        yield
    finally:
        process.kill()
        process.wait()


def test_a_group_is_handed_out_again_once_its_processes_have_ended() -> None:
    first = _group()
    with _running_in(first, "exec sleep 30"):
        busy = _group()
        assert busy.folders != first.folders  # a process is in it
    again = _group()
    assert again is first and all(folder.is_dir() for folder in first.folders)
    other = _group(ResourceLimits(processes=64))
    assert other not in (first, busy)  # other limits: a group of their own
    done = subprocess.run(limited(["true"], LIMITS, again), capture_output=True, timeout=30)
    assert done.returncode == 0, done.stderr  # a process joins it as it joined a new one


def test_a_group_whose_process_has_not_ended_is_not_handed_out() -> None:
    """Its process may still be on its way in."""
    first = _group()
    process = subprocess.Popen(["sleep", "30"])  # not in it yet
    first.started(process)
    try:
        assert _group() is not first
    finally:
        process.kill()
        process.wait()
    assert _group() is first


def test_a_group_still_charged_with_memory_is_removed_not_kept(tmp_path: Path) -> None:
    shm = Path("/dev/shm")
    if not shm.is_dir() or "memory" not in limits_module._controllers():
        pytest.skip("no memory control group or no /dev/shm here")
    first = _group()
    left = shm / f"fencecall-test-{tmp_path.name}"
    try:
        # a file in a tmpfs stays charged to the group of the process that wrote it
        wrote = subprocess.run(limited(["sh", "-c", f"head -c {80 * MiB} /dev/zero > {left}"],
                                       LIMITS, first), capture_output=True, timeout=30)
        assert wrote.returncode == 0 and left.stat().st_size == 80 * MiB, wrote.stderr
        with _running_in(first, "exec sleep 30"):
            _group()
        assert _group() is not first
        assert not any(folder.exists() for folder in first.folders)
    finally:
        left.unlink(missing_ok=True)
