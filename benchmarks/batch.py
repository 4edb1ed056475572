"""How many sessions one process holds: ``python -m benchmarks.batch``.

Tasks run through :func:`fencecall.batch.run_batch` against the fake OpenAI-compatible server
(in a process of its own, so it does not share this one's interpreter lock; keeping
connections open between requests, as real model servers do), which answers every reply
after a fixed delay: a shell call (``echo``), then an answer. Each task is thus
two replies and one tool call (``shell``, which starts a bash per session, or ``save``,
which runs in process); the ideal, with no overhead at all, is ``concurrency / delay``
replies per second. Each row is measured in one run (or the median of ``--repeats`` runs, with
their minimum beside it) and reported as a fraction of that ideal. The first wave starts every
session at the same instant, so all of them set up, call and tear down in step, which a long
batch does not; the default of 10 waves keeps that ramp to a tenth of the run (with 3 waves
the concurrency-100 figure is about 0.1 lower).
Then 100 sessions are held idle (their shell started, waiting on a slow reply) to measure
memory per idle session: this process's resident memory, and the shells' own.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from fencecall.batch import BatchOptions, Task, run_batch
from fencecall.config import load_config

ROOT = Path(__file__).resolve().parent.parent
SERVER = """
import sys, threading
sys.path.insert(0, {root!r})
from tests.fakeserver import FakeModelServer, Reply
delay, idle = float(sys.argv[1]), float(sys.argv[2])

def respond(body):
    step = sum(1 for m in body["messages"] if m["role"] == "assistant")
    prompt = body["messages"][1]["content"]
    if step == 0 and "use save" in prompt:
        return Reply("```save out.txt\\nhi\\n```\\n", latency=delay, chunk_size=64)
    if step == 0:
        return Reply("```shell\\necho hi\\n```\\n", latency=delay, chunk_size=64)
    slow = "idle" in prompt
    return Reply("Done.", latency=idle if slow else delay, chunk_size=64)

with FakeModelServer(respond=respond, keep_alive=True) as server:
    print(server.openai_url, flush=True)
    sys.stdin.read()
"""


@contextmanager
def fake_server(delay: float, idle: float) -> Iterator[tuple[str, int]]:
    proc = subprocess.Popen([sys.executable, "-c", SERVER.format(root=str(ROOT)), str(delay),
                             str(idle)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None and proc.stdin is not None
    try:
        yield proc.stdout.readline().strip(), proc.pid
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)


def _rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            children.setdefault(int(stat[stat.rfind(")") + 2 :].split()[1]), []).append(
                int(entry.name))
    found, queue = [], list(children.get(root, []))
    while queue:
        pid = queue.pop()
        found.append(pid)
        queue += children.get(pid, [])
    return found


def throughput(options: BatchOptions, tool: str, concurrency: int, tasks: int,
               delay: float, repeats: int = 1) -> dict[str, object]:
    """One level, run ``repeats`` times: the run with the median wall time, and the spread."""
    runs = []
    for repeat in range(repeats):
        batch = [Task(f"{tool}-{concurrency}-{repeat}-{i}", f"use {tool} {i}", tools=(tool,))
                 for i in range(tasks)]
        start = time.perf_counter()
        results = list(run_batch(batch, replace(options, concurrency=concurrency)))
        wall = time.perf_counter() - start
        assert all(r.status == "done" for r in results), [r.error for r in results][:3]
        runs.append((wall, sum(len(r.tool_calls) for r in results),
                     sum(r.steps for r in results)))
    runs.sort()
    wall, calls, replies = runs[(len(runs) - 1) // 2]
    ideal = concurrency / delay
    best, worst = runs[0], runs[-1]
    return {"sandbox": options.sandbox, "tool": tool, "concurrency": concurrency,
            "tasks": tasks, "runs": repeats,
            "wall s": round(wall, 2), "sessions/s": round(tasks / wall, 2),
            "tool calls/s": round(calls / wall, 2), "replies/s": round(replies / wall, 2),
            "ideal replies/s": round(ideal, 1), "of ideal": round(replies / wall / ideal, 3),
            "of ideal (worst..best)":
                f"{worst[2] / worst[0] / ideal:.3f}..{best[2] / best[0] / ideal:.3f}"}


def idle_memory(options: BatchOptions, sessions: int, idle: float,
                server: int) -> dict[str, object]:
    """Memory of ``sessions`` sessions that wait on the model, each with its shell started
    (``server``: the fake server's pid, not counted)."""
    me = os.getpid()
    before = _rss_kib(me)
    batch = [Task(f"idle-{i}", "idle: wait") for i in range(sessions)]
    sample: dict[str, int] = {}

    def measure() -> None:
        deadline = time.monotonic() + idle + 60
        while time.monotonic() < deadline:
            shells = [pid for pid in _descendants(me) if pid != server]
            if len(shells) >= sessions:
                time.sleep(0.5)  # every first reply and shell call is over: all idle
                shells = [pid for pid in _descendants(me) if pid != server]
                sample.update(process=_rss_kib(me), shells=sum(map(_rss_kib, shells)),
                              count=len(shells))
                return
            time.sleep(0.1)

    watcher = threading.Thread(target=measure)
    watcher.start()
    results = list(run_batch(batch, replace(options, concurrency=sessions)))
    watcher.join()
    assert all(r.status == "done" for r in results)
    if not sample:
        return {"idle sessions": sessions, "note": "never saw every session idle"}
    return {"sandbox": options.sandbox, "idle sessions": sessions,
            "process MiB": round(sample["process"] / 1024, 1),
            "per session KiB (in process)": round((sample["process"] - before) / sessions),
            "per session KiB (shell processes)": round(sample["shells"] / sessions),
            "processes per session": round(sample["count"] / sessions, 1)}


def table(rows: list[dict[str, object]]) -> str:
    keys = list(dict.fromkeys(k for row in rows for k in row))
    widths = {k: max(len(k), *(len(str(row.get(k, ""))) for row in rows)) for k in keys}
    lines = [" | ".join(k.ljust(widths[k]) for k in keys),
             "-|-".join("-" * widths[k] for k in keys)]
    lines += [" | ".join(str(row.get(k, "")).ljust(widths[k]) for k in keys) for row in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay", type=float, default=1.0, help="seconds per reply")
    parser.add_argument("--levels", default="1,10,100", help="concurrency levels")
    parser.add_argument("--waves", type=int, default=10,
                        help="tasks per level: waves x concurrency (at least 5)")
    parser.add_argument("--repeats", type=int, default=1,
                        help="runs per level; the median run is reported")
    parser.add_argument("--sandbox", default="off",
                        help="comma-separated policies to measure (off, workspace-write)")
    parser.add_argument("--tools", default="shell,save",
                        help="the tool each task calls: shell (a bash per session) or save "
                             "(in process)")
    parser.add_argument("--idle", type=int, default=100, help="sessions held idle (0: skip)")
    parser.add_argument("--idle-seconds", type=float, default=8.0,
                        help="how long the idle sessions wait for their slow reply (at least "
                             "4 x delay)")
    parser.add_argument("--json", action="store_true", help="print JSON rows too")
    args = parser.parse_args(argv)
    levels = [int(level) for level in args.levels.split(",")]
    print(f"cpus: {os.cpu_count()}, load average: {os.getloadavg()[0]:.2f}, "
          f"delay: {args.delay} s per reply", flush=True)
    rows: list[dict[str, object]] = []
    memory: list[dict[str, object]] = []
    idle_for = max(args.idle_seconds, 4 * args.delay)
    with tempfile.TemporaryDirectory(prefix="fencecall-bench-") as tmp, \
            fake_server(args.delay, idle_for) as (url, server):
        config = load_config({"FENCECALL_LOCAL_BASE_URL": url,
                              "FENCECALL_HOME": f"{tmp}/home",
                              "XDG_CONFIG_HOME": f"{tmp}/config"})
        for policy in args.sandbox.split(","):
            options = BatchOptions(config, Path(tmp) / policy, model="local/bench", yes=True,
                                   sandbox=policy, retries=0, secrets={}, tools=("shell",))
            list(run_batch([Task(f"warm-{policy}", "warm up")], options))  # imports, probe
            for tool in args.tools.split(","):
                for level in levels:
                    rows.append(throughput(options, tool, level, max(5, args.waves * level),
                                           args.delay, max(1, args.repeats)))
                    print(table(rows[-1:]).splitlines()[-1], flush=True)
            if args.idle:
                memory.append(idle_memory(options, args.idle, idle_for, server))
    print()
    print(table(rows))
    if memory:
        print()
        print(table(memory))
    if args.json:
        print(json.dumps({"throughput": rows, "memory": memory}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
