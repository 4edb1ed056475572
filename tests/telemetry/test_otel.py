"""OpenTelemetry spans and metrics, read back with the SDK's in-memory exporter and reader."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from fencecall import telemetry
from fencecall.agent import Agent, Conversation
from fencecall.execution import Session, auto_yes
from fencecall.providers import ScriptedProvider
from fencecall.telemetry._otel import EXECUTE_TOOL_DURATION, OtelTelemetry
from fencecall.tools import Parameter, Toolchain, ToolError, ToolInvocation, ToolSpec

from ..support import F


def _nap(invocation: ToolInvocation) -> str:
    time.sleep(0.2)
    return "rested"


def _fail(invocation: ToolInvocation) -> str:
    raise ToolError("secret-looking detail that must not reach a metric")


TOOLS = Toolchain((ToolSpec("nap", "Sleeps a little.", execute=_nap),
                   ToolSpec("fail", "Always fails.", execute=_fail)))


@pytest.fixture
def recorded() -> Iterator[tuple[InMemorySpanExporter, InMemoryMetricReader]]:
    spans, reader = InMemorySpanExporter(), InMemoryMetricReader()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    with telemetry.using(OtelTelemetry(tracer_provider, MeterProvider(metric_readers=[reader]))):
        yield spans, reader


def _points(reader: InMemoryMetricReader, name: str) -> list[Any]:
    data = reader.get_metrics_data()
    assert data is not None
    return [point for resource in data.resource_metrics for scope in resource.scope_metrics
            for metric in scope.metrics if metric.name == name
            for point in metric.data.data_points]


def test_a_tool_span_covers_the_real_execution(recorded: Any, tmp_path: Path) -> None:
    spans, reader = recorded
    with Session(TOOLS, workspace=tmp_path, sandbox="off") as session:
        list(session.execute(f"{F}nap\n{F}\n{F}fail\n{F}\n"))
    nap, fail = spans.get_finished_spans()
    assert nap.name == "execute_tool nap"
    assert (nap.end_time - nap.start_time) / 1e9 >= 0.2
    assert nap.attributes is not None and fail.attributes is not None
    assert nap.attributes["gen_ai.operation.name"] == "execute_tool"
    assert nap.attributes["gen_ai.tool.name"] == "nap"
    assert nap.attributes["gen_ai.tool.description"] == "Sleeps a little."
    assert nap.attributes["fencecall.format"] == "markdown"
    assert nap.attributes["fencecall.langtag"] == "nap"
    assert len(str(nap.attributes["gen_ai.tool.call.id"])) == 12
    assert nap.status.status_code is StatusCode.UNSET
    assert fail.status.status_code is StatusCode.ERROR
    assert fail.attributes["error.type"] == "error"
    points = _points(reader, EXECUTE_TOOL_DURATION)
    assert sorted(dict(p.attributes)["gen_ai.tool.name"] for p in points) == ["fail", "nap"]
    for point in points:
        assert set(point.attributes) <= {"gen_ai.tool.name", "fencecall.format", "error.type"}
        assert "secret" not in str(dict(point.attributes))


def test_a_turn_parents_its_model_requests_and_tool_calls(recorded: Any,
                                                          tmp_path: Path) -> None:
    spans, reader = recorded
    with Session(TOOLS, workspace=tmp_path, sandbox="off", confirm=auto_yes) as session:
        provider = ScriptedProvider([f"{F}nap\n{F}\n", "Rested."])
        Agent(provider, "tiny-model", session, Conversation.create(tmp_path, "t")).send("rest")
    by_name = {span.name: span for span in spans.get_finished_spans()}
    assert set(by_name) == {"invoke_agent fencecall", "chat tiny-model", "execute_tool nap"}
    turn = by_name["invoke_agent fencecall"]
    for name in ("chat tiny-model", "execute_tool nap"):
        parent = by_name[name].parent
        assert parent is not None and parent.span_id == turn.context.span_id
    chats = [s for s in spans.get_finished_spans() if s.name == "chat tiny-model"]
    assert [s.attributes["gen_ai.response.finish_reasons"] for s in chats] == [
        ("tool_call",), ("stop",)]
    for chat in chats:  # the scripted provider reports no usage: counted, and marked so
        assert chat.attributes is not None
        assert int(str(chat.attributes["gen_ai.usage.input_tokens"])) > 0
        assert chat.attributes["fencecall.usage.counted"] == "estimate"
    assert [dict(p.attributes)["gen_ai.provider.name"]
            for p in _points(reader, "gen_ai.client.operation.duration")] == ["scripted"]


def test_telemetry_is_off_unless_asked_for() -> None:
    assert telemetry.from_settings(False, {}) is telemetry.NO_TELEMETRY
    assert telemetry.from_settings(True, {"FENCECALL_TELEMETRY": "0"}) is telemetry.NO_TELEMETRY
    assert telemetry.wanted({"FENCECALL_TELEMETRY": "1"}, False)


def test_content_is_recorded_only_when_asked_cut_and_redacted(tmp_path: Path) -> None:
    secret = "sk-test-0123456789"

    def leak(invocation: ToolInvocation) -> str:
        return f"the key is {secret} " + "x" * 10_000

    tools = Toolchain((ToolSpec("leak", "Prints too much.", execute=leak,
                                parameters=(Parameter("q"),)),))
    for content in (False, True):
        spans = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(spans))
        with telemetry.using(OtelTelemetry(provider, MeterProvider(), content=content)), \
                Session(tools, workspace=tmp_path, sandbox="off",
                        secrets={"KEY": secret}) as session:
            list(session.execute(f'@leak(c1): {{"q": "what is {secret}?"}}', "tool"))
        [span] = spans.get_finished_spans()
        attributes = dict(span.attributes or {})
        if not content:
            assert "gen_ai.tool.call.arguments" not in attributes
            assert "gen_ai.tool.call.result" not in attributes
            continue
        assert attributes["gen_ai.tool.call.arguments"] == '{"q": "what is [REDACTED:KEY]?"}'
        result = str(attributes["gen_ai.tool.call.result"])
        assert result.startswith("the key is [REDACTED:KEY] ") and result.endswith("…[cut]")
        assert secret not in result and len(result) < 4200
