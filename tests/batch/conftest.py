"""Batch tests: a fake model server whose replies are scripted per task.

Each task's prompt starts ``task ID:``; the server answers a request with that task's reply
for the step it is at (the number of assistant messages it sent), so many tasks can talk to
one server at once, in any order.
"""

from __future__ import annotations

import re
import subprocess
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fencecall.batch import BatchOptions, Task
from fencecall.config import Config, load_config
from tests.fakeserver import FakeModelServer, Reply

TASK_RE = re.compile(r"task (\S+):")


class Script:
    """The replies of each task, and how many requests each task made."""

    def __init__(self) -> None:
        self.replies: dict[str, list[Reply]] = {}
        self.requests: Counter[str] = Counter()
        self._lock = threading.Lock()

    def add(self, task_id: str, *replies: Reply) -> None:
        self.replies[task_id] = list(replies)

    def shell_then_answer(self, task_id: str, command: str, latency: float = 0.0) -> None:
        self.add(task_id, Reply(f"```shell\n{command}\n```\n", latency=latency),
                 Reply(f"finished {task_id}", latency=latency))

    def __call__(self, body: dict[str, Any]) -> Reply:
        messages = body.get("messages") or []
        prompt = next((m["content"] for m in messages if m["role"] == "user"), "")
        found = TASK_RE.match(prompt if isinstance(prompt, str) else "")
        task_id = found.group(1) if found else "?"
        step = sum(1 for m in messages if m["role"] == "assistant")
        with self._lock:
            self.requests[task_id] += 1
        replies = self.replies.get(task_id, [])
        return replies[step] if step < len(replies) else Reply(f"(no reply {step} for {task_id})")


def task(task_id: str, text: str = "do it", **fields: Any) -> Task:
    return Task(task_id, f"task {task_id}: {text}", **fields)


@pytest.fixture
def script() -> Script:
    return Script()


@pytest.fixture
def server(script: Script) -> Iterator[FakeModelServer]:
    with FakeModelServer(respond=script) as running:
        yield running


def env_for(server: FakeModelServer, home: Path) -> dict[str, str]:
    return {"FENCECALL_LOCAL_BASE_URL": server.openai_url, "FENCECALL_HOME": str(home / "home"),
            "XDG_CONFIG_HOME": str(home / "config")}


@pytest.fixture
def config(server: FakeModelServer, tmp_path: Path) -> Config:
    return load_config(env_for(server, tmp_path))


@pytest.fixture
def options(config: Config, tmp_path: Path) -> BatchOptions:
    return BatchOptions(config, tmp_path / "batch", model="local/fake", yes=True,
                        sandbox="off", concurrency=8, retries=0, secrets={}, grace=20.0)


def git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(folder), "-c", "user.name=t",
                           "-c", "user.email=t@example.com", *args], check=True,
                          capture_output=True, text=True).stdout
