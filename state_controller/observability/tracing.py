"""OpenTelemetry traces: one span per reconcile, transitions as span events.

Exporters: ``none`` (default), ``console`` (JSON lines on stderr) and
``memory`` (kept in-process, for tests). Spans carry host keys and states,
never credentials.
"""

from __future__ import annotations

import sys
from typing import Literal

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NoOpTracer, Tracer

Exporter = Literal["none", "console", "memory"]


def make_tracer(exporter: Exporter = "none") -> tuple[Tracer, InMemorySpanExporter | None]:
    if exporter == "none":
        return NoOpTracer(), None
    provider = TracerProvider(resource=Resource.create({"service.name": "hoststate-controller"}))
    memory = None
    if exporter == "console":
        provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=sys.stderr)))
    else:
        memory = InMemorySpanExporter()
        provider.add_span_processor(SimpleSpanProcessor(memory))
    return provider.get_tracer("hoststate"), memory
