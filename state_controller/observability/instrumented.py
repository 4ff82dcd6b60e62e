"""A provisioner wrapper that measures every call (count, latency, span)."""

from __future__ import annotations

import time
from collections.abc import Callable

from opentelemetry.trace import NoOpTracer, Status, StatusCode, Tracer

from ..health.summary import ProvisionerSeen
from ..provisioning.provisioner import (
    HealthWatched,
    HistoryKept,
    HostView,
    Provisioner,
    Versioned,
)
from ..provisioning.results import HistoryRead, Outcome, Result
from ..runtime.machinery.outages import Outage
from ..servicing.plan import ServicePlan
from .metrics import Metrics

OPERATIONS = (
    "register", "inspect", "prepare", "provision", "deprovision",
    "adopt", "power", "reboot", "detach", "delete", "firmware", "service",
)  # fmt: skip


FAILURES = frozenset({Outcome.FAILED, Outcome.TRANSIENT})  # a span with an error status


class InstrumentedProvisioner:
    def __init__(self, inner: Provisioner, metrics: Metrics, tracer: Tracer) -> None:
        self.inner = inner
        self.backend = inner.backend
        self.metrics = metrics
        self.tracer = tracer
        self.tracing = not isinstance(tracer, NoOpTracer)
        self.outage = Outage(f"provisioner {self.backend}")
        for operation in OPERATIONS:  # every outcome starts at 0: failure rates are never "no data"
            for outcome in Outcome:
                metrics.child(
                    metrics.hosts.provisioner_requests, self.backend, operation, outcome.value
                )

    @property
    def health_every(self) -> float:
        """The wrapped backend's (:class:`HealthWatched`); 0 when it reads no health."""
        return self.inner.health_every if isinstance(self.inner, HealthWatched) else 0.0

    @property
    def history_every(self) -> float:
        """The wrapped backend's (:class:`HistoryKept`); 0 when it keeps no history."""
        return self.inner.history_every if isinstance(self.inner, HistoryKept) else 0.0

    def history(self, host: HostView, mark: str) -> HistoryRead | None:
        return self.inner.history(host, mark) if isinstance(self.inner, HistoryKept) else None

    def seen(self) -> ProvisionerSeen:
        """The provisioner as this replica's calls found it, for the controller's status."""
        outage = self.outage
        version = self.inner.microversion if isinstance(self.inner, Versioned) else None
        return ProvisionerSeen(
            backend=self.backend,
            api_version=version or "",
            reachable=not outage.down,
            outage_started=outage.started_at,
            outage_ended=outage.ended_at,
            outage_message=outage.message,
        )

    def _call(self, operation: str, host: HostView, call: Callable[[], Result]) -> Result:
        started = time.perf_counter()
        if self.tracing:
            with self.tracer.start_as_current_span(
                f"provisioner.{operation}", attributes={"hoststate.host": host.key}
            ) as span:
                result = call()
                span.set_attribute("hoststate.result", result.outcome.value)
                if result.outcome in FAILURES:
                    text = f"{result.outcome.value}: {result.message}"[:500]
                    span.set_status(Status(StatusCode.ERROR, text))
        else:
            result = call()
        elapsed = time.perf_counter() - started
        if result.outcome == Outcome.TRANSIENT and not result.held:  # could not be reached
            self.outage.failed(result.message or "no answer")
        else:
            self.outage.recovered()
        m = self.metrics
        m.child(m.hosts.provisioner_requests, self.backend, operation, result.outcome.value).inc()
        m.child(m.hosts.provisioner_latency, self.backend, operation).observe(elapsed)
        return result

    def register(self, host: HostView, *, credentials_changed: bool) -> Result:
        return self._call(
            "register",
            host,
            lambda: self.inner.register(host, credentials_changed=credentials_changed),
        )

    def inspect(self, host: HostView, *, restart: bool) -> Result:
        return self._call("inspect", host, lambda: self.inner.inspect(host, restart=restart))

    def prepare(self, host: HostView) -> Result:
        return self._call("prepare", host, lambda: self.inner.prepare(host))

    def provision(self, host: HostView) -> Result:
        return self._call("provision", host, lambda: self.inner.provision(host))

    def deprovision(self, host: HostView) -> Result:
        return self._call("deprovision", host, lambda: self.inner.deprovision(host))

    def adopt(self, host: HostView) -> Result:
        return self._call("adopt", host, lambda: self.inner.adopt(host))

    def power(self, host: HostView, *, on: bool, soft: bool = False) -> Result:
        return self._call("power", host, lambda: self.inner.power(host, on=on, soft=soft))

    def reboot(self, host: HostView, *, soft: bool = False) -> Result:
        return self._call("reboot", host, lambda: self.inner.reboot(host, soft=soft))

    def firmware(self, host: HostView) -> Result:
        return self._call("firmware", host, lambda: self.inner.firmware(host))

    def service(self, host: HostView, plan: ServicePlan, *, started: bool) -> Result:
        return self._call("service", host, lambda: self.inner.service(host, plan, started=started))

    def detach(self, host: HostView) -> Result:
        return self._call("detach", host, lambda: self.inner.detach(host))

    def delete(self, host: HostView) -> Result:
        return self._call("delete", host, lambda: self.inner.delete(host))
