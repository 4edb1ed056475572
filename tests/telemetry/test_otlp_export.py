"""End to end: the real CLI exports to a real OTLP/HTTP receiver on 127.0.0.1."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.otlp import Receiver
from tests.support import F


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver().running() as found:
        yield found


def run(tmp_path: Path, endpoint: str) -> tuple[subprocess.CompletedProcess[str], float]:
    reply = tmp_path / "reply.md"
    reply.write_text(f"{F}shell\nsleep 0.3; echo done\n{F}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "FENCECALL_"))}
    env.update(FENCECALL_TELEMETRY="1", OTEL_EXPORTER_OTLP_ENDPOINT=endpoint,
               OTEL_EXPORTER_OTLP_TIMEOUT="2", FENCECALL_HOME=str(tmp_path / "home"))
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "fencecall.cli.main", "run", "-y",
                             "--sandbox", "off", "-w", str(tmp_path / "ws"), str(reply)],
                            env=env, capture_output=True, text=True, timeout=120)
    return result, time.monotonic() - started


def test_spans_and_metrics_reach_the_collector(receiver: Receiver, tmp_path: Path) -> None:
    result, _ = run(tmp_path, receiver.url)
    assert result.returncode == 0, result.stderr
    [span] = [s for s in receiver.spans if s.name == "execute_tool shell"]
    assert (span.end_time_unix_nano - span.start_time_unix_nano) / 1e9 >= 0.3
    attributes = {a.key: a.value.string_value for a in span.attributes}
    assert attributes["gen_ai.tool.name"] == "shell"
    assert "gen_ai.execute_tool.duration" in receiver.metrics


def test_an_unreachable_collector_does_not_hold_the_run(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result, took = run(tmp_path, f"http://127.0.0.1:{port}")
    assert result.returncode == 0, result.stderr
    assert "done" in result.stdout
    assert took < 60
