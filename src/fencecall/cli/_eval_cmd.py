"""``fencecall eval PATH... --out RESULTS``: a thin layer over :mod:`fencecall.evaluation`.

A line per trial on stderr as it ends, the summary table on stdout at the end (of every
trial of these tasks in RESULTS, those of an earlier run included). Exit status: 0 when
every trial ran to a reward, whatever its value; 1 when some trial could not (its task,
build, container, agent or verifier failed: its line says which and why); 2 for a usage or
configuration error (no task folder, no model); 128 + the signal when Ctrl-C (130) or
SIGTERM (143) stopped it: the trials under way are stopped and their containers removed, the
finished ones keep their lines, and the same command again runs the others.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ..assembly import Overrides, resolve_settings
from ..batch import BatchInterrupted, ResultFile
from ..config import load_config
from ..errors import UserError
from ..evaluation import (
    EvalOptions,
    ModelAgents,
    TrialResult,
    find_tasks,
    run_eval,
    summarize,
    trial_id,
)
from ..secrecy import scrub_own_environ
from .options import overrides_of
from .visible import visible


def _say(text: str) -> None:
    print(f"fencecall eval: {visible(text)}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    tasks = find_tasks(args.paths)
    environ = dict(os.environ)  # the tasks' ${VAR}s, before the model's keys are wiped
    out: Path = args.out.expanduser().resolve()
    folder = (args.dir.expanduser() if args.dir else out.with_name(out.name + ".d")).resolve()
    options = EvalOptions(folder, trials=args.trials, concurrency=args.concurrency,
                          max_builds=args.max_builds,
                          models=_models(args) if args.agent == "model" else None,
                          environ=environ)
    ids = {trial_id(task.name, index) for task in tasks for index in range(args.trials)}
    stopped = 0
    with ResultFile(out) as results:
        for note in results.notes:
            _say(f"note: {note}")
        skipped = len(ids & results.finished)
        if skipped:
            _say(f"{skipped} of {len(ids)} trials are in {out} already; the others run")
        try:
            _run(args, tasks, options, results)
        except BatchInterrupted as err:
            stopped = 128 + err.signum
        mine = [TrialResult.from_record(record) for key, record in results.records.items()
                if key in ids]
    print(summarize(mine).table())
    _say(f"{len(mine)} of {len(ids)} trials in {out}; their logs and trajectories in {folder}")
    if stopped:
        _say("stopped; run the same command again to resume")
        return stopped
    return 0 if all(result.ran for result in mine) else 1


def _run(args: argparse.Namespace, tasks: list[Path], options: EvalOptions,
         results: ResultFile) -> None:
    """The trials here (signals handled: :class:`BatchInterrupted`), or on Ray (Ctrl-C
    and SIGTERM end this process once the shards are cancelled, as for a batch)."""
    if args.ray is None:
        run_eval(tasks, options, results, on_result=_told, handle_signals=True)
        return
    from ..evaluation._ray import run_eval_ray

    run_eval_ray(tasks, options, results, on_result=_told, address=args.ray or None,
                 shard_size=args.shard_size, on_note=lambda note: _say(f"note: {note}"))


def _models(args: argparse.Namespace) -> ModelAgents:
    """The model agent of the flags; a usage error where no model is named anywhere."""
    config = load_config()
    flags = overrides_of(args)
    if resolve_settings(config, flags).model is None:
        raise UserError("no model: pass --model (or --agent oracle to run the tasks' "
                        "solutions)")
    secrets = config.secret_values(os.environ)
    scrub_own_environ(secrets)  # kept in memory for the provider; no tool can read them
    return ModelAgents(config, Overrides(
        model=flags.model, format=flags.format, max_steps=flags.max_steps,
        max_tokens=flags.max_tokens, request_timeout=flags.request_timeout,
        retries=flags.retries), secrets)


def _told(result: TrialResult) -> None:
    if result.error_kind is not None:
        first = (result.error or "").strip().splitlines()[:1]
        _say(f"{result.id}: {result.error_kind} error: {first[0] if first else '?'}")
    else:
        said = f"reward {result.reward:g}" if result.reward is not None \
            else f"rewards {dict(result.rewards or {})}"
        _say(f"{result.id}: {said} ({result.agent} {result.agent_outcome}, "
             f"{result.wall_s:.1f} s{', image built' if result.image_built else ''})")
