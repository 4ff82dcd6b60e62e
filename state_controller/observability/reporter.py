"""The runtime's :class:`~state_controller.runtime.machinery.reporting.Reporter`, made real:
metrics, Kubernetes Events and trace spans, all read from the book's journal."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext

from opentelemetry import trace
from opentelemetry.trace import NoOpTracer, Span, Status, StatusCode, Tracer

from ..api.objects import Obj
from ..books.journal import Entry, Notice
from ..cluster.interface import object_key
from ..runtime.machinery.reporting import NO_SPAN, ReconcileSpan, Where
from .events import EventRecorder, event_for
from .metrics import Metrics

log = logging.getLogger("state_controller.hosts")


class TracedReconcile:
    """A reconcile's span: the host's state before and after, the result, the error."""

    recording = True

    def __init__(self, span: Span) -> None:
        self.span = span

    def finish(self, result: str, before: Where, after: Where, error: BaseException | None) -> None:
        span = self.span
        span.set_attribute("hoststate.result", result)
        for name, where in (("before", before), ("after", after)):
            span.set_attribute(f"hoststate.state.{name}", where.state)
            if where.step:
                span.set_attribute(f"hoststate.step.{name}", where.step)
        if error is not None:
            span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {error}"[:500]))


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

    def reconcile_span(self, key: str) -> AbstractContextManager[ReconcileSpan]:
        if not self.tracing:
            return nullcontext(NO_SPAN)  # the reconcile loop's common case: nothing made
        return self._traced(key)

    @contextmanager
    def _traced(self, key: str) -> Iterator[ReconcileSpan]:
        with self.tracer.start_as_current_span(
            "reconcile", attributes={"hoststate.host": key}, record_exception=False
        ) as span:
            yield TracedReconcile(span)

    def report(self, host: Obj, entries: Sequence[Entry]) -> None:
        span = trace.get_current_span() if self.tracing else None
        for entry in entries:
            if isinstance(entry, Notice):
                self.metrics.notice(entry)
            else:
                self.metrics.transition(entry, host.get("metadata", {}).get("creationTimestamp"))
                if entry.replayed:
                    continue  # a past record, for the counters only: told when it happened
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
                self._log(host, entry, *described)

    def _log(self, host: Obj, entry: Entry, type_: str, reason: str, message: str) -> None:
        """One line per thing a user is told: a failure (and a stuck host) as a warning,
        with the host, its state, the error type and the reason as fields."""
        level = logging.WARNING if type_ == "Warning" else logging.INFO
        if not log.isEnabledFor(level):
            return
        name = object_key(host)
        fields = {"host": name, "reason": reason}
        if isinstance(entry, Notice):
            fields["state"] = entry.state
        else:
            fields["state"] = entry.to_state
            if entry.error_type is not None:
                fields["error_type"] = entry.error_type.value
        log.log(level, "%s %s: %s", name, reason, message, extra=fields)

    def _emit(self, host: Obj, type_: str, reason: str, message: str) -> None:
        self.metrics.child(self.metrics.hosts.events, type_, reason).inc()
        if self.events is not None:
            self.events.emit(host, type_, reason, message, self.clock())

    def status_write(self, resource: str, outcome: str) -> None:
        self.metrics.child(self.metrics.hosts.status_writes, resource, outcome).inc()

    def reconciled(self, kind: str, result: str, seconds: float) -> None:
        exemplar = None
        if self.tracing:  # the reconcile's trace, on its bucket of the reconcile-time histogram
            context = trace.get_current_span().get_span_context()
            if context.is_valid and context.trace_flags.sampled:
                exemplar = {"trace_id": format(context.trace_id, "032x")}
        self.metrics.reconciled(kind, result, seconds, exemplar)
