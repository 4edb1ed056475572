"""Where the tools run and what it costs: ``python -m benchmarks.environments``.

Three parts, each on real podman and the tests' base image (:mod:`benchmarks.eval_tasks`
builds it where the machine has none; builds are never timed):

1. **A shell call** through fencecall's shell tool (``Session.execute`` of a ```` ```shell ````
   block: parse, confirmation, the persistent shell, the result's formatting), in a session
   whose shell is already running: in a container (a :class:`ContainerEnvironment` of the
   base image), in bwrap (the default sandbox, ``workspace-write``) and on the host (sandbox
   off); ``echo hi``, ``printf 'hi\n'`` and a small file write ``echo x > f``. The sessions
   approve every call (``-y``), so each command runs in the persistent shell, a read-only
   one too (asked, it would run unasked in a one-shot sandbox of its own). After untimed
   warm-up calls the cases take
   turns, one call of each per round (:func:`benchmarks.timing.compare`), so drift on a busy
   machine hits them alike; median and fastest per call, and the ratios container/bwrap,
   bwrap/host and container/host of the medians (and of the fastest) of this one run. The
   issue's target: a container call at most :data:`CALL_TARGET` x a bwrap call.
2. **A container's life**: :meth:`ContainerEnvironment.start` (with the podman commands it
   runs, timed one by one), the first shell call of a new session in it (the session made,
   its shell started in the container, the call), the session's close, and
   :meth:`ContainerEnvironment.close` (the container removed); beside them the first call of
   a new session in bwrap and on the host. One untimed round, then ``--lives`` rounds.
3. **Trials** of ``--tasks`` small Harbor tasks (:func:`benchmarks.eval_tasks.make_tasks`)
   through :func:`fencecall.evaluation.run_eval` at each concurrency of ``--levels``: a model
   agent against :mod:`benchmarks.fast_model_server` (``--delay`` per reply; two shell calls
   that solve the task, then the answer) and the oracle (``solve.sh``). A level runs
   ``--waves`` x concurrency trials (at least one per task, rounded up to a whole number per
   task; with the default single wave a level's trials all start at once, which a long
   evaluation's do not); every trial must be graded 1, with no build. Per level: trials a
   minute, the median and fastest trial's own wall time, the median agent's and verifier's
   time and the rest (the trial's wall time less those two: its container's start, the
   logs copied out, its removal), fencecall's CPU per trial (``getrusage`` RUSAGE_SELF over
   the run: the event loop and its worker threads) and its reaped children's
   (RUSAGE_CHILDREN: the podman CLI processes, and what they waited for; conmon and the
   containers' own processes are not fencecall's children and are not counted), and the
   podman commands per trial run through :meth:`ContainerCli.call` (all but the persistent
   shell's ``podman exec`` and :meth:`ContainerEnvironment.exec`'s), each agent's first
   level broken down by subcommand. Untimed first: one trial of every task by the first
   agent (building the images a machine lacks), and one model trial where that was not
   the model.

Prints markdown tables headed by the machine and date, and writes the raw numbers to
``benchmarks/results/environments-<UTC time>.json``. Every container this process started
is removed at the end (the benchmark checks, by its owner label) and every folder too.
Smoke run (under a minute): ``python -m benchmarks.environments --smoke``.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gc
import json
import math
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fencecall.assembly import Overrides
from fencecall.batch import ResultFile
from fencecall.config import load_config
from fencecall.environments import (
    OWNER_LABEL,
    ContainerCli,
    ContainerEnvironment,
    ContainerUnavailable,
    choose_container_cli,
    owner,
)
from fencecall.evaluation import EvalOptions, ModelAgents, TrialResult, run_eval
from fencecall.execution import Session, auto_yes
from fencecall.sandbox import sandbox_support
from fencecall.tools import Toolchain

from . import eval_tasks, fast_model_server
from .machine import commit, processor
from .timing import compare

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).parent / "results"
CALL_TARGET = 1.5
"""A container's shell call may take at most this many times a bwrap one (the issue's)."""
COMMANDS = ("echo hi", "printf 'hi\\n'", "echo x > f")
WARM_CALLS = 3
"""Untimed calls per case before the timed rounds (the first starts the shell)."""


# ------------------------------------------------------------------------------ sessions


def shell_session(place: str, folder: Path, env: ContainerEnvironment | None = None
                  ) -> Session:
    """A session with the shell tool alone: in ``env`` (a container), in bwrap or on the
    host; every call unasked, as a batch's."""
    tools = Toolchain.build(["shell"])
    if env is not None:
        return Session(tools, confirm=auto_yes, environment=env)
    folder.mkdir(parents=True, exist_ok=True)
    return Session(tools, workspace=folder, confirm=auto_yes,
                   sandbox="workspace-write" if place == "bwrap" else "off")


def call(session: Session, command: str) -> str:
    """One shell tool call; its result, which must say it succeeded."""
    [said] = session.execute(f"```shell\n{command}\n```\n")
    if "Exit code: 0" not in said.content:
        raise AssertionError(f"{command!r} failed: {said.content}")
    return said.content


def places() -> list[str]:
    """Where to measure: the container, bwrap where it runs here, the host."""
    return ["container", *(["bwrap"] if sandbox_support().available else []), "host"]


@contextlib.contextmanager
def sessions(cli: ContainerCli, image: str, root: Path) -> Iterator[dict[str, Session]]:
    """A running session per place, closed (and the container removed) after."""
    with contextlib.ExitStack() as stack:
        env = ContainerEnvironment.start(image, root / "container", cli=cli)
        stack.callback(env.close)
        found: dict[str, Session] = {}
        for place in places():
            found[place] = shell_session(place, root / place,
                                         env if place == "container" else None)
            stack.callback(found[place].close)
        yield found


def call_rows(cli: ContainerCli, image: str, root: Path, runs: int
              ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Part 1: a row per place and command (median and fastest ms), and a row of ratios
    per command."""
    with sessions(cli, image, root) as found:
        for session in found.values():
            for _ in range(WARM_CALLS):
                for command in COMMANDS:
                    call(session, command)
        cases: dict[str, Callable[[], object]] = {
            f"{place}: {command}": functools.partial(call, session, command)
            for place, session in found.items() for command in COMMANDS}
        timings = compare(cases, budget=0.0, min_runs=runs, max_runs=runs)
    rows: list[dict[str, Any]] = [
        {"place": case.partition(": ")[0], "command": case.partition(": ")[2],
         "median ms": round(t.median * 1000, 3),
         "min ms": round(t.min * 1000, 3), "runs": t.runs} for case, t in timings.items()]
    ratios = []
    for command in COMMANDS:
        by = {row["place"]: row for row in rows if row["command"] == command}
        ratio: dict[str, Any] = {"command": command}
        for high, low in (("container", "bwrap"), ("bwrap", "host"), ("container", "host")):
            if high in by and low in by:
                ratio[f"{high}/{low}"] = round(by[high]["median ms"] / by[low]["median ms"], 2)
                ratio[f"{high}/{low} (min)"] = round(by[high]["min ms"] / by[low]["min ms"], 2)
        ratios.append(ratio)
    return rows, ratios


# ------------------------------------------------------------------------------ lifetime


@contextlib.contextmanager
def podman_calls() -> Iterator[list[tuple[str, float]]]:
    """Every :meth:`ContainerCli.call` meanwhile: (subcommand, seconds)."""
    seen: list[tuple[str, float]] = []
    original = ContainerCli.call

    def timed(self: ContainerCli, *args: str, **options: Any
              ) -> subprocess.CompletedProcess[str]:
        """The call, timed."""
        started = time.perf_counter()
        try:
            return original(self, *args, **options)
        finally:
            seen.append((" ".join(args[:2]) if args[0] in ("image", "container")
                         else args[0], time.perf_counter() - started))

    ContainerCli.call = timed  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        ContainerCli.call = original  # type: ignore[method-assign]


def one_life(cli: ContainerCli, image: str, folder: Path) -> dict[str, Any]:
    """Seconds of each step of one container's life, and of a new session's first call in
    bwrap and on the host; the podman commands of the start."""
    times: dict[str, float] = {}
    with podman_calls() as started:
        clock = time.perf_counter()
        env = ContainerEnvironment.start(image, folder / "container", cli=cli)
        times["container start"] = time.perf_counter() - clock
    try:
        clock = time.perf_counter()
        session = shell_session("container", folder, env)
        call(session, "echo hi")
        times["first call of a new session: container"] = time.perf_counter() - clock
        clock = time.perf_counter()
        session.close()
        times["session close: container"] = time.perf_counter() - clock
    finally:
        clock = time.perf_counter()
        env.close()
        times["container removal"] = time.perf_counter() - clock
    for place in places()[1:]:
        clock = time.perf_counter()
        session = shell_session(place, folder / place)
        call(session, "echo hi")
        times[f"first call of a new session: {place}"] = time.perf_counter() - clock
        session.close()
    return {"seconds": times, "start's podman commands": started}


def life_rows(cli: ContainerCli, image: str, root: Path, lives: int
              ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Part 2: a row per step (median and fastest), and the start's podman commands (the
    median seconds of each)."""
    one_life(cli, image, root / "warm")
    runs = [one_life(cli, image, root / f"life-{n}") for n in range(lives)]
    rows = [{"step": step, "median ms": round(statistics.median(
                 run["seconds"][step] for run in runs) * 1000, 1),
             "min ms": round(min(run["seconds"][step] for run in runs) * 1000, 1),
             "runs": lives} for step in runs[0]["seconds"]]
    commands: dict[str, list[float]] = {}
    for run in runs:
        for name, seconds in run["start's podman commands"]:
            commands.setdefault(name, []).append(seconds)
    podman = [{"podman command (in a start)": name, "per start": len(times) / lives,
               "median ms": round(statistics.median(times) * 1000, 1)}
              for name, times in commands.items()]
    return rows, podman


# -------------------------------------------------------------------------------- trials


@dataclass(frozen=True)
class TrialBench:
    """What every level of part 3 shares."""

    cli: ContainerCli
    tasks: list[Path]
    root: Path
    url: str
    server: int


def models(bench: TrialBench) -> ModelAgents:
    """A model agent on the fake server's trial script, its shell tool alone (a new one per
    run: :func:`run_eval` closes its providers at the end)."""
    config = load_config({"FENCECALL_LOCAL_BASE_URL": bench.url,
                          "FENCECALL_HOME": str(bench.root / "home"),
                          "XDG_CONFIG_HOME": str(bench.root / "config")})
    return ModelAgents(config, Overrides(model=f"local/{eval_tasks.SCRIPT}", tools=("shell",),
                                         retries=0), {})


def check_trials(results: Sequence[TrialResult], count: int, agent: str,
                 builds: bool = False) -> None:
    """Every trial graded 1 and, unless ``builds``, on an image that was there: a figure
    from failed or building trials would measure something else."""
    assert len(results) == count, f"{len(results)} results for {count} trials"
    for result in results:
        assert result.error_kind is None, (result.id, result.error_kind, result.error)
        assert result.reward == 1.0, (result.id, result.reward, result.verifier_output)
        assert builds or not result.image_built, f"{result.id} built its image"
        if agent == "model":
            assert result.steps == len(eval_tasks.REPLIES), (result.id, result.steps)


def cpu() -> tuple[float, float]:
    """CPU seconds so far: this process's, and its reaped children's."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


def evaluation(bench: TrialBench, agent: str, concurrency: int, per_task: int, name: str,
               tasks: Sequence[Path] | None = None, builds: bool = False) -> dict[str, Any]:
    """One run of ``per_task`` trials of every task (or of ``tasks``): its raw figures."""
    tasks = bench.tasks if tasks is None else tasks
    folder = bench.root / name
    options = EvalOptions(folder, trials=per_task, concurrency=concurrency,
                          models=models(bench) if agent == "model" else None, cli=bench.cli,
                          environ={})
    served = fast_model_server.stats(bench.url)
    gc.collect()
    before = cpu()
    with ResultFile(folder / "results.jsonl") as out, podman_calls() as commands:
        began = time.perf_counter()
        results = run_eval(tasks, options, out)
        wall = time.perf_counter() - began
    after = cpu()
    served_after = fast_model_server.stats(bench.url)
    count = per_task * len(tasks)
    check_trials(results, count, agent, builds)
    shutil.rmtree(folder, ignore_errors=True)
    return {"wall s": wall, "trials": count, "fencecall CPU s": after[0] - before[0],
            "children CPU s": after[1] - before[1],
            "server requests": served_after["requests"] - served["requests"],
            "server CPU s": served_after["cpu_s"] - served["cpu_s"],
            "trial wall s": sorted(r.wall_s for r in results),
            "agent s": sorted(r.agent_s for r in results),
            "rest s": sorted(r.wall_s - r.agent_s - r.verifier_s for r in results),
            "verifier s": sorted(r.verifier_s for r in results),
            "images built": sum(r.image_built for r in results),
            "build s": sum(r.build_s for r in results), "podman calls": len(commands),
            "podman commands": by_command(commands)}


def by_command(commands: Sequence[tuple[str, float]]) -> dict[str, dict[str, float]]:
    """Each podman subcommand's count, median and total seconds."""
    found: dict[str, list[float]] = {}
    for name, seconds in commands:
        found.setdefault(name, []).append(seconds)
    return {name: {"calls": len(times), "median s": round(statistics.median(times), 4),
                   "total s": round(sum(times), 3)} for name, times in found.items()}


def trial_row(bench: TrialBench, agent: str, concurrency: int, waves: int) -> dict[str, Any]:
    """Part 3, one level: ``waves`` x ``concurrency`` trials (whole rounds of the tasks)."""
    per_task = max(1, math.ceil(waves * concurrency / len(bench.tasks)))
    run = evaluation(bench, agent, concurrency, per_task, f"{agent}-{concurrency}")
    count, wall = run["trials"], run["wall s"]
    return {"agent": agent, "concurrency": concurrency, "trials": count,
            "wall s": round(wall, 2), "trials/min": round(60 * count / wall, 1),
            "trial wall s (median)": round(statistics.median(run["trial wall s"]), 2),
            "trial wall s (min)": round(run["trial wall s"][0], 2),
            "agent s (median)": round(statistics.median(run["agent s"]), 2),
            "verifier s (median)": round(statistics.median(run["verifier s"]), 2),
            "rest s (median)": round(statistics.median(run["rest s"]), 2),
            "fencecall CPU ms/trial": round(1000 * run["fencecall CPU s"] / count, 1),
            "podman CLI CPU ms/trial": round(1000 * run["children CPU s"] / count, 1),
            "podman calls/trial": round(run["podman calls"] / count, 1),
            "run": {k: round(v, 4) if isinstance(v, float) else v for k, v in run.items()}}


def trial_rows(bench: TrialBench, agents: Sequence[str], levels: Sequence[int], waves: int
               ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Part 3: the untimed warm-up (builds included), then a row per agent and level."""
    first = agents[0]
    warm = evaluation(bench, first, len(bench.tasks), 1, f"warm-{first}", builds=True)
    if "model" in agents and first != "model":
        evaluation(bench, "model", 1, 1, "warm-model", bench.tasks[:1])
    rows = [trial_row(bench, agent, level, waves) for agent in agents for level in levels]
    return rows, {"images built": warm["images built"], "build s": round(warm["build s"], 1)}


def command_rows(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The podman commands (through :meth:`ContainerCli.call`) per trial of each agent's
    first level."""
    found: list[dict[str, Any]] = []
    agents: set[str] = set()
    for row in rows:
        if row["agent"] in agents:
            continue
        agents.add(row["agent"])
        for name, seen in row["run"]["podman commands"].items():
            found.append({"agent": row["agent"], "concurrency": row["concurrency"],
                          "podman command": name,
                          "calls/trial": round(seen["calls"] / row["trials"], 2),
                          "median ms": round(1000 * seen["median s"], 1)})
    return found


# -------------------------------------------------------------------------------- report


def machine(cli: ContainerCli) -> dict[str, Any]:
    """The machine, the commit and the container CLI, for the header and the JSON."""
    version = cli.call("version", "--format", "{{.Client.Version}}", check=False)
    return {"date": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC", "cpus": os.cpu_count(),
            "processor": processor(),
            "machine": platform.machine(), "system": platform.platform(),
            "python": platform.python_version(), "commit": commit(),
            "load average": [round(x, 2) for x in os.getloadavg()],
            "container CLI": f"{cli.program} {version.stdout.strip()}".strip()}


def header(about: dict[str, Any], image: str) -> str:
    """The line that says where and when the numbers were taken (the load above all)."""
    load = " ".join(f"{x:.2f}" for x in about["load average"])
    return (f"Environments benchmark, {about['date']}: {about['cpus']} CPUs "
            f"({about['processor']}, {about['machine']}), load average at start {load}; "
            f"Python {about['python']}, fencecall {about['commit'] or '?'}, "
            f"{about['container CLI']}, image {image}.")


def table(rows: Sequence[dict[str, Any]]) -> str:
    """A markdown table of ``rows`` (their keys, but the raw ``run``)."""
    keys = [k for k in dict.fromkeys(k for row in rows for k in row) if k != "run"]
    lines = ["| " + " | ".join(keys) + " |", "|" + "|".join(" --- " for _ in keys) + "|"]
    lines += ["| " + " | ".join(str(row.get(k, "")) for k in keys) + " |" for row in rows]
    return "\n".join(lines)


def targets(ratios: Sequence[dict[str, Any]]) -> str:
    """The issue's target, judged on this run's medians."""
    said = [f"container/bwrap {r['container/bwrap']:.2f}x for `{r['command']}` "
            f"({'met' if r['container/bwrap'] <= CALL_TARGET else 'missed'})"
            for r in ratios if "container/bwrap" in r]
    if not said:
        return "Targets: bwrap does not run here, so container/bwrap was not measured."
    return (f"Targets: a container's shell call at most {CALL_TARGET:g}x a bwrap call: "
            + "; ".join(said) + ".")


def leftovers(cli: ContainerCli) -> list[str]:
    """Remove the containers of this process that are still there (none, if all went
    well); their ids."""
    done = cli.call("ps", "--all", "--quiet", "--filter", f"label={OWNER_LABEL}={owner()}",
                    check=False)
    left = done.stdout.split()
    for container in left:
        cli.remove(container)
    return left


# ---------------------------------------------------------------------------------- main


def arguments(argv: list[str] | None) -> argparse.Namespace:
    """The flags; ``--smoke`` overrides the sizes so a check of the benchmark is quick."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.environments",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200,
                        help="timed shell calls per place and command (part 1)")
    parser.add_argument("--lives", type=int, default=5,
                        help="timed container lives: start, first call, removal (part 2)")
    parser.add_argument("--tasks", type=int, default=4, help="Harbor tasks (part 3)")
    parser.add_argument("--levels", default="1,4,16", help="trial concurrency levels")
    parser.add_argument("--waves", type=int, default=1,
                        help="trials per level: waves x concurrency (at least one per task)")
    parser.add_argument("--agents", default="model,oracle",
                        help="comma-separated: model (the fake server's), oracle")
    parser.add_argument("--delay", type=float, default=0.2,
                        help="seconds the fake model server takes per reply")
    parser.add_argument("--parts", default="1,2,3", help="which parts to run")
    parser.add_argument("--smoke", action="store_true",
                        help="a run under a minute: 30 calls, 1 life, 2 tasks at "
                             "concurrency 1 and 2, the model alone")
    parser.add_argument("--no-save", action="store_true",
                        help="do not write benchmarks/results/environments-<time>.json")
    args = parser.parse_args(argv)
    if args.smoke:
        args.calls, args.lives, args.tasks, args.levels, args.waves, args.agents = (
            30, 1, 2, "1,2", 1, "model")
    if unknown := set(args.agents.split(",")) - {"model", "oracle"}:
        parser.error(f"unknown agent: {', '.join(sorted(unknown))}")
    return args


def run_parts(args: argparse.Namespace, cli: ContainerCli, image: str, tmp: Path
              ) -> dict[str, Any]:
    """The parts asked for, each table printed as it is done; the raw numbers."""
    report: dict[str, Any] = {}
    parts = set(args.parts.split(","))
    if "1" in parts:
        rows, ratios = call_rows(cli, image, tmp / "calls", max(1, args.calls))
        report.update(calls=rows, ratios=ratios)
        print(f"\n## A shell call in a running session\n\n{table(rows)}\n\n{table(ratios)}"
              f"\n\n{targets(ratios)}", flush=True)
    if "2" in parts:
        rows, podman = life_rows(cli, image, tmp / "lives", max(1, args.lives))
        report.update(lives=rows, start_commands=podman)
        print(f"\n## A container's life\n\n{table(rows)}\n\n{table(podman)}", flush=True)
    if "3" in parts:
        server, url = eval_tasks.start_server(args.delay)
        try:
            tasks = eval_tasks.make_tasks(tmp / "tasks", max(1, args.tasks), image)
            bench = TrialBench(cli, tasks, tmp / "trials", url, server.pid)
            rows, builds = trial_rows(bench, args.agents.split(","),
                                      [int(x) for x in args.levels.split(",") if x],
                                      max(1, args.waves))
        finally:
            fast_model_server.stop(server)
        report.update(trials=rows, untimed_builds=builds)
        print(f"\n## Trials ({len(tasks)} tasks, {args.delay:g} s per model reply, "
              f"{eval_tasks.CALLS} shell calls per model trial)\n\n{table(rows)}\n\n"
              f"Untimed warm-up: {builds['images built']} images built "
              f"({builds['build s']} s).\n\n{table(command_rows(rows))}", flush=True)
    return report


def main(argv: list[str] | None = None) -> int:
    """Prints the tables; exits 1 where a container was left behind (then removed), 2
    where podman cannot run containers here."""
    args = arguments(argv)
    try:
        cli = choose_container_cli("podman")
    except ContainerUnavailable as err:
        print(f"cannot run: {err}", file=sys.stderr)
        return 2
    image = eval_tasks.base_image(cli)
    about = machine(cli)
    print(header(about, image), flush=True)
    clock = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix="fencecall-envbench-") as folder:
            report = run_parts(args, cli, image, Path(folder))
    finally:
        left = leftovers(cli)
    about.update({"load average at end": [round(x, 2) for x in os.getloadavg()],
                  "run s": round(time.perf_counter() - clock, 1), "containers left": left})
    print(f"\nThe whole run: {about['run s']} s; load average at the end "
          f"{' '.join(f'{x:.2f}' for x in about['load average at end'])}; containers left "
          f"behind (removed now): {len(left)}.")
    if not args.no_save:
        RESULTS.mkdir(exist_ok=True)
        path = RESULTS / f"environments-{datetime.now(UTC):%Y%m%dT%H%M%SZ}.json"
        path.write_text(json.dumps({"machine": about, "arguments": vars(args), **report},
                                   indent=2) + "\n")
        print(f"Raw numbers: {path.relative_to(ROOT)}")
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main())
