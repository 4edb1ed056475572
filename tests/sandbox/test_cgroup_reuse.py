"""Control groups kept for the next start once their processes have ended, with real groups.

Making a group (a memory group most of all) costs the kernel far more than reading that one
is empty, and every shell and interpreter gets one: an ended one is handed out again, for
the same limits only, never while a process is in it, and never while it is still charged
with memory that the next process would lose from its limit.
"""

from __future__ import annotations

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
    """A pool of this test's own, whose groups count as joined at once; removed after."""
    monkeypatch.setattr(limits_module, "_made", {})
    monkeypatch.setattr(limits_module, "_idle", {})
    monkeypatch.setattr(limits_module, "_JOINED_WITHIN", 0.0)
    yield
    limits_module._tidy(everything=True)


def _group(limits: ResourceLimits = LIMITS) -> Cgroup:
    group = Cgroup.create(limits)
    if group is None:
        pytest.skip("fencecall cannot make control groups here")
    return group


def _run_in(group: Cgroup, argv: list[str]) -> None:
    done = subprocess.run(limited(argv, LIMITS, group), capture_output=True, timeout=30)
    assert done.returncode == 0, done.stderr


def test_an_ended_process_s_group_is_handed_out_again_for_the_same_limits() -> None:
    first = _group()
    _run_in(first, ["true"])
    other = _group(ResourceLimits(processes=64))
    assert other.folders != first.folders  # other limits: a group of their own
    again = _group()
    assert again is first and all(folder.is_dir() for folder in first.folders)
    _run_in(again, ["true"])  # and a process joins it as it joined a new one


def test_a_group_with_a_process_in_it_is_not_handed_out() -> None:
    first = _group()
    sleeper = subprocess.Popen(limited(["sleep", "30"], LIMITS, first))
    try:
        for procs in first.procs:  # the launcher has joined it once the pid is listed
            for _ in range(500):
                if procs.read_text().strip():
                    break
                time.sleep(0.01)
        second = _group()
        assert second.folders != first.folders
    finally:
        sleeper.kill()
        sleeper.wait()
    assert _group() in (first, second)  # both ended: either may be handed out


def test_a_group_still_charged_with_memory_is_removed_not_kept(tmp_path: Path) -> None:
    shm = Path("/dev/shm")
    if not shm.is_dir() or "memory" not in limits_module._controllers():
        pytest.skip("no memory control group or no /dev/shm here")
    first = _group()
    left = shm / f"fencecall-test-{tmp_path.name}"
    try:
        # a file in a tmpfs stays charged to the group of the process that wrote it
        _run_in(first, ["sh", "-c", f"head -c {80 * MiB} /dev/zero > {left}"])
        second = _group()
        assert second is not first
        assert not any(folder.exists() for folder in first.folders)
    finally:
        left.unlink(missing_ok=True)
