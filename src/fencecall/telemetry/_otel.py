"""The OpenTelemetry telemetry, after the GenAI semantic conventions (attribute names from
``opentelemetry-semantic-conventions``): ``execute_tool {tool}`` spans (INTERNAL), ``chat
{model}`` spans (CLIENT) and ``invoke_agent`` spans around a user turn, with the duration and
token metrics. Metric attributes are low-cardinality only (tool, format, model, provider,
error type); no message, argument or result is recorded.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.metrics import MeterProvider
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
from opentelemetry.semconv._incubating.metrics import gen_ai_metrics
from opentelemetry.semconv.attributes import error_attributes
from opentelemetry.trace import SpanKind, Status, StatusCode, TracerProvider

from ._base import ChatRun, Telemetry, ToolRun

EXECUTE_TOOL_DURATION = "gen_ai.execute_tool.duration"
"""Not in the conventions' metric constants (yet): named after the ``execute_tool`` span."""
SCOPE = "fencecall"
CONTENT_LIMIT = 4096
"""Characters of a tool's arguments or result kept in a span, when content is recorded."""


class OtelTelemetry(Telemetry):
    """Spans and metrics through the given providers; :meth:`configured` makes them from the
    ``OTEL_*`` variables unless the embedding application set global ones."""

    def __init__(self, tracer_provider: TracerProvider, meter_provider: MeterProvider, *,
                 owned: tuple[Any, ...] = (), content: bool = False):
        self.records_content = content
        self._tracer = tracer_provider.get_tracer(SCOPE)
        meter = meter_provider.get_meter(SCOPE)
        self._tool_duration = meter.create_histogram(
            EXECUTE_TOOL_DURATION, unit="s", description="Duration of tool calls")
        self._chat_duration = meter.create_histogram(
            gen_ai_metrics.GEN_AI_CLIENT_OPERATION_DURATION, unit="s",
            description="Duration of model requests")
        self._tokens = meter.create_histogram(
            gen_ai_metrics.GEN_AI_CLIENT_TOKEN_USAGE, unit="{token}",
            description="Tokens used per model request")
        self._owned = owned

    @classmethod
    def configured(cls, *, content: bool = False) -> OtelTelemetry:
        tracer_provider: Any = trace.get_tracer_provider()
        meter_provider: Any = metrics.get_meter_provider()
        owned: list[Any] = []
        if type(tracer_provider).__name__.startswith(("Proxy", "NoOp")):
            tracer_provider = _own_tracer_provider()
            owned.append(tracer_provider)
        if type(meter_provider).__name__.startswith(("_Proxy", "NoOp")):
            meter_provider = _own_meter_provider()
            owned.append(meter_provider)
        return cls(tracer_provider, meter_provider, owned=tuple(owned), content=content)

    def tool(self, name: str, *, call_id: str | None, description: str, fmt: str,
             langtag: str | None, arguments: str | None = None) -> ToolRun:
        attributes = {gen_ai.GEN_AI_OPERATION_NAME: "execute_tool", gen_ai.GEN_AI_TOOL_NAME: name,
                      gen_ai.GEN_AI_TOOL_CALL_ID: call_id or os.urandom(6).hex(),
                      gen_ai.GEN_AI_TOOL_TYPE: "function",
                      gen_ai.GEN_AI_TOOL_DESCRIPTION: description, "fencecall.format": fmt}
        if langtag is not None:
            attributes["fencecall.langtag"] = langtag
        if arguments is not None and self.records_content:
            attributes[gen_ai.GEN_AI_TOOL_CALL_ARGUMENTS] = _cut(arguments)
        span = self._tracer.start_span(f"execute_tool {name}", kind=SpanKind.INTERNAL,
                                       attributes=attributes)
        return _OtelToolRun(span, self._tool_duration, {gen_ai.GEN_AI_TOOL_NAME: name,
                                                         "fencecall.format": fmt})

    def chat(self, model: str, *, provider: str, url: str | None) -> ChatRun:
        attributes = {gen_ai.GEN_AI_OPERATION_NAME: "chat", gen_ai.GEN_AI_REQUEST_MODEL: model,
                      gen_ai.GEN_AI_PROVIDER_NAME: provider}
        if url:
            attributes["server.address"] = url
        span = self._tracer.start_span(f"chat {model}", kind=SpanKind.CLIENT,
                                       attributes=attributes)
        return _OtelChatRun(span, self, {gen_ai.GEN_AI_OPERATION_NAME: "chat",
                                         gen_ai.GEN_AI_REQUEST_MODEL: model,
                                         gen_ai.GEN_AI_PROVIDER_NAME: provider})

    @contextmanager
    def turn(self, model: str) -> Iterator[None]:
        with self._tracer.start_as_current_span(
                "invoke_agent fencecall", kind=SpanKind.INTERNAL,
                attributes={gen_ai.GEN_AI_OPERATION_NAME: "invoke_agent",
                            gen_ai.GEN_AI_REQUEST_MODEL: model}):
            yield

    def shutdown(self) -> None:
        for provider in self._owned:
            provider.shutdown()


class _OtelToolRun(ToolRun):
    def __init__(self, span: trace.Span, duration: Any, attributes: dict[str, str]):
        self._span, self._duration, self._attributes = span, duration, attributes
        self._started = time.monotonic()

    def end(self, outcome: str, error_type: str | None, result: str | None = None) -> None:
        attributes = dict(self._attributes)
        if result is not None:
            self._span.set_attribute(gen_ai.GEN_AI_TOOL_CALL_RESULT, _cut(result))
        if error_type is not None:
            attributes[error_attributes.ERROR_TYPE] = error_type
            self._span.set_attribute(error_attributes.ERROR_TYPE, error_type)
            self._span.set_status(Status(StatusCode.ERROR, outcome))
        self._span.set_attribute("fencecall.outcome", outcome)
        self._duration.record(time.monotonic() - self._started, attributes)
        self._span.end()


class _OtelChatRun(ChatRun):
    def __init__(self, span: trace.Span, telemetry: OtelTelemetry, attributes: dict[str, str]):
        self._span, self._telemetry, self._attributes = span, telemetry, attributes
        self._started = time.monotonic()

    def end(self, *, finish_reason: str | None = None, usage: Mapping[str, int] | None = None,
            error_type: str | None = None, counted: str | None = None,
            cost_usd: float | None = None) -> None:
        attributes = dict(self._attributes)
        span = self._span
        if counted is not None:  # the provider reported none: fencecall's own count
            span.set_attribute("fencecall.usage.counted", counted)
        if cost_usd is not None:
            span.set_attribute("fencecall.cost_usd", cost_usd)
        if finish_reason is not None:
            span.set_attribute(gen_ai.GEN_AI_RESPONSE_FINISH_REASONS, [finish_reason])
        if usage is not None:
            cached = usage.get("cache_read_tokens", 0) + usage.get("cache_write_tokens", 0)
            inputs = usage.get("input_tokens", 0) + cached
            span.set_attribute(gen_ai.GEN_AI_USAGE_INPUT_TOKENS, inputs)
            span.set_attribute(gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS, usage.get("output_tokens", 0))
            span.set_attribute(gen_ai.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
                               usage.get("cache_read_tokens", 0))
            span.set_attribute(gen_ai.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS,
                               usage.get("cache_write_tokens", 0))
            tokens = self._telemetry._tokens
            tokens.record(inputs, {**attributes, "gen_ai.token.type": "input"})
            tokens.record(usage.get("output_tokens", 0),
                          {**attributes, "gen_ai.token.type": "output"})
        if error_type is not None:
            attributes[error_attributes.ERROR_TYPE] = error_type
            span.set_attribute(error_attributes.ERROR_TYPE, error_type)
            span.set_status(Status(StatusCode.ERROR))
        self._telemetry._chat_duration.record(time.monotonic() - self._started, attributes)
        span.end()


def _cut(text: str) -> str:
    return text if len(text) <= CONTENT_LIMIT else text[:CONTENT_LIMIT] + "…[cut]"


def _resource() -> Any:
    from opentelemetry.sdk.resources import Resource

    return Resource.create({} if "OTEL_SERVICE_NAME" in os.environ
                           else {"service.name": "fencecall"})


def _own_tracer_provider() -> Any:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = SdkTracerProvider(resource=_resource())
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return provider


def _own_meter_provider() -> Any:
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.sdk.metrics import MeterProvider as SdkMeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

    reader = PeriodicExportingMetricReader(OTLPMetricExporter())
    return SdkMeterProvider(resource=_resource(), metric_readers=[reader])
