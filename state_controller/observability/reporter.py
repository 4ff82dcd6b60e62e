"""The runtime's :class:`~state_controller.runtime.reporting.Reporter`, made real:
metrics, Kubernetes Events and trace spans from the same book records."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import NoOpTracer, Tracer

from ..books.book import Book
from ..books.records import Transition
from .events import EventRecorder, event_for
from .metrics import Metrics

Obj = dict[str, Any]


class Observability:
    def __init__(
        self,
        metrics: Metrics,
        events: EventRecorder | None,
        tracer: Tracer,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.metrics = metrics
        self.events = events
        self.tracer = tracer
        self.tracing = not isinstance(tracer, NoOpTracer)
        self.clock = clock

    def reconcile_span(self, key: str) -> AbstractContextManager[Any]:
        if not self.tracing:
            return nullcontext()
        return self.tracer.start_as_current_span("reconcile", attributes={"hoststate.host": key})

    def transitions(self, host: Obj, book: Book, records: list[Transition]) -> None:
        span = trace.get_current_span()
        for record in records:
            self.metrics.transition(record)
            if record.recorded and self.tracing:
                span.add_event(
                    "transition",
                    {
                        "from": record.from_state,
                        "to": record.to_state,
                        "reason": record.reason,
                        "seq": record.seq,
                    },
                )
            described = event_for(record)
            if described is not None:
                self.event(host, *described)

    def stuck(self, host: Obj, book: Book, message: str) -> None:
        self.metrics.child(self.metrics.stuck_total, book.cursor.state.value).inc()
        self.event(host, "Warning", "Stuck", message)

    def event(self, host: Obj, type_: str, reason: str, message: str) -> None:
        self.metrics.child(self.metrics.events, type_, reason).inc()
        if self.events is not None:
            self.events.emit(host, type_, reason, message, self.clock())

    def status_write(self, resource: str, outcome: str) -> None:
        self.metrics.child(self.metrics.status_writes, resource, outcome).inc()

    def reconciled(self, result: str, seconds: float) -> None:
        self.metrics.reconciled(result, seconds)
