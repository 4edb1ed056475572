"""``fencecall eval`` stopped mid-trial by Ctrl-C or SIGTERM (a real process, real podman):
no container left, whole lines only, the finished trials kept and skipped on the rerun."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from fencecall.environments import OWNER_LABEL, owner
from tests.cli.conftest import cli_env

from ..containers import base_image
from .test_eval import TEST_TXT, WAIT, fencecall_eval, lines, make_task

__all__ = ["base_image"]

NAPPING = """\
#!/bin/bash
touch started
(sleep "$NAP"; echo late > late.txt) &
sleep "$NAP"
echo 42 > answer.txt
"""


def owned_by(label: str) -> list[str]:
    done = subprocess.run(["podman", "ps", "--all", "--quiet", "--filter",
                           f"label={OWNER_LABEL}={label}"], capture_output=True, text=True,
                          check=True, timeout=60)
    return done.stdout.split()


def wait_for(check: Callable[[], bool], proc: subprocess.Popen[str], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not check():
        if proc.poll() is not None:
            raise AssertionError(f"fencecall eval ended before {what}: {proc.communicate()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} within {WAIT} s")
        time.sleep(0.2)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_mid_trial_removes_the_containers_and_keeps_whole_lines(
        base_image: str, tmp_path: Path, signum: signal.Signals) -> None:
    root = tmp_path / "set"
    toml = '[environment]\nallow_internet = false\nworkdir = "/work"\n'
    for name in ("quick-a", "quick-b"):
        make_task(root, name, toml, f"FROM {base_image}\n", TEST_TXT)
    make_task(root, "slow", toml + '[solution]\nenv = { NAP = "${EVAL_NAP}" }\n',
              f"FROM {base_image}\n", TEST_TXT)
    (root / "slow" / "solution" / "solve.sh").write_text(NAPPING)
    out = tmp_path / "out.jsonl"
    started = tmp_path / "out.jsonl.d" / "trials" / "slow" / "0" / "workspace" / "started"
    proc = subprocess.Popen(
        [sys.executable, "-m", "fencecall.cli.main", "eval", str(root), "--out", str(out),
         "--agent", "oracle", "-j", "3"], env=cli_env(tmp_path, "http://127.0.0.1:9",
                                                      EVAL_NAP="300"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: started.exists() and out.exists() and len(lines(out)) == 2, proc,
                 "two finished trials and the slow oracle under way")
        label = owner(proc.pid)
        assert len(owned_by(label)) == 1  # the slow trial's
        clock = time.monotonic()
        os.kill(proc.pid, signum)
        _, stderr = proc.communicate(timeout=WAIT)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signum, stderr
    assert time.monotonic() - clock < 60  # not the oracle's 300 s nap
    assert "run the same command again to resume" in stderr
    assert owned_by(label) == []
    assert out.read_text().endswith("\n")
    assert sorted(line["id"] for line in lines(out)) == ["quick-a#0", "quick-b#0"]

    again = fencecall_eval(tmp_path, str(root), "--out", str(out), "--agent", "oracle",
                           EVAL_NAP="0")
    assert again.returncode == 0, again.stderr
    assert "2 of 3 trials are in" in again.stderr
    results = {line["id"]: line for line in lines(out)}
    assert sorted(results) == ["quick-a#0", "quick-b#0", "slow#0"]
    assert results["slow#0"]["reward"] == 1.0
