"""The batch's sessions on one event loop: providers that pace themselves as one, a
consumer that cannot stall the tasks, a stuck task that cannot hold the batch."""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import threading
import time
import unittest.mock
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from fencecall.accounting.tokens import BpeCounter
from fencecall.batch import BatchOptions, TaskResult, _driver, run_batch
from fencecall.batch._driver import drive
from fencecall.batch.progress import BatchProgress
from fencecall.config import Config, load_config
from fencecall.message import Outcome
from fencecall.providers import GateStats
from fencecall.tools.runtime.shell_session import ShellResult, ShellSession
from tests.fakeserver import FakeModelServer, Reply

from .conftest import Script, env_for, task


class RateLimited(Script):
    """A script whose server answers its first request with a 429 and ``Retry-After``."""

    def __init__(self, retry_after: float):
        super().__init__()
        self.retry_after = retry_after
        self.limited_at: float | None = None

    def __call__(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            if self.limited_at is None:
                self.limited_at = time.monotonic()
                return Reply(status=429, retry_after=f"{self.retry_after:g}")
        return super().__call__(body)


@pytest.fixture
def limited() -> Iterator[tuple[RateLimited, FakeModelServer]]:
    script = RateLimited(retry_after=2.0)
    with FakeModelServer(respond=script) as server:
        yield script, server


def two_providers(quick: FakeModelServer, limited: FakeModelServer, tmp_path: Path) -> Config:
    path = tmp_path / "settings" / "config.toml"
    path.parent.mkdir()
    path.write_text(f'[providers.limited]\nkind = "openai"\nbase_url = "{limited.openai_url}"\n')
    return load_config({**env_for(quick, tmp_path), "FENCECALL_CONFIG": str(path)})


def test_a_rate_limit_pauses_its_provider_as_one_and_not_another(
        script: Script, server: FakeModelServer,
        limited: tuple[RateLimited, FakeModelServer], options: BatchOptions,
        tmp_path: Path) -> None:
    limiting, limited_server = limited
    importlib.import_module("openai")  # its 0.6 s import is not the pause under test
    for i in range(4):
        script.shell_then_answer(f"quick{i}", "echo quick", latency=0.2)
        limiting.shell_then_answer(f"slow{i}", "echo slow")
    tasks = [task(f"quick{i}") for i in range(4)]
    tasks += [task(f"slow{i}", model="limited/fake") for i in range(4)]
    seen: list[GateStats] = []
    batch = dataclasses.replace(options, config=two_providers(server, limited_server, tmp_path),
                                retries=2)
    started = time.monotonic()
    results = {r.id: r for r in run_batch(tasks, batch, on_requests=seen.append)}
    assert {r.status for r in results.values()} == {"done"}, results
    # the other provider's tasks did not wait for the pause
    assert all(results[f"quick{i}"].wall_s < 1.5 for i in range(4)), results
    limited_at = limiting.limited_at
    assert limited_at is not None and limited_at - started < 1.0
    # once the server said 429, no new request came until its Retry-After had passed
    later = [served.at - limited_at for served in limited_server.requests
             if served.at - limited_at > 0.3]
    assert later and min(later) >= 2.0 - 0.05, later
    # each task asked each reply once, and the refused request was asked again once
    assert limiting.requests == {f"slow{i}": 2 for i in range(4)}
    assert len(limited_server.requests) == 4 * 2 + 1
    assert any(stats.paused_for > 0 for stats in seen), seen
    assert seen[-1].retries >= 1 and seen[-1].in_flight == 0  # the end's, not a stale look


def test_tasks_go_on_while_the_caller_handles_a_result(
        script: Script, options: BatchOptions) -> None:
    script.add("first", Reply("first done"))
    for i in range(4):
        script.shell_then_answer(f"later{i}", "echo later", latency=0.3)
    tasks = [task("first")] + [task(f"later{i}") for i in range(4)]
    results = run_batch(tasks, options)
    first = next(results)
    assert first.id == "first"
    time.sleep(3.0)  # a slow consumer (a results file on a slow disk, say)
    handed = time.monotonic()
    rest = list(results)
    assert sorted(r.id for r in rest) == [f"later{i}" for i in range(4)]
    assert time.monotonic() - handed < 0.5  # they had all finished meanwhile


def test_a_silent_model_is_cut_at_the_timeout_without_waiting_for_it(
        script: Script, options: BatchOptions) -> None:
    script.add("silent", Reply("never", latency=60))
    started = time.monotonic()
    [result] = run_batch([task("silent", task_timeout=1.0)], options)
    assert result.status == "timeout"
    assert "ran past its timeout of 1 s" in str(result.error)
    assert "did not end within" not in str(result.error)
    assert time.monotonic() - started < 10  # the request was cancelled, not waited for
    assert result.counted_replies == 0 or result.steps == 0


def test_a_task_stuck_in_a_tool_is_left_and_the_batch_still_ends(
        script: Script, options: BatchOptions, monkeypatch: pytest.MonkeyPatch) -> None:
    """A tool that ignores the stop (its thread cannot be killed) holds neither the batch
    nor the process's exit."""
    from fencecall.batch import _runner as runner

    stuck = threading.Event()

    def never_killed(resource: object) -> None:  # the kill does not reach the command
        stuck.set()

    def stuck_in(shell: ShellSession, command: str, timeout: float = 60.0,
                 **options: object) -> ShellResult:
        if command != "sleep 4.5":
            return ShellResult("fine\n", "", 0)
        time.sleep(4.5)  # not even the shell's own timeout ends it
        return ShellResult("", "", 0)

    monkeypatch.setattr(runner, "_kill", never_killed)
    monkeypatch.setattr(ShellSession, "run", stuck_in)
    BpeCounter.knows("warm")  # the tokenizer library loads in 0.7 s, not in the task's time
    script.shell_then_answer("stuck", "sleep 4.5")
    script.shell_then_answer("fine", "echo fine")
    options = dataclasses.replace(options, grace=0.5)
    started = time.monotonic()
    results = {r.id: r for r in run_batch([task("stuck", task_timeout=2.0), task("fine")],
                                          options)}
    assert time.monotonic() - started < 4.0
    assert results["fine"].status == "done"
    assert results["stuck"].status == "timeout" and stuck.is_set()
    assert "did not end within 0.5 s of being stopped" in str(results["stuck"].error)


def test_the_progress_line_shows_requests_in_flight_retries_and_a_pause() -> None:
    progress = BatchProgress(10, live=False, every=3600)
    assert "0 requests in flight, 0 retries" in progress.line()
    progress.requests(GateStats(in_flight=7, waiting=2, retries=1, paused_for=4.2))
    assert "7 requests in flight, 1 retry, paused 5s by the server" in progress.line()
    progress.finished(TaskResult("a", Outcome.DONE))
    assert progress.line().startswith("1/10 done, 0 failed")


def test_the_jobs_loop_is_uvloops_where_it_is_installed() -> None:
    """A job of many sessions runs on uvloop (its scheduling and hand-offs from worker
    threads are in C); without it, on the standard loop."""
    uvloop = pytest.importorskip("uvloop")

    async def job(stop: asyncio.Event) -> AsyncIterator[type]:
        yield type(asyncio.get_running_loop())

    assert list(drive(job, grace=1.0)) == [uvloop.Loop]
    with unittest.mock.patch.object(_driver, "uvloop", None):
        assert [issubclass(kind, asyncio.BaseEventLoop) for kind in drive(job, grace=1.0)] \
            == [True]
