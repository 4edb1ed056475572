"""How long the command line takes to start, against the interpreter's own start.

Run: ``python -m benchmarks.startup``. Three commands, each a new process: ``python -c pass``
(the floor), ``fencecall --help``, and one ``fencecall run -y --workspace TMP
examples/reply.md`` (three tool calls, no model: the README's first command). Every command
runs once untimed (the warm-up), then the commands take turns, one run of each per round, so
that drift on a busy machine hits them alike; the table gives the median and the fastest of
the same number of timed runs, and each median's ratio to the floor's, measured in the same
run. The ``run`` gets a fresh workspace each time (made untimed) and an empty configuration
and fencecall home of its own, so no file of the machine's changes what it does. Bytecode is
cached in a folder of the benchmark's own (``PYTHONPYCACHEPREFIX``), written by the warm-up:
every timed run starts as an installed fencecall does, from compiled bytecode, whether or
not the environment sets ``PYTHONDONTWRITEBYTECODE`` or the tree holds stale caches. The
running interpreter's folder comes first on ``PATH``, so the reply's ``python3 hello.py``
runs that interpreter at once: a version manager's shim (pyenv's runs a dozen bash scripts,
about 100 ms on the machine of :data:`RUN_BASELINE_MS`) is no part of fencecall's start.

Targets: ``--help`` at most :data:`HELP_TARGET` times ``python -c pass``, and the ``run`` at
most half of :data:`RUN_BASELINE_MS`, its median measured before the imports were made lazy.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
REPLY = REPO / "examples" / "reply.md"

HELP_TARGET = 4.0
"""``fencecall --help`` may take at most this many times ``python -c pass``."""
RUN_BASELINE_MS = 378.3
"""Median ms of the ``run`` before the imports were made lazy: 2026-12-04, 2 cores x86_64
(Xeon @ 2.80GHz), Python 3.11.7, parsing compiled with mypyc, bubblewrap installed (the shell
calls ran sandboxed). Measured by this module (15 timed runs, load average 0.0 at the start)
with ``--before`` pointing at a copy of ``src`` taken before the change; in that same run
``python -c pass`` took :data:`RUN_BASELINE_FLOOR_MS` and ``--help`` 132.9 ms (7.5x). The
target is half of it."""
RUN_BASELINE_FLOOR_MS = 17.6
"""``python -c pass`` in that same run, for scale."""

WARMUP = 1
RUNS = 15

Timed = Callable[[], float]
"""Runs once and returns the seconds of the part that counts."""


def _executable(name: str) -> str:
    """``name`` from the running interpreter's environment (which need not be on PATH)."""
    return str(Path(sys.executable).parent / name)


def _process(argv: list[str] | Callable[[], list[str]], env: Mapping[str, str]) -> Timed:
    """A new process running ``argv`` (or the command ``argv()`` makes, untimed), which must
    exit 0; its output is captured and dropped."""
    def timed() -> float:
        command = argv() if callable(argv) else argv
        started = time.perf_counter()
        subprocess.run(command, capture_output=True, check=True, env=env, cwd=REPO,
                       stdin=subprocess.DEVNULL)
        return time.perf_counter() - started

    return timed


@dataclass(frozen=True)
class Case:
    """A command to time; ``kind`` says which target judges it (floor, help or run)."""

    kind: str
    timed: Timed


@contextmanager
def cases(before: Path | None = None) -> Iterator[dict[str, Case]]:
    """The three commands, in a folder of their own that is removed after; with ``before``
    (a copy of an older ``src`` folder), its ``--help`` and ``run`` too, imported from there
    (``PYTHONPATH``) by the same interpreter and entry point."""
    with tempfile.TemporaryDirectory(prefix="fencecall-startup-") as folder:
        root = Path(folder)
        (root / "config").mkdir()
        env = {**os.environ, "XDG_CONFIG_HOME": str(root / "config"),
               "FENCECALL_HOME": str(root / "home"), "PYTHONPYCACHEPREFIX": str(root / "pyc"),
               "PATH": os.pathsep.join([str(Path(sys.executable).parent),
                                        os.environ.get("PATH", os.defpath)])}
        for name in ("FENCECALL_CONFIG", "PYTHONDONTWRITEBYTECODE", "PYTHONPATH"):
            env.pop(name, None)
        script = _executable("fencecall")
        fencecall = ([script] if Path(script).exists()  # else the module, which is the same
                     else [sys.executable, "-m", "fencecall.cli.main"])

        def run_in_a_fresh_workspace() -> list[str]:
            workspace = tempfile.mkdtemp(prefix="workspace-", dir=root)
            return [*fencecall, "run", "-y", "--workspace", workspace, str(REPLY)]

        found = {"python -c pass": Case("floor", _process([sys.executable, "-c", "pass"], env)),
                 "fencecall --help": Case("help", _process([*fencecall, "--help"], env)),
                 "fencecall run -y examples/reply.md": Case(
                     "run", _process(run_in_a_fresh_workspace, env))}
        if before is not None:
            old = {**env, "PYTHONPATH": str(before.resolve())}
            found["before: fencecall --help"] = Case("", _process([*fencecall, "--help"], old))
            found["before: fencecall run -y examples/reply.md"] = Case(
                "", _process(run_in_a_fresh_workspace, old))
        yield found


def rounds(timed: dict[str, Timed], runs: int = RUNS, warmup: int = WARMUP
           ) -> dict[str, list[float]]:
    """Milliseconds of ``runs`` timed runs per case, after ``warmup`` untimed rounds, the
    cases taking turns."""
    for _ in range(warmup):
        for case in timed.values():
            case()
    samples: dict[str, list[float]] = {name: [] for name in timed}
    for _ in range(runs):
        for name, case in timed.items():
            samples[name].append(case() * 1000)
    return samples


@dataclass(frozen=True)
class Row:
    case: str
    median_ms: float
    min_ms: float
    runs: int
    ratio: float
    """The median over the floor's (``python -c pass``) median."""
    target: str
    met: bool | None
    """None: no target for this case."""


def judge(kind: str, median: float, floor: float) -> tuple[str, bool | None]:
    """The target of a case of ``kind`` and whether ``median`` (ms) meets it."""
    if kind == "help":
        return f"<= {HELP_TARGET:g}x floor", median <= HELP_TARGET * floor
    if kind == "run":
        limit = RUN_BASELINE_MS / 2
        return f"<= {limit:.0f} ms (half of {RUN_BASELINE_MS:.0f})", median <= limit
    return "", None


def measure(runs: int = RUNS, warmup: int = WARMUP, before: Path | None = None) -> list[Row]:
    with cases(before) as found:
        samples = rounds({name: case.timed for name, case in found.items()}, runs, warmup)
    [floor] = [statistics.median(samples[name]) for name, case in found.items()
               if case.kind == "floor"]
    rows = []
    for name, times in samples.items():
        median = statistics.median(times)
        target, met = judge(found[name].kind, median, floor)
        rows.append(Row(name, median, min(times), len(times), median / floor, target, met))
    return rows


def print_table(rows: list[Row]) -> None:
    print(f"{'case':<44}{'median ms':>11}{'min ms':>9}{'x floor':>9}{'runs':>6}  target")
    for row in rows:
        verdict = "" if row.met is None else (": met" if row.met else ": NOT met")
        print(f"{row.case:<44}{row.median_ms:>11.1f}{row.min_ms:>9.1f}{row.ratio:>9.2f}"
              f"{row.runs:>6}  {row.target}{verdict}")


def main(argv: list[str] | None = None) -> int:
    """Prints the table; exits 1 if a target is not met."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.startup",
                                     description="fencecall's start-up time against python's")
    parser.add_argument("--runs", type=_positive, default=RUNS,
                        help=f"timed runs of each command (default {RUNS})")
    parser.add_argument("--before", type=Path, metavar="SRC",
                        help="also time the --help and run of the fencecall in this src "
                             "folder (a copy of an older tree), for a before/after table")
    args = parser.parse_args(argv)
    rows = measure(args.runs, before=args.before)
    print_table(rows)
    return 0 if all(row.met is not False for row in rows) else 1


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


if __name__ == "__main__":
    sys.exit(main())
