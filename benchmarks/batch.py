"""Batch throughput, CPU and memory per session: ``python -m benchmarks.batch``.

Tasks run through :func:`fencecall.batch.run_batch` (the asyncio scheduler, results appended
to a results file as ``fencecall batch --out`` does) against the fake OpenAI-compatible
server of :mod:`benchmarks.fast_model_server`, in a process of its own (one asyncio loop,
connections kept alive as real model servers do), which answers every reply after a fixed
delay (``--delay``, default 1 s). Each task is four replies and three tool calls (the
``mix``: a ```` ```shell ```` ``echo hi > a.txt``, a ```` ```save b.txt ````, a
```` ```shell ```` ``cat a.txt b.txt``, then the answer ``Done.``; ``--tools shell`` or
``save`` makes all three calls that tool), so with no overhead at all a level runs
``concurrency / (4 x delay)`` tasks a second: "of ideal" is the measured rate over that.
Each level runs ``--waves`` x concurrency tasks (the first wave starts every session at the
same instant, so they set up, call and tear down in step, which a long batch does not; 10
waves keep that ramp to a tenth of the run), ``--repeats`` times: the median run is
reported, with the lowest and highest beside it. Every task must end ``done`` after its four
replies and three successful calls, or the benchmark fails.

Sandbox: ``off`` by default (``-y``, so every call runs, unconfined), as the earlier version
of this benchmark measured: the tasks' commands are fixed and harmless, and the figures are
then fencecall's own overhead, not the cost of bwrap's namespaces, which depends on the
kernel. ``--sandbox workspace-write`` (or ``off,workspace-write``) measures the sandboxed
path too.

Per level, beside the rate:

- CPU per task: this process's user and system CPU over the run (``getrusage``, less the
  memory sampler's own thread), and its reaped children's (the sessions' shells:
  ``RUSAGE_CHILDREN``, which counts a child once it has been waited for, as every session's
  shell is by the end of its task); and the server's CPU per HTTP request it got (its
  process time, which it reports at ``GET /bench/stats``; ``/proc/PID/stat``'s coarser figure
  is in the JSON), chat requests and fencecall's tokenizer probes alike.
- Memory per running session: this process's resident memory (``/proc/self/statm``, every
  50 ms in a thread) at its peak during the run, less what it held just before, over the
  concurrency; and the shells' memory: the largest sum, over scans of the process tree
  (every second, or half the delay; less often when a scan takes long), of the proportional
  set size (PSS, from ``/proc/PID/smaps_rollup``: shared pages split among the processes
  that map them) of every process the sessions started (bash, and the reaper or bwrap it runs
  under; RSS, USS and the split by process name are in the JSON), over the concurrency.
- ``--idle N`` then holds N sessions idle (shell started, waiting on a slow reply) and takes
  the same two memory figures once all of them are idle.
- ``--ray`` adds rows for ``--ray-levels`` (default 100): the same tasks through the Ray
  backend (:func:`fencecall.batch.ray_backend.run_batch_ray`) on a local Ray instance
  started here, in ``--ray-shards`` shards (default: one per CPU) that run the level's
  concurrency between them. Ray's startup (``ray.init``, and a warm-up batch that starts its
  workers and imports fencecall in them) is not counted: a Ray row's time runs from the first
  task's start to the last result (from submission: in the JSON). Its CPU is this process's
  and every Ray process's (the workers, raylet, GCS: ``/proc/PID/stat``; a process that ends
  during the run is missed), its shells' CPU what the workers reaped, and its memory the
  peak of all of them together, less what they held before.

The JSON also has, per run, the server's counters: new connections (the OpenAI SDK closes
each stream at ``[DONE]``, before the end of the chunked body, so its connection is not
kept: expect one per request) and the other requests (fencecall's tokenizer probes).

Prints a markdown table headed by the machine and date, and writes the raw numbers to
``benchmarks/results/batch-<UTC time>.json``. Smoke run:
``python -m benchmarks.batch --levels 1,10 --waves 2 --repeats 1 --delay 0.2``.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import json
import os
import platform
import resource
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fencecall.batch import BatchOptions, Task, TaskResult, run_batch
from fencecall.config import load_config

from . import fast_model_server
from .machine import commit, filesystem, processor

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).parent / "results"
REPLIES = 4
"""Replies per task (three calls, then the answer)."""
CALLS = 3
MIXES: dict[str, tuple[str, ...]] = {"mix": ("shell", "save"), "shell": ("shell",),
                                     "save": ("save",)}
"""Each tool mix: the tools its tasks may use (the calls are in the server's script)."""
MIX_NAMES = {"mix": "shell, save, shell", "shell": "shell x3", "save": "save x3"}
SAMPLE_EVERY = 0.05
"""Seconds between samples of the resident memory of the measured process(es)."""
SCAN_EVERY = 1.0
"""Seconds between scans of the process tree (the shells' memory, Ray's processes); half the
delay if that is shorter."""
PAGE = os.sysconf("SC_PAGE_SIZE")
TICK = os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------------------- processes


@dataclass(frozen=True, slots=True)
class Proc:
    pid: int
    ppid: int
    name: str
    cpu: float
    """User and system CPU seconds."""
    children_cpu: float
    """The user and system CPU seconds of its reaped children."""


def _stat(pid: int | str) -> Proc | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rfind(")") + 2 :].split()
    return Proc(int(pid), int(fields[1]), text[text.find("(") + 1 : text.rfind(")")],
                (int(fields[11]) + int(fields[12])) / TICK,
                (int(fields[13]) + int(fields[14])) / TICK)


def descendants(root: int, skip: int) -> list[Proc]:
    """Every process below ``root``, but ``skip`` and its own."""
    procs = [p for p in map(_stat, (e for e in os.listdir("/proc") if e.isdigit()))
             if p is not None]
    children: dict[int, list[Proc]] = {}
    for proc in procs:
        children.setdefault(proc.ppid, []).append(proc)
    found, queue = [], list(children.get(root, []))
    while queue:
        proc = queue.pop()
        if proc.pid != skip:
            found.append(proc)
            queue += children.get(proc.pid, [])
    return found


def rss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm", "rb") as statm:
            return int(statm.read().split()[1]) * PAGE // 1024
    except (OSError, IndexError, ValueError):
        return 0


def smaps_kib(pid: int) -> tuple[int, int, int]:
    """A process's RSS, PSS and USS (private pages), in KiB (zeros once it has ended)."""
    found = dict.fromkeys(("Rss", "Pss", "Private_Clean", "Private_Dirty"), 0)
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            name, _, value = line.partition(":")
            if name in found:
                found[name] = int(value.split()[0])
    except (OSError, ValueError):
        return 0, 0, 0
    return found["Rss"], found["Pss"], found["Private_Clean"] + found["Private_Dirty"]


@dataclass(slots=True)
class Shells:
    """The shells' memory at one scan, in KiB."""

    count: int = 0
    rss: int = 0
    pss: int = 0
    uss: int = 0
    by_name: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Processes and their PSS, by process name."""


def split(procs: Sequence[Proc], ray: bool) -> tuple[list[Proc], list[Proc]]:
    """The sessions' processes (each shell: bash and what it runs under, fencecall's reaper
    or bwrap, and what they started) and the rest (Ray's own processes). Without Ray every
    process below this one (the server aside) is a session's; with Ray, those below the Ray
    workers (``ray::...``)."""
    if not ray:
        return list(procs), []
    children: dict[int, list[Proc]] = {}
    for proc in procs:
        children.setdefault(proc.ppid, []).append(proc)
    sessions: list[Proc] = []
    queue = [c for p in procs if p.name.startswith("ray::") for c in children.get(p.pid, [])]
    while queue:
        proc = queue.pop()
        sessions.append(proc)
        queue += children.get(proc.pid, [])
    ids = {p.pid for p in sessions}
    return sessions, [p for p in procs if p.pid not in ids]


def shells_now(procs: Sequence[Proc]) -> Shells:
    """The memory of the sessions' processes ``procs``."""
    shells = Shells()
    for proc in procs:
        rss, pss, uss = smaps_kib(proc.pid)
        if rss:
            shells.count += 1
            shells.rss, shells.pss, shells.uss = (
                shells.rss + rss, shells.pss + pss, shells.uss + uss)
            count, kib = shells.by_name.get(proc.name, (0, 0))
            shells.by_name[proc.name] = (count + 1, kib + pss)
    return shells


class Sampler:
    """Memory over a run, from a thread: the resident memory of this process (and with
    ``others``, of every descendant but the server and the shells: Ray's) every
    :data:`SAMPLE_EVERY` seconds, and the shells' every :data:`SCAN_EVERY`."""

    def __init__(self, server: int, others: bool = False, scan_every: float = SCAN_EVERY):
        self.me, self.server, self.others = os.getpid(), server, others
        self.scan_every = scan_every
        self.pids = self._measured(descendants(self.me, server))
        self.before = sum(map(rss_kib, self.pids))
        self.processes = [len(self.pids), len(self.pids)]
        """How many processes were measured, before the run and at its end."""
        self.peak = self.before
        self.shells = Shells()
        self.cpu = 0.0
        self.scans = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-sampler", daemon=True)

    def _measured(self, procs: Sequence[Proc]) -> list[int]:
        return [self.me, *(p.pid for p in split(procs, self.others)[1])]

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        scan = 0.0
        while True:
            if (began := time.monotonic()) >= scan:
                procs = descendants(self.me, self.server)
                self.pids = self._measured(procs)
                shells = shells_now(split(procs, self.others)[0])
                if shells.pss > self.shells.pss:
                    self.shells = shells
                self.scans += 1
                # a scan of thousands of processes takes a while: at most 5% of the time
                scan = began + max(self.scan_every, 20 * (time.monotonic() - began))
            self.peak = max(self.peak, sum(map(rss_kib, self.pids)))
            if self._stop.wait(SAMPLE_EVERY):
                break
        self.processes[1] = len(self.pids)
        self.cpu = time.thread_time()


@dataclass(frozen=True, slots=True)
class Cpu:
    """CPU seconds so far: this process, its reaped children, the server, and (for Ray) the
    other processes below this one, by pid: (own, reaped children's)."""

    me: float
    children: float
    server: float
    others: dict[int, tuple[float, float]] = field(default_factory=dict)

    @classmethod
    def now(cls, server: int, others: bool = False) -> Cpu:
        me = resource.getrusage(resource.RUSAGE_SELF)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        rest = {p.pid: (p.cpu, p.children_cpu)
                for p in split(descendants(os.getpid(), server), True)[1]} if others else {}
        return cls(me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime,
                   fast_model_server.process_cpu(server), rest)

    def others_since(self, before: Cpu) -> tuple[float, float]:
        """The other processes' CPU since ``before``, and their reaped children's (a process
        that ended meanwhile is not counted)."""
        own = reaped = 0.0
        for pid, (cpu, children) in self.others.items():
            was = before.others.get(pid, (0.0, 0.0))
            own, reaped = own + cpu - was[0], reaped + children - was[1]
        return own, reaped


# ------------------------------------------------------------------------------ running


@dataclass(frozen=True)
class Bench:
    """What every run of one benchmark shares."""

    options: BatchOptions
    base: Path
    delay: float
    server: int
    url: str


def make_tasks(name: str, mix: str, count: int) -> list[Task]:
    return [Task(f"{name}-{i}", f"task {i}: write a.txt and b.txt, then show them",
                 tools=MIXES[mix]) for i in range(count)]


def check_results(results: Sequence[TaskResult], count: int) -> None:
    assert len(results) == count, f"{len(results)} results for {count} tasks"
    for result in results:
        assert result.status == "done", (result.id, result.status, result.error)
        assert result.steps == REPLIES and len(result.tool_calls) == CALLS, result
        assert result.tool_errors == 0, (result.id, result.tool_calls)


def one_run(bench: Bench, runner: str, mix: str, concurrency: int, count: int, name: str,
            ray_shards: int = 0) -> dict[str, Any]:
    """One run of ``count`` tasks: its raw figures."""
    folder = bench.base / name
    out = bench.base / f"{name}.jsonl"
    tasks = make_tasks(name, mix, count)
    options = replace(bench.options, folder=folder, model=f"local/{mix}", tools=MIXES[mix],
                      concurrency=concurrency)
    ray = runner == "ray"
    served = fast_model_server.stats(bench.url)
    gc.collect()
    cpu = Cpu.now(bench.server, others=ray)
    first: list[float] = []
    with Sampler(bench.server, others=ray, scan_every=min(SCAN_EVERY, bench.delay / 2)
                 ) as sampler:
        began = time.perf_counter()
        if ray:
            from fencecall.batch.ray_backend import run_batch_ray

            shards = min(ray_shards, concurrency)
            options = replace(options, concurrency=-(-concurrency // shards))
            results = list(run_batch_ray(
                tasks, options, out=out, shard_size=-(-count // shards),
                on_start=lambda _: first.append(time.perf_counter()) if not first else None))
        else:
            results = list(run_batch(tasks, options, out=out))
        ended = time.perf_counter()
    used = Cpu.now(bench.server, others=ray)
    served_after = fast_model_server.stats(bench.url)
    check_results(results, count)
    shutil.rmtree(folder, ignore_errors=True)  # untimed: only one run's workspaces on disk
    out.unlink()
    wall = ended - (first[0] if first else began)
    requests = served_after["requests"] - served["requests"]
    other = {k: n - served["other"].get(k, 0) for k, n in served_after["other"].items()
             if n > served["other"].get(k, 0)}
    others, reaped = used.others_since(cpu)
    me = used.me - cpu.me - sampler.cpu
    run = {"wall s": wall, "tasks": count, "tasks/s": count / wall,
           "tool calls/s": sum(len(r.tool_calls) for r in results) / wall,
           "replies/s": sum(r.steps for r in results) / wall,
           "of ideal": count / wall / (concurrency / (REPLIES * bench.delay)),
           "fencecall CPU s": me + others, "shell CPU s": used.children - cpu.children + reaped,
           "server CPU s": served_after["cpu_s"] - served["cpu_s"],
           "server CPU s (/proc)": used.server - cpu.server, "server requests": requests,
           "server other requests": other,
           "server requests on kept-alive connections": served_after["reused"] - served[
               "reused"],
           "server new connections": served_after["connections"] - served["connections"],
           "server dropped": served_after["dropped"] - served["dropped"],
           "sampler CPU s": sampler.cpu, "process tree scans": sampler.scans,
           "memory before KiB": sampler.before, "memory peak KiB": sampler.peak,
           "shells at peak": sampler.shells.count, "shells RSS KiB": sampler.shells.rss,
           "shells PSS KiB": sampler.shells.pss, "shells USS KiB": sampler.shells.uss,
           "shells (processes, PSS KiB) by name": sampler.shells.by_name}
    if ray:
        run.update({"processes measured (before, end)": sampler.processes,
                    "wall from submission s": ended - began, "this process CPU s": me,
                    "ray processes CPU s": others, "shards": min(ray_shards, concurrency),
                    "concurrency per shard": options.concurrency})
    return run


def level(bench: Bench, runner: str, mix: str, concurrency: int, waves: int, repeats: int,
          ray_shards: int = 0) -> dict[str, Any]:
    """One level, ``repeats`` runs: each figure's median run (the lower of the middle two for
    an even count) and the spread of the rate."""
    count = max(1, waves * concurrency)
    runs = [one_run(bench, runner, mix, concurrency, count,
                    f"{runner}-{mix}-{concurrency}-{repeat}", ray_shards)
            for repeat in range(repeats)]

    def median(key: str) -> float:
        return float(statistics.median_low(run[key] for run in runs))

    def per(key: str, unit: float, divisor: int) -> float:
        return float(statistics.median_low(run[key] * unit / divisor for run in runs))

    ideal = concurrency / (REPLIES * bench.delay)
    rates = sorted(run["of ideal"] for run in runs)
    row: dict[str, Any] = {
        "runner": runner if runner != "ray" else f"ray ({runs[0]['shards']} shards)",
        "tools": mix, "sandbox": bench.options.sandbox, "concurrency": concurrency,
        "tasks": count, "runs": repeats,
        "wall s": round(median("wall s"), 2),
        "tasks/s": round(median("tasks/s"), 3),
        "tool calls/s": round(median("tool calls/s"), 2),
        "ideal tasks/s": round(ideal, 3),
        "of ideal": round(median("of ideal"), 3),
        "of ideal min": round(rates[0], 3), "of ideal max": round(rates[-1], 3),
        "of ideal (worst..best)": f"{rates[0]:.3f}..{rates[-1]:.3f}",
        "fencecall CPU ms/task": round(per("fencecall CPU s", 1000, count), 2),
        "shell CPU ms/task": round(per("shell CPU s", 1000, count), 2),
        "server CPU ms/request": round(statistics.median_low(
            1000 * r["server CPU s"] / max(1, r["server requests"]
                                           + sum(r["server other requests"].values()))
            for r in runs), 3),
        "peak KiB/session": round(statistics.median_low(
            (r["memory peak KiB"] - r["memory before KiB"]) / concurrency for r in runs)),
        "shell KiB/session": round(per("shells PSS KiB", 1, concurrency)),
        "per run": [{k: round(v, 4) if isinstance(v, float) else v for k, v in run.items()}
                    for run in runs]}
    return row


def idle_memory(bench: Bench, sessions: int, idle: float) -> dict[str, Any]:
    """Memory of ``sessions`` sessions waiting on the model, each with its shell started."""
    me = os.getpid()
    gc.collect()
    before = rss_kib(me)
    name = f"idle-{sessions}"
    tasks = [Task(f"{name}-{i}", "idle: wait", tools=("shell",)) for i in range(sessions)]
    sample: dict[str, int] = {}
    by_name: dict[str, tuple[int, int]] = {}

    def measure() -> None:
        deadline = time.monotonic() + idle + 60
        while time.monotonic() < deadline:
            procs = descendants(me, bench.server)
            if sum(p.name == "bash" for p in procs) >= sessions:
                time.sleep(min(0.5, idle / 4))  # every first reply and call is over: all idle
                shells = shells_now(descendants(me, bench.server))
                sample.update(process=rss_kib(me), count=shells.count, rss=shells.rss,
                              pss=shells.pss, uss=shells.uss)
                by_name.update(shells.by_name)
                return
            time.sleep(0.1)

    watcher = threading.Thread(target=measure)
    watcher.start()
    options = replace(bench.options, folder=bench.base / name, model="local/idle",
                      tools=("shell",), concurrency=sessions)
    results = list(run_batch(tasks, options))
    watcher.join()
    shutil.rmtree(bench.base / name, ignore_errors=True)
    assert all(r.status == "done" for r in results), [r.error for r in results][:3]
    if not sample:
        return {"idle sessions": sessions, "note": "never saw every session idle"}
    return {"sandbox": bench.options.sandbox, "idle sessions": sessions,
            "process MiB": round(sample["process"] / 1024, 1),
            "in process KiB/session": round((sample["process"] - before) / sessions),
            "shell PSS KiB/session": round(sample["pss"] / sessions),
            "shell RSS KiB/session": round(sample["rss"] / sessions),
            "shell USS KiB/session": round(sample["uss"] / sessions),
            "shell processes/session": round(sample["count"] / sessions, 2),
            "shell PSS KiB/session by process": {
                name: round(kib / sessions) for name, (_, kib) in sorted(by_name.items())}}


@contextlib.contextmanager
def local_ray(shards: int, warm: Callable[[], None]) -> Iterator[float]:
    """A local Ray instance with a CPU per shard, warmed up (``warm``); yields the seconds
    that took."""
    ray: Any = importlib.import_module("ray")
    began = time.perf_counter()
    ray.init(num_cpus=max(shards, os.cpu_count() or 1), include_dashboard=False,
             log_to_driver=False)
    try:
        warm()
        yield time.perf_counter() - began
    finally:
        ray.shutdown()


# ------------------------------------------------------------------------------- report


def machine(delay: float) -> dict[str, Any]:
    folder = tempfile.gettempdir()  # where the benchmark's folders are made
    return {"date": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC", "cpus": os.cpu_count(),
            "processor": processor(),
            "machine": platform.machine(), "system": platform.platform(),
            "python": platform.python_version(), "commit": commit(),
            "load average": [round(x, 2) for x in os.getloadavg()],
            "memory total MiB": round(os.sysconf("SC_PHYS_PAGES") * PAGE / 2**20),
            "delay s": delay, "replies per task": REPLIES, "tool calls per task": CALLS,
            "folder": folder, "filesystem": filesystem(Path(folder))}


COLUMNS = ("runner", "tools", "concurrency", "tasks", "tasks/s", "tool calls/s", "of ideal",
           "fencecall CPU ms/task", "shell CPU ms/task", "server CPU ms/request",
           "peak KiB/session", "shell KiB/session")


def cell(row: dict[str, Any], key: str) -> str:
    if key == "tools":
        return MIX_NAMES.get(str(row["tools"]), str(row["tools"]))
    if key == "of ideal" and row["runs"] > 1:
        return f"{row['of ideal']:.2f} ({row['of ideal min']:.2f}-{row['of ideal max']:.2f})"
    if key == "of ideal":
        return f"{row['of ideal']:.2f}"
    value = row.get(key, "")
    if isinstance(value, dict):
        return ", ".join(f"{k} {v}" for k, v in value.items())
    if key in ("tasks/s", "tool calls/s") and isinstance(value, float):
        return f"{value:.3g}" if value < 100 else f"{value:.0f}"
    if key in ("fencecall CPU ms/task", "shell CPU ms/task"):
        return f"{value:.1f}"
    if key == "server CPU ms/request":
        return f"{value:.3f}"
    return str(value)


def table(rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None) -> str:
    keys = list(columns or dict.fromkeys(k for row in rows for k in row))
    lines = ["| " + " | ".join(keys) + " |", "|" + "|".join(" --- " for _ in keys) + "|"]
    lines += ["| " + " | ".join(cell(row, k) for k in keys) + " |" for row in rows]
    return "\n".join(lines)


def header(about: dict[str, Any], args: argparse.Namespace) -> str:
    load = " ".join(f"{x:.2f}" for x in about["load average"])
    return (f"Batch benchmark, {about['date']}: {about['cpus']} CPUs ({about['processor']}, "
            f"{about['machine']}), {about['memory total MiB']} MiB, load average at start "
            f"{load}; Python {about['python']}, fencecall {about['commit'] or '?'}.\n"
            f"{args.delay:g} s per reply, {REPLIES} replies and {CALLS} tool calls per task "
            f"(ideal tasks/s = concurrency / {REPLIES * args.delay:g}), {args.waves} waves per "
            f"level, sandbox {args.sandbox}, workspaces in {about['folder']} "
            f"({about['filesystem']}); "
            + (f"median of {args.repeats} runs (lowest-highest of ideal in brackets)."
               if args.repeats > 1 else "one run per level."))


TARGETS = {100: 0.9, 1000: 0.8}
"""The issue's targets: at least this fraction of ideal at these concurrencies (1 s replies,
10 waves, median of 3 runs)."""
MEMORY_TARGET = 2048
"""KiB of this process per running session (its shells aside)."""


def targets(rows: Sequence[dict[str, Any]], args: argparse.Namespace) -> str:
    """How the asyncio rows compare with the issue's targets."""
    said = []
    for row in rows:
        if row["runner"] != "asyncio":
            continue
        goal = TARGETS.get(row["concurrency"])
        if goal is None:
            continue
        kib = row["peak KiB/session"]
        said.append(f"{row['tools']} tasks at concurrency {row['concurrency']}: "
                    f"{row['of ideal']:.2f} of ideal (target {goal}: "
                    f"{'met' if row['of ideal'] >= goal else 'missed'}), {kib} KiB per session "
                    f"at the peak (target under {MEMORY_TARGET}: "
                    f"{'met' if kib < MEMORY_TARGET else 'missed'})")
    if not said:
        return ""
    settings = args.delay == 1 and args.waves == 10 and args.repeats >= 3
    return ("Targets" + ("" if settings else " (these settings are not the targets': 1 s "
                         "replies, 10 waves, 3 runs)") + ":\n" + "\n".join(
        f"- {line}" for line in said))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay", type=float, default=1.0, help="seconds per reply")
    parser.add_argument("--levels", default="1,10,100,1000", help="concurrency levels")
    parser.add_argument("--waves", type=int, default=10,
                        help="tasks per level: waves x concurrency")
    parser.add_argument("--repeats", type=int, default=3,
                        help="runs per level; the median run is reported")
    parser.add_argument("--sandbox", default="off",
                        help="comma-separated policies to measure (off, workspace-write)")
    parser.add_argument("--tools", default="mix",
                        help="comma-separated tool mixes: mix (shell, save, shell), shell or "
                             "save (three calls of that tool)")
    parser.add_argument("--keep-workspaces", default="all", choices=("all", "failed", "none"),
                        help="as fencecall batch's (each run's folder is removed after it)")
    parser.add_argument("--ray", action="store_true",
                        help="also run --ray-levels through the Ray backend")
    parser.add_argument("--ray-levels", default="100", help="concurrency levels on Ray")
    parser.add_argument("--ray-shards", type=int, default=os.cpu_count() or 1,
                        help="Ray shards per level, running the level's concurrency between "
                             "them (default: one per CPU)")
    parser.add_argument("--idle", type=int, default=100, help="sessions held idle (0: skip)")
    parser.add_argument("--idle-seconds", type=float, default=8.0,
                        help="how long the idle sessions wait for their slow reply (at least "
                             "4 x delay)")
    parser.add_argument("--no-save", action="store_true",
                        help="do not write benchmarks/results/batch-<time>.json")
    parser.add_argument("--json", action="store_true", help="print the JSON too (last line)")
    args = parser.parse_args(argv)
    if unknown := set(args.tools.split(",")) - set(MIXES):
        parser.error(f"unknown tool mix: {', '.join(sorted(unknown))}")
    args.repeats = max(1, args.repeats)
    levels = [int(x) for x in args.levels.split(",") if x]
    ray_levels = [int(x) for x in args.ray_levels.split(",") if x] if args.ray else []
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    about = machine(args.delay)
    about["open files limit"] = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    print(header(about, args), flush=True)
    rows: list[dict[str, Any]] = []
    memory: list[dict[str, Any]] = []
    ray_setup: dict[str, float] = {}

    def measured(row: dict[str, Any]) -> None:  # progress, on stderr
        rows.append(row)
        print(table([row], COLUMNS).splitlines()[-1], file=sys.stderr, flush=True)

    idle_for = max(args.idle_seconds, 4 * args.delay)
    server, url = fast_model_server.start(args.delay, idle_for)
    try:
        with tempfile.TemporaryDirectory(prefix="fencecall-bench-") as tmp:
            config = load_config({"FENCECALL_LOCAL_BASE_URL": url,
                                  "FENCECALL_HOME": f"{tmp}/home",
                                  "XDG_CONFIG_HOME": f"{tmp}/config"})
            print(table([], COLUMNS), file=sys.stderr, flush=True)
            for policy in args.sandbox.split(","):
                options = BatchOptions(config, Path(tmp) / "warm", model="local/mix", yes=True,
                                       sandbox=policy, retries=0, secrets={},
                                       keep_workspaces=args.keep_workspaces)
                bench = Bench(options, Path(tmp) / policy, args.delay, server.pid, url)
                for mix in args.tools.split(","):  # imports, first requests: untimed
                    warm = replace(options, model=f"local/{mix}", tools=MIXES[mix])
                    check_results(list(run_batch(make_tasks(f"warm-{mix}", mix, 1), warm)), 1)
                    for concurrency in levels:
                        measured(level(bench, "asyncio", mix, concurrency, args.waves,
                                       args.repeats))
                if args.idle:
                    memory.append(idle_memory(bench, args.idle, idle_for))
                if ray_levels:
                    from fencecall.batch.ray_backend import run_batch_ray

                    def warm_ray(options: BatchOptions = options) -> None:
                        tasks = make_tasks("warm-ray", "mix", args.ray_shards)
                        check_results(list(run_batch_ray(tasks, replace(
                            options, concurrency=1), shard_size=1)), len(tasks))

                    with local_ray(args.ray_shards, warm_ray) as took:
                        ray_setup[policy] = round(took, 2)
                        for mix in args.tools.split(","):
                            for concurrency in ray_levels:
                                measured(level(bench, "ray", mix, concurrency, args.waves,
                                               args.repeats, args.ray_shards))
    finally:
        fast_model_server.stop(server)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    about["load average at end"] = [round(x, 2) for x in os.getloadavg()]
    print()
    print(table(rows, COLUMNS))
    if said := targets(rows, args):
        print()
        print(said)
    if memory:
        print()
        print(table(memory))
    if ray_setup:
        print(f"\nRay's startup and warm-up (not counted): {ray_setup} s")
    report = {"machine": about, "arguments": vars(args), "throughput": rows, "memory": memory,
              "ray setup s": ray_setup}
    if not args.no_save:
        RESULTS.mkdir(exist_ok=True)
        path = RESULTS / f"batch-{datetime.now(UTC):%Y%m%dT%H%M%SZ}.json"
        path.write_text(json.dumps(report, indent=2) + "\n")
        print(f"\nRaw numbers: {path.relative_to(ROOT)}")
    if args.json:
        print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
