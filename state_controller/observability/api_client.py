"""client-go's ``rest_client_*`` families, for every call the controller makes to its API.

A wrapper around any :class:`~state_controller.cluster.interface.Cluster` (the
real API server or the embedded store), as :class:`InstrumentedProvisioner`
is around a provisioner: one place counts every call, whichever cluster it
goes to. The labels are client-go's: ``method`` and ``verb`` are the HTTP
method, ``code`` the HTTP status (``<error>`` when no answer came), ``host``
the API server's address (``embedded`` for the in-process store). A list that
pages counts once; a watch counts when it is opened.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from ..api.objects import Obj
from ..cluster.interface import ApiError, Cluster, Resource, Watch
from .metrics import Metrics

T = TypeVar("T")
NO_ANSWER = "<error>"  # client-go's code label when the request got no HTTP answer


class InstrumentedCluster:
    def __init__(self, inner: Cluster, metrics: Metrics, host: str) -> None:
        self.inner = inner
        self.metrics = metrics
        self.host = host

    def _call(self, method: str, ok: str, call: Callable[[], T]) -> T:
        started = time.perf_counter()
        code = ok
        try:
            return call()
        except ApiError as err:
            code = str(err.code)
            raise
        except Exception:
            code = NO_ANSWER
            raise
        finally:
            m = self.metrics
            m.child(m.rest_requests, code, self.host, method).inc()
            m.child(m.rest_latency, method, self.host).observe(time.perf_counter() - started)

    def get(self, resource: Resource, namespace: str | None, name: str) -> Obj:
        return self._call("GET", "200", lambda: self.inner.get(resource, namespace, name))

    def list(
        self, resource: Resource, namespace: str | None = None, field_selector: str = ""
    ) -> tuple[list[Obj], str]:
        return self._call(
            "GET", "200", lambda: self.inner.list(resource, namespace, field_selector)
        )

    def watch(
        self,
        resource: Resource,
        namespace: str | None = None,
        resource_version: str = "",
        field_selector: str = "",
    ) -> Watch:
        return self._call(
            "GET",
            "200",
            lambda: self.inner.watch(resource, namespace, resource_version, field_selector),
        )

    def create(self, resource: Resource, obj: Obj) -> Obj:
        return self._call("POST", "201", lambda: self.inner.create(resource, obj))

    def update(self, resource: Resource, obj: Obj) -> Obj:
        return self._call("PUT", "200", lambda: self.inner.update(resource, obj))

    def update_status(self, resource: Resource, obj: Obj) -> Obj:
        return self._call("PUT", "200", lambda: self.inner.update_status(resource, obj))

    def patch(self, resource: Resource, namespace: str | None, name: str, patch: Obj) -> Obj:
        return self._call(
            "PATCH", "200", lambda: self.inner.patch(resource, namespace, name, patch)
        )

    def delete(self, resource: Resource, namespace: str | None, name: str) -> None:
        self._call("DELETE", "200", lambda: self.inner.delete(resource, namespace, name))
