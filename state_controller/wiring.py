"""Assemble a controller with everything it reports through, the one way every entry
point does it (demo, run, benchmarks, tests): metrics, Events, traces."""

from __future__ import annotations

import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from .cluster.interface import Cluster
from .cluster.kube import KubeCluster
from .observability.api_client import InstrumentedCluster
from .observability.events import EventRecorder
from .observability.instrumented import InstrumentedProvisioner
from .observability.metrics import Metrics
from .observability.reporter import Observability
from .observability.tracing import Exporter, Tracing, make_tracing
from .provisioning.provisioner import Provisioner
from .runtime.config import ControllerConfig
from .runtime.controller import HostController


def api_host(cluster: Cluster) -> str:
    """The ``host`` label of the API client families: the API server's address."""
    if isinstance(cluster, KubeCluster):
        host = str(cluster.host)
        return urlsplit(host).netloc or host
    return "embedded"


@dataclass(frozen=True)
class Observed:
    controller: HostController
    metrics: Metrics
    tracing: Tracing

    @property
    def spans(self) -> InMemorySpanExporter | None:
        """The finished spans, with trace="memory"."""
        return self.tracing.spans


def observed_controller(
    cluster: Cluster,
    provisioner: Provisioner,
    config: ControllerConfig,
    *,
    trace: Exporter = "none",
    mode_since: float | None = None,
) -> Observed:
    """``mode_since``: when the controller began to run in ``config.mode`` (default: now)."""
    metrics = Metrics()
    metrics.running_in(config.mode, time.time() if mode_since is None else mode_since)
    tracing = make_tracing(trace)
    tracer = tracing.tracer
    cluster = InstrumentedCluster(cluster, metrics, api_host(cluster), tracer)
    instrumented = InstrumentedProvisioner(provisioner, metrics, tracer)
    controller = HostController(
        cluster,
        instrumented,
        config=config,
        reporter=Observability(metrics, EventRecorder(cluster), tracer),
        queue_metrics=metrics.controller_runtime,
        provisioner_seen=instrumented.seen,
    )
    if mode_since is not None:
        controller.self_status.mode_since = mode_since
    metrics.watch_books(lambda: controller.books, config.stuck)
    metrics.watch_pools(controller.pool_reconciler.pools.items)
    metrics.watch_durations(controller.learned)
    metrics.watch_controller(lambda: controller.self_status.status)
    metrics.watch_workers(
        config.workers,
        lambda kind: controller.workers.active[kind],
        controller.queue.unfinished_work_seconds,
        controller.queue.longest_running_seconds,
    )
    return Observed(controller, metrics, tracing)
