"""The host controller: informers feed a work queue, workers reconcile hosts.

Like a controller-runtime manager with one controller: it waits until every
cache is synced before the first reconcile (a book must never be opened
before the HostState that holds its history is in the cache), runs N workers
that never process one host twice at a time, retries errors with per-host
backoff, and arms one timer per host for stuck detection instead of sweeping.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from ..api.objects import Obj
from ..books.book import Book
from ..cluster.interface import HOSTS, HOSTSTATES, SECRETS, Cluster
from ..provisioning.machine import HostMachine
from ..provisioning.provisioner import Provisioner
from .config import ControllerConfig
from .host_reconciler import HostReconciler, ReconcileResult
from .informer import InformerSet
from .reporting import NoReporter, Reporter
from .workqueue import QueueMetricsSink, WorkQueue

log = logging.getLogger(__name__)

CONTROLLER_NAME = "host"


class HostController:
    def __init__(
        self,
        cluster: Cluster,
        provisioner: Provisioner,
        *,
        config: ControllerConfig | None = None,
        reporter: Reporter | None = None,
        queue_metrics: QueueMetricsSink | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config or ControllerConfig()
        self.reporter = reporter or NoReporter()
        self.cluster = cluster
        ns = self.config.namespaces
        self.queue: WorkQueue[str] = WorkQueue(sink=queue_metrics)
        self.hosts = InformerSet(cluster, HOSTS, ns, handlers=[self._on_host])
        self.hoststates = InformerSet(cluster, HOSTSTATES, ns, handlers=[self._on_hoststate])
        self.secrets = InformerSet(cluster, SECRETS, ns, handlers=[self._on_secret])
        self.reconciler = HostReconciler(
            cluster,
            hosts=self.hosts,
            hoststates=self.hoststates,
            secrets=self.secrets,
            machine=HostMachine(provisioner, backoff=self.config.backoff),
            config=self.config,
            reporter=self.reporter,
            clock=clock,
        )
        self._by_secret: dict[str, set[str]] = {}  # Secret key -> Host keys
        self._secret_of_host: dict[str, str] = {}  # Host key -> Secret key ("" for none)
        self._index_lock = threading.Lock()
        self._workers: list[threading.Thread] = []
        self.active_workers = 0
        self.reconciles = 0
        self._counts_lock = threading.Lock()  # += on an attribute is not atomic across threads
        self.synced = False

    @property
    def books(self) -> dict[str, Book]:
        return self.reconciler.books

    # -- lifecycle ----------------------------------------------------------------------

    def start(self, *, sync_timeout: float = 60.0) -> None:
        self.start_caches(sync_timeout=sync_timeout)
        self.start_workers()

    def start_caches(self, *, sync_timeout: float = 60.0) -> None:
        """Fill the caches (a standby replica does this too, to take over at once)."""
        for informer in (self.secrets, self.hoststates, self.hosts):
            informer.start()
        for informer in (self.secrets, self.hoststates, self.hosts):
            if not informer.wait_synced(sync_timeout):
                raise TimeoutError(f"cache of {informer.resource} did not sync in {sync_timeout}s")
        self.synced = True

    def start_workers(self) -> None:
        for index in range(self.config.workers):
            worker = threading.Thread(target=self._work, name=f"worker-{index}", daemon=True)
            worker.start()
            self._workers.append(worker)

    def stop(self) -> None:
        self.queue.shutdown()
        for worker in self._workers:
            worker.join(timeout=10)
        for informer in (self.hosts, self.hoststates, self.secrets):
            informer.stop()

    def __enter__(self) -> HostController:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- event handlers: they only enqueue ----------------------------------------------

    def _on_host(self, key: str, host: Obj | None) -> None:
        self._index_secret(key, _secret_of(host))
        self.queue.add(key)

    def _on_hoststate(self, key: str, state: Obj | None) -> None:
        if key in self._secret_of_host:  # a known host
            self.queue.add(key)

    def _on_secret(self, key: str, secret: Obj | None) -> None:
        with self._index_lock:
            hosts = list(self._by_secret.get(key, ()))
        for host in hosts:
            self.queue.add(host)

    def _index_secret(self, key: str, secret: str | None) -> None:
        with self._index_lock:
            before = self._secret_of_host.get(key, "")
            if before == secret:
                return
            if before:
                self._by_secret.get(before, set()).discard(key)
            if secret is None:
                self._secret_of_host.pop(key, None)
                return
            self._secret_of_host[key] = secret
            if secret:
                self._by_secret.setdefault(secret, set()).add(key)

    # -- workers ------------------------------------------------------------------------

    def _work(self) -> None:
        while True:
            key = self.queue.get()
            if key is None:
                return
            with self._counts_lock:
                self.active_workers += 1
            started = time.perf_counter()
            try:
                with self.reporter.reconcile_span(key):
                    outcome = self.reconciler.reconcile(key)
            except Exception:
                log.exception("reconcile of host %s failed; retrying with backoff", key)
                self.queue.add_rate_limited(key)
                result = "error"
            else:
                result = self._requeue(key, outcome)
            finally:
                with self._counts_lock:
                    self.active_workers -= 1
                    self.reconciles += 1
                self.queue.done(key)
            self.reporter.reconciled(result, time.perf_counter() - started)

    def _requeue(self, key: str, outcome: ReconcileResult) -> str:
        result = "success"
        if outcome.rate_limited:
            self.queue.add_rate_limited(key)
            result = "requeue"
        else:
            self.queue.forget(key)
            if outcome.requeue_after is not None:
                self.queue.add_after(key, outcome.requeue_after)
                result = "requeue" if outcome.requeue_after <= 0 else "requeue_after"
        if outcome.wake_after is not None:
            self.queue.add_after(key, outcome.wake_after + 0.001)
        return result

    # -- waiting (tests, demo) ----------------------------------------------------------

    def idle(self) -> bool:
        return len(self.queue) == 0 and self.active_workers == 0


def _secret_of(host: Obj | None) -> str | None:
    """The Secret a Host names: None for a deleted Host, "" for one that names none."""
    if host is None:
        return None
    spec = host.get("spec")
    bmc = spec.get("bmc") if isinstance(spec, dict) else None
    if not isinstance(bmc, dict) or not bmc.get("credentialsName"):
        return ""
    return f"{host['metadata'].get('namespace', '')}/{bmc['credentialsName']}"
