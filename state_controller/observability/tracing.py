"""OpenTelemetry traces: one span per reconcile, its provisioner calls and API writes as
children, transitions as span events.

Exporters: ``none`` (default), ``otlp`` (OTLP over HTTP, configured by the
standard variables: ``OTEL_EXPORTER_OTLP_ENDPOINT`` or
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, ``OTEL_EXPORTER_OTLP_HEADERS``,
``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_TRACES_SAMPLER``…),
``console`` (JSON on stderr) and ``memory`` (kept in-process, for tests).
``OTEL_TRACES_EXPORTER`` chooses one when ``--trace`` is not given. Spans carry
host keys, states and results, never credentials.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Literal, cast, get_args

from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SimpleSpanProcessor,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NoOpTracer, Tracer

Exporter = Literal["none", "otlp", "console", "memory"]
CHOICES: tuple[str, ...] = get_args(Exporter)
SERVICE = "hoststate-controller"


def exporter_from_env() -> Exporter:
    """``OTEL_TRACES_EXPORTER`` (the standard variable), or ``none`` when unset."""
    chosen = os.environ.get("OTEL_TRACES_EXPORTER", "").strip().lower() or "none"
    if chosen not in CHOICES or chosen == "memory":
        raise ValueError(
            f"OTEL_TRACES_EXPORTER={chosen!r}: this controller exports traces with "
            "otlp, console or none"
        )
    return cast(Exporter, chosen)


@dataclass(frozen=True)
class Tracing:
    tracer: Tracer
    spans: InMemorySpanExporter | None  # with the ``memory`` exporter
    provider: TracerProvider | None  # None: tracing is off

    def shutdown(self) -> None:
        """Send what is buffered and stop (an OTLP export is batched)."""
        if self.provider is not None:
            self.provider.shutdown()


def make_tracing(exporter: Exporter = "none") -> Tracing:
    if exporter == "none":
        return Tracing(NoOpTracer(), None, None)
    resource = Resource.create()  # OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: SERVICE}))
    provider = TracerProvider(resource=resource)
    memory = None
    processor: SpanProcessor
    if exporter == "otlp":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        processor = BatchSpanProcessor(OTLPSpanExporter())
    elif exporter == "console":
        processor = SimpleSpanProcessor(ConsoleSpanExporter(out=sys.stderr))
    else:
        memory = InMemorySpanExporter()
        processor = SimpleSpanProcessor(memory)
    provider.add_span_processor(processor)
    return Tracing(provider.get_tracer("hoststate"), memory, provider)
