"""``fencecall batch TASKS --out RESULTS``: a thin layer over :mod:`fencecall.batch`.

Exit status: 0 when every task has a result and every one is done, 3 when a budget (the
batch's or a task's) stopped or kept from starting some task, 4 when a time limit did, else
1 when some task did not end done (or, with Ray, was left without a result), 2 for a usage
or configuration error (a USD budget for a model without a price among them), 128 + the
signal when Ctrl-C or SIGTERM stopped it (rerun it to resume).
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from ..accounting import Limits
from ..assembly import Overrides, provider, require_price, resolve_settings
from ..batch import (
    BatchInterrupted,
    BatchOptions,
    ResultFile,
    Task,
    TaskResult,
    load_tasks,
    run_batch,
)
from ..batch.progress import BatchProgress
from ..config import load_config
from ..message import Outcome
from ..sandbox import SandboxPolicy, choose_sandbox
from ..secrecy import scrub_own_environ
from ..tools.permission_rules import PermissionRules
from .options import overrides_of
from .visible import visible


def _say(text: str) -> None:
    print(f"fencecall batch: {visible(text)}", file=sys.stderr)


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: TextIO | None = None, line: str | None = None) -> None:
    """Warnings (an MCP server that cannot be listed, a sandbox fallback) as our own lines,
    from whichever task's thread they come."""
    _say(f"warning: {str(message).removeprefix('fencecall: ')}")


def run(args: argparse.Namespace) -> int:
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        return _batch(args)


def _batch(args: argparse.Namespace) -> int:
    config = load_config()
    tasks = load_tasks(args.tasks)
    secrets = config.secret_values(os.environ)
    scrub_own_environ(secrets)  # kept in memory for the providers; no tool can read them
    out: Path = args.out.expanduser().resolve()
    folder = (args.dir.expanduser() if args.dir else out.with_name(out.name + ".d")).resolve()
    flags = overrides_of(args)
    defaults = resolve_settings(config, flags)
    sandbox, warning = choose_sandbox(defaults.sandbox, [])
    if warning:
        print(f"fencecall: warning: {warning}", file=sys.stderr)
    if args.yes and sandbox.policy is SandboxPolicy.OFF and \
            not defaults.environment.startswith("container:"):
        _say("warning: -y without a sandbox: every call of every task runs with your rights")
    options = BatchOptions(
        config, folder, model=flags.model, tools=flags.tools, format=args.format,
        max_steps=flags.max_steps, task_timeout=args.task_timeout, concurrency=args.concurrency,
        sandbox=sandbox.policy.value, network=flags.network, yes=args.yes,
        environment=flags.environment, container_cli=flags.container_cli,
        autonomous=flags.autonomous,
        retries=flags.retries, request_timeout=flags.request_timeout,
        max_tokens=flags.max_tokens, secrets=secrets, mcp_servers=defaults.mcp_servers,
        keep_workspaces=args.keep_workspaces,
        budget=Limits(args.batch_budget_usd, args.batch_budget_tokens, args.batch_time_limit),
        task_budget=Limits(flags.budget_usd, flags.budget_tokens),
        logprobs=bool(args.logprobs), trajectories=args.trajectories,
        permissions=PermissionRules(flags.allow, flags.deny))
    with ResultFile(out) as results:
        for note in results.notes:
            _say(f"note: {note}")
        pending = [task for task in tasks if task.id not in results.finished]
        if options.budget.usd is not None:
            _require_prices(options, pending, secrets)
        code = _run(args, options, results, pending, skipped=len(tasks) - len(pending))
        statuses = Counter(str(results.records[task.id]["status"]) for task in tasks
                           if task.id in results.records)
    missing = sum(1 for task in tasks if task.id not in results.records)
    summary = ", ".join(f"{count} {status}" for status, count in sorted(statuses.items()))
    _say(f"{len(tasks) - missing} of {len(tasks)} tasks have results in {out}"
         f"{f' ({summary})' if summary else ''}; logs and workspaces in {folder}")
    if code:
        _say("stopped; run the same command again to resume")
        return code
    if not missing and set(statuses) <= {"done"}:
        return 0
    return next((Outcome(status).exit_code for status in ("budget", "time-limit")
                 if status in statuses), 1)


def _require_prices(options: BatchOptions, tasks: list[Task], secrets: dict[str, str]) -> None:
    """Refuse a batch USD cap before anything runs when a task's model has no price (it
    could not be held)."""
    config = options.config
    for model in sorted({task.model or options.model or config.model or "" for task in tasks}):
        settings = resolve_settings(config, Overrides(model=model or None), options.overrides)
        require_price(settings, config, provider(settings, config, secrets))


def _run(args: argparse.Namespace, options: BatchOptions, results: ResultFile,
         pending: list[Task], skipped: int) -> int:
    with BatchProgress(len(pending), skipped=skipped) as progress:
        try:
            for result in _results(args, options, results, pending, progress):
                progress.finished(result)
        except BatchInterrupted as err:
            return 128 + err.signum
    return 0


def _results(args: argparse.Namespace, options: BatchOptions, results: ResultFile,
             pending: list[Task], progress: BatchProgress) -> Iterator[TaskResult]:
    if args.ray is None:
        return run_batch(pending, options, out=results, on_start=progress.started,
                         on_requests=progress.requests, handle_signals=True)
    from ..batch.ray_backend import run_batch_ray

    return run_batch_ray(pending, options, out=results, on_start=progress.started,
                         on_requests=progress.requests, address=args.ray or None,
                         shard_size=args.shard_size,
                         on_note=lambda note: _say(f"note: {note}"))

