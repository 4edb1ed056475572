"""The batch on a Ray cluster, when one machine is not enough (``pip install 'fencecall[ray]'``).

The tasks are cut into shards; each shard is one Ray task (one CPU) that runs the asyncio
scheduler of :mod:`._scheduler` over its tasks, so many sessions share one worker, and
streams each start and each result back as it happens (a Ray streaming generator). Ray
places the shards and runs a shard again when its worker is lost; this process, the
driver, is the only writer of the results file and writes each task id at most once, so a
shard that runs twice, or a batch killed and rerun, still leaves every task exactly once.

The batch's limits are held by one ledger in a Ray actor (:class:`RayAccount` is its handle
in every shard), so the cap is shared by every task on every worker, as with asyncio.

Task workspaces (copied folders, local repositories) and the batch folder must be reachable
at the same paths on the workers: the same machine, or a shared file system. The options
travel with each shard, the providers' keys among them (``BatchOptions.secrets``).
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from ..accounting import Account, Hold, Ledger, Refusal
from ..errors import SignalInterrupt, UserError
from ..providers import GateStats
from ._results import ResultFile, TaskResult
from ._runner import BatchOptions
from ._scheduler import TaskStarted, ledger, run_events
from ._tasks import Task, check_unique

INSTALL_HINT = "pip install 'fencecall[ray]'"
WAIT_STEP = 1.0
"""Seconds between checks for Ctrl-C while no shard reports."""


class RayAccount:
    """The batch's :class:`~fencecall.accounting.Ledger`, living in a Ray actor, as an
    :class:`~fencecall.accounting.Account` for the shards (it pickles as the actor's
    handle)."""

    def __init__(self, actor: Any):
        self._actor = actor

    def _ask(self, call: Any) -> Any:
        return ray_module().get(call)

    def reserve(self, usd: Decimal | None, tokens: int) -> Hold | Refusal | None:
        answer: Hold | Refusal | None = self._ask(self._actor.reserve.remote(usd, tokens))
        return answer

    def settle(self, hold: Hold, usd: Decimal | None, tokens: int) -> None:
        self._ask(self._actor.settle.remote(hold, usd, tokens))

    def closed(self) -> Refusal | None:
        answer: Refusal | None = self._ask(self._actor.closed.remote())
        return answer

    def time_left(self) -> float | None:
        answer: float | None = self._ask(self._actor.time_left.remote())
        return answer

    def spent(self) -> tuple[Decimal, int]:
        answer: tuple[Decimal, int] = self._ask(self._actor.spent.remote())
        return answer


def shard_events(tasks: list[Task], options: BatchOptions,
                 account: Account | None = None) -> Generator[dict[str, Any], None, None]:
    """What runs on a Ray worker: one shard's tasks through the asyncio scheduler, each start
    and result as a plain record."""
    for event in run_events(tasks, options, account=account):
        if isinstance(event, TaskStarted):
            yield {"started": event.id}
        elif isinstance(event, GateStats):
            yield {"requests": [event.in_flight, event.waiting, event.retries,
                                event.paused_for]}
        else:
            yield {"result": event.record()}


def ray_module() -> Any:
    """Ray, or a usage error saying how to install it."""
    try:
        import ray
    except ImportError:
        raise UserError(f"the Ray backend needs Ray: {INSTALL_HINT}") from None
    return ray


def run_batch_ray(tasks: Iterable[Task], options: BatchOptions, *,
                  out: ResultFile | Path | None = None,
                  on_start: Callable[[str], None] | None = None,
                  on_requests: Callable[[GateStats], None] | None = None,
                  address: str | None = None, shard_size: int | None = None,
                  on_note: Callable[[str], None] | None = None
                  ) -> Generator[TaskResult, None, None]:
    """:func:`~._scheduler.run_batch` on Ray: the same skipping of finished tasks, the same
    appending of each result, the same results. Connects to Ray at ``address`` (None: the
    running instance, ``RAY_ADDRESS``, or a new local one) unless already connected. A
    shard that fails for good is said through ``on_note``; its unfinished tasks keep no
    result and run when the batch is resumed."""
    ray = ray_module()
    listed = check_unique(tasks)
    file = ResultFile(out) if isinstance(out, Path) else out
    try:
        written = set(file.finished) if file is not None else set()
        listed = [task for task in listed if task.id not in written]
        if not listed:
            return
        connect(ray, address)
        size = shard_size or max(1, options.concurrency * 4)
        shards = [listed[i : i + size] for i in range(0, len(listed), size)]
        actor = ledger(options, file, make=ray.remote(num_cpus=0)(Ledger).remote)
        account = RayAccount(actor) if actor is not None else None  # one cap for all shards
        remote = ray.remote(shard_events).options(num_returns="streaming", num_cpus=1,
                                                  max_retries=3)
        running = [remote.remote(shard, options, account) for shard in shards]
        with stop_signals():
            try:
                yield from _collect(ray, running, file, written,
                                    _Hooks(on_start, on_requests, on_note))
            except BaseException:  # Ctrl-C, SIGTERM: stop the shards; their tasks rerun later
                cancel_shards(ray, running)
                raise
    finally:
        if file is not None and isinstance(out, Path):
            file.close()


@dataclass(frozen=True, slots=True)
class _Hooks:
    """What the driver tells its caller besides results."""

    on_start: Callable[[str], None] | None
    on_requests: Callable[[GateStats], None] | None
    on_note: Callable[[str], None] | None


def _collect(ray: Any, running: list[Any], file: ResultFile | None, written: set[str],
             hooks: _Hooks) -> Generator[TaskResult, None, None]:
    requests: dict[int, GateStats] = {}  # each shard's latest, summed for the caller

    def failed(why: str) -> None:
        if hooks.on_note is not None:
            hooks.on_note(f"a shard failed ({why}); its unfinished tasks have no result and "
                          "run when the batch is resumed")

    for shard, record in streamed(ray, running, failed):
        if record is None:
            requests.pop(shard, None)
            continue
        if "requests" in record:
            requests[shard] = GateStats(*record["requests"])
            if hooks.on_requests is not None:
                hooks.on_requests(GateStats.total(requests.values()))
            continue
        if "started" in record:
            if hooks.on_start is not None and record["started"] not in written:
                hooks.on_start(record["started"])
            continue
        result = TaskResult.from_record(record["result"])
        if result.id in written:  # a shard that ran again: its first result counts
            continue
        written.add(result.id)
        if file is not None:
            file.append(result)
        yield result


def connect(ray: Any, address: str | None) -> None:
    """Connect to Ray at ``address`` (None: the running instance, ``RAY_ADDRESS``, or a new
    local one) unless already connected. Ray's driver puts a SIGTERM handler of its own in
    place (it logs and exits at once, with 1, before the shards are cancelled): the
    process's own goes back (while the shards run, :func:`stop_signals` takes over)."""
    if ray.is_initialized():
        return
    kept = signal.getsignal(signal.SIGTERM)
    ray.init(address=address, log_to_driver=False)
    if kept is not None and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, kept)


@contextlib.contextmanager
def stop_signals() -> Iterator[None]:
    """While a driver waits on its shards: SIGTERM and SIGHUP raise KeyboardInterrupt (a
    :class:`~fencecall.errors.SignalInterrupt`), the one exception Ray's waits let through as
    it is (whatever else a handler raises comes out of them as ``SystemExit(1)``), and the
    block ends in ``SystemExit(128 + signal)``, as fencecall's own handler would end it, once
    the shards are cancelled. One that lands while the caller handles a result (the block is
    a generator's, waiting at its ``yield``) is met there, still saying which signal it was."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got: list[int] = []

    def interrupt(signum: int, frame: object) -> None:
        got.append(signum)
        raise SignalInterrupt(signum)  # also where the caller handles a result

    kept = {signum: signal.signal(signum, interrupt) for signum in _STOPS}
    try:
        yield
    except KeyboardInterrupt:
        if got:
            raise SystemExit(128 + got[0]) from None
        raise
    finally:
        for signum, handler in kept.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)


_STOPS = (signal.SIGTERM, signal.SIGHUP)


def streamed(ray: Any, running: list[Any], on_failure: Callable[[str], None] | None
             ) -> Generator[tuple[int, dict[str, Any] | None], None, None]:
    """Each record the shards' streaming generators in ``running`` send, as it comes, with
    its shard (a number); ``(shard, None)`` when a shard ends. A shard that fails for good
    ends too, and ``on_failure`` is told why (the error's first line)."""
    while running:
        ready, _ = ray.wait(running, num_returns=1, timeout=WAIT_STEP)
        for generator in ready:
            try:
                record: dict[str, Any] = ray.get(next(generator))
            except (StopIteration, ray.exceptions.RayError) as err:
                running.remove(generator)
                if not isinstance(err, StopIteration) and on_failure is not None:
                    on_failure(_first_line(err))
                yield id(generator), None
                continue
            yield id(generator), record


def cancel_shards(ray: Any, running: list[Any], grace: float = 0.0) -> None:
    """Stop the shards (Ctrl-C in each); with ``grace``, wait up to that many seconds for
    them to end (so what they started is cleaned up before this process goes)."""
    for generator in running:
        ray.cancel(generator)
    if grace <= 0:
        return
    deadline = time.monotonic() + grace
    with contextlib.suppress(Exception):  # whatever they said as they ended
        for _ in streamed(ray, running, None):
            if time.monotonic() > deadline:
                break


def _first_line(err: BaseException) -> str:
    lines = str(err).strip().splitlines()
    return lines[0] if lines else type(err).__name__

