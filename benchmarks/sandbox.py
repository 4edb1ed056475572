"""What the bubblewrap sandbox costs the shell and python tools.

Run: ``python -m benchmarks.sandbox``. Cases that are compared run in turn (one sample of each,
then the next round), after untimed warm-up rounds, so drift on a busy machine hits them
alike; the table gives the median and the fastest of the timed runs, nothing extrapolated.
"start" is a new session until its first result (``true``, or ``None`` for python), closing
untimed; "per call" is one more call in a started session; "read_only" is the one-shot
read-only sandbox the shell tool uses for commands it runs unasked. The "bwrap ... true" rows
are the floor: bwrap alone, with the flags the sandbox uses and with some taken away, to show
where a sandboxed start spends its time.
"""

from __future__ import annotations

import functools
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from fencecall.sandbox._bwrap import Sandbox, SandboxPolicy, sandbox_support
from fencecall.tools.runtime.python_session import PythonSession
from fencecall.tools.runtime.shell_session import ShellSession

Timed = Callable[[], float]
"""Runs once and returns the seconds of the part that counts."""

WARMUP = 3
STARTS = 20
CALLS = 300
ONE_SHOTS = 30


def _elapsed(fn: Callable[[], object]) -> Timed:
    def timed() -> float:
        started = time.perf_counter()
        fn()
        return time.perf_counter() - started

    return timed


def _rounds(cases: dict[str, Timed], runs: int) -> dict[str, list[float]]:
    """Milliseconds of ``runs`` timed runs per case, the cases taking turns."""
    for _ in range(WARMUP):
        for case in cases.values():
            case()
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(runs):
        for name, case in cases.items():
            samples[name].append(case() * 1000)
    return samples


def _start(make: Callable[[], ShellSession | PythonSession], probe: str) -> Timed:
    """Time from creating a session to the result of its first (trivial) command."""
    def timed() -> float:
        started = time.perf_counter()
        session = make()
        session.run(probe)
        elapsed = time.perf_counter() - started
        session.close()
        return elapsed

    return timed


def _bwrap_floor(sandbox: Sandbox) -> dict[str, Timed]:
    """bwrap running ``true``: as the sandbox calls it, and with parts left out."""
    full = sandbox.command(["true"])
    bwrap = full[0]

    def without(*flags: str) -> list[str]:
        """``full`` without ``flags`` and their values (a tmpfs's ``--size N`` before it)."""
        kept: list[str] = []
        skip = 0
        for arg in full:
            if skip:
                skip -= 1
            elif arg in flags:
                skip = {"--tmpfs": 1, "--proc": 1}.get(arg, 0)
                if arg == "--tmpfs" and kept[-2:-1] == ["--size"]:
                    del kept[-2:]
            else:
                kept.append(arg)
        return kept

    variants = {
        "bwrap true: the sandbox's flags": full,
        "bwrap true: network shared (no new net namespace)": [*full[:-2], "--share-net",
                                                             *full[-2:]],
        "bwrap true: no private /tmp and /run": without("--tmpfs"),
        "bwrap true: no --unshare-user/--disable-userns": without("--unshare-user",
                                                                  "--disable-userns"),
        "bwrap true: no new /proc": without("--proc"),
        "bwrap true: --ro-bind / / only": [bwrap, "--ro-bind", "/", "/", "true"],
    }
    return {name: _elapsed(functools.partial(subprocess.run, argv, check=True))
            for name, argv in variants.items()}


def _row(case: str, samples: list[float]) -> dict[str, object]:
    return {"case": case, "median_ms": statistics.median(samples), "min_ms": min(samples),
            "runs": len(samples)}


def measure() -> list[dict[str, object]]:
    """One row per case: median and min milliseconds, and how many timed runs."""
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder)
        sandboxes = {"off": Sandbox(SandboxPolicy.OFF)}
        if sandbox_support().available:
            sandboxes["sandboxed"] = Sandbox(SandboxPolicy.WORKSPACE_WRITE, (workspace,))
        shells = {label: ShellSession(workspace, sandbox=box) for label, box in sandboxes.items()}
        pythons = {label: PythonSession(workspace, sandbox=box)
                   for label, box in sandboxes.items()}
        groups: list[tuple[dict[str, Timed], int]] = [
            ({"floor: subprocess.run(['bash', '-c', 'true'])": _elapsed(
                functools.partial(subprocess.run, ["bash", "-c", "true"], check=True))},
             ONE_SHOTS),
            ({f"{kind} start: {label}": _start(functools.partial(session, workspace,
                                                                   sandbox=box), probe)
              for kind, session, probe in (("shell", ShellSession, "true"),
                                           ("python", PythonSession, "None"))
              for label, box in sandboxes.items()}, STARTS),
            ({f"shell per call true: {label}": _elapsed(functools.partial(shell.run, "true"))
              for label, shell in shells.items()}
             | {f"python per call 1+1: {label}": _elapsed(functools.partial(python.run, "1+1"))
                for label, python in pythons.items()}, CALLS),
        ]
        if "sandboxed" in sandboxes:
            groups.insert(1, (_bwrap_floor(sandboxes["sandboxed"]), ONE_SHOTS))
            groups.append(({"shell read_only one-shot true": _elapsed(functools.partial(
                shells["sandboxed"].run, "true", read_only=True))}, ONE_SHOTS))
        try:
            return [_row(name, samples) for group, runs in groups
                    for name, samples in _rounds(group, runs).items()]
        finally:
            for shell in shells.values():
                shell.close()
            for python in pythons.values():
                python.close()


def print_table(rows: list[dict[str, object]]) -> None:
    print(f"{'case':<56}{'median ms':>11}{'min ms':>9}{'runs':>6}")
    for row in rows:
        print(f"{row['case']!s:<56}{row['median_ms']:>11.2f}{row['min_ms']:>9.2f}"
              f"{row['runs']:>6}")


def main() -> None:
    support = sandbox_support()
    if not support.available:
        print(f"sandbox unavailable, measuring the unsandboxed cases only: {support.reason}")
    print_table(measure())


if __name__ == "__main__":
    main()
