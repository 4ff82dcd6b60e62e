"""The runtime's :class:`~state_controller.runtime.reporting.Reporter`, made real:
metrics, Kubernetes Events and trace spans, all read from the book's journal."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import NoOpTracer, Tracer

from ..api.objects import Obj
from ..api.states import ProvisioningState
from ..api.timefmt import parse_rfc3339
from ..books.journal import Entry, Notice
from .events import EventRecorder, event_for
from .metrics import Metrics

PROVISIONED = ProvisioningState.PROVISIONED.value
PROVISIONING = ProvisioningState.PROVISIONING.value


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

    def report(self, host: Obj, entries: Sequence[Entry]) -> None:
        span = trace.get_current_span() if self.tracing else None
        for entry in entries:
            if isinstance(entry, Notice):
                self.metrics.notice(entry)
            else:
                self.metrics.transition(entry)
                if (
                    entry.recorded
                    and entry.to_state == PROVISIONED
                    and entry.from_state == PROVISIONING
                ):
                    created = parse_rfc3339(host.get("metadata", {}).get("creationTimestamp"))
                    if created is not None and entry.at >= created:
                        self.metrics.time_to_provisioned.observe(entry.at - created)
                if entry.recorded and span is not None:
                    span.add_event(
                        "transition",
                        {
                            "from": entry.from_state,
                            "to": entry.to_state,
                            "reason": entry.reason,
                            "seq": entry.seq,
                        },
                    )
            described = event_for(entry)
            if described is not None:
                self._emit(host, *described)

    def _emit(self, host: Obj, type_: str, reason: str, message: str) -> None:
        self.metrics.child(self.metrics.events, type_, reason).inc()
        if self.events is not None:
            self.events.emit(host, type_, reason, message, self.clock())

    def status_write(self, resource: str, outcome: str) -> None:
        self.metrics.child(self.metrics.status_writes, resource, outcome).inc()

    def reconciled(self, result: str, seconds: float) -> None:
        self.metrics.reconciled(result, seconds)
