"""End to end: the real CLI exports to a real OTLP/HTTP receiver on 127.0.0.1."""

from __future__ import annotations

import gzip
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

F = "```"


class Receiver:
    """Collects the spans and metric names OTLP/HTTP clients send it."""

    def __init__(self) -> None:
        self.spans: list[Any] = []
        self.metrics: set[str] = set()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                if self.path == "/v1/traces":
                    request = ExportTraceServiceRequest.FromString(body)
                    receiver.spans += [span for rs in request.resource_spans
                                       for ss in rs.scope_spans for span in ss.spans]
                elif self.path == "/v1/metrics":
                    metrics = ExportMetricsServiceRequest.FromString(body)
                    receiver.metrics |= {m.name for rm in metrics.resource_metrics
                                         for sm in rm.scope_metrics for m in sm.metrics}
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver()
    thread = threading.Thread(target=found.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield found
    finally:
        found.server.shutdown()
        found.server.server_close()


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
