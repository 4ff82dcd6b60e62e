"""client-go's ``rest_client_*`` families, for every call the controller makes to its API.

A wrapper around any :class:`~state_controller.cluster.interface.Cluster` (the
real API server or the embedded store), as :class:`InstrumentedProvisioner`
is around a provisioner: one place counts every call, whichever cluster it
goes to. The labels are client-go's: ``method`` and ``verb`` are the HTTP
method, ``code`` the HTTP status (``<error>`` when no answer came), ``host``
the API server's address (``embedded`` for the in-process store). A list that
pages counts once; a watch counts when it is opened. Writes are spans too, children
of the reconcile that makes them, with the error when one fails.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from opentelemetry.trace import NoOpTracer, SpanKind, Status, StatusCode, Tracer

from ..api.objects import Obj
from ..cluster.interface import PODS, ApiError, Cluster, Resource, Watch, key_of, unreachable
from ..runtime.machinery.outages import Outage
from .metrics import Metrics

T = TypeVar("T")
NO_ANSWER = "<error>"  # client-go's code label when the request got no HTTP answer


class InstrumentedCluster:
    def __init__(
        self,
        inner: Cluster,
        metrics: Metrics,
        host: str,
        tracer: Tracer | None = None,
    ) -> None:
        self.inner = inner
        self.metrics = metrics
        self.host = host
        self.outage = Outage(f"kube-apiserver {host}")
        self.tracer = tracer if tracer is not None else NoOpTracer()
        self.tracing = not isinstance(self.tracer, NoOpTracer)

    def _call(self, method: str, ok: str, call: Callable[[], T], *, answers: bool = True) -> T:
        """Count ``call``; ``answers``: its success means the server answered (opening a
        watch does not: the stream connects when it is read)."""
        started = time.perf_counter()
        code = ok
        try:
            answer = call()
        except ApiError as err:
            code = str(err.code)
            if unreachable(err):
                self.outage.failed(err)
            else:
                self.outage.recovered()  # it answered
            raise
        except Exception as err:
            code = NO_ANSWER
            self.outage.failed(err)
            raise
        else:
            if answers:
                self.outage.recovered()
            return answer
        finally:
            m = self.metrics
            m.child(m.client_go.rest_requests, code, self.host, method).inc()
            m.child(m.client_go.rest_latency, method, self.host).observe(
                time.perf_counter() - started
            )

    def _write(
        self, verb: str, method: str, ok: str, resource: Resource, key: str, call: Callable[[], T]
    ) -> T:
        """A write, as a child span of the reconcile (a status write says so in its name)."""
        if not self.tracing:
            return self._call(method, ok, call)
        with self.tracer.start_as_current_span(
            f"{verb} {resource.plural}",
            kind=SpanKind.CLIENT,
            attributes={"hoststate.object": key, "http.request.method": method},
            record_exception=False,
        ) as span:
            try:
                return self._call(method, ok, call)
            except ApiError as err:
                span.set_attribute("http.response.status_code", err.code)
                span.set_status(Status(StatusCode.ERROR, f"{err.reason}: {err.message}"[:500]))
                raise
            except Exception as err:
                span.set_status(Status(StatusCode.ERROR, f"no answer: {type(err).__name__}"))
                raise

    def get(self, resource: Resource, namespace: str | None, name: str) -> Obj:
        return self._call("GET", "200", lambda: self.inner.get(resource, namespace, name))

    def list(
        self,
        resource: Resource,
        namespace: str | None = None,
        field_selector: str = "",
        label_selector: str = "",
        metadata_only: bool = False,
    ) -> tuple[list[Obj], str]:
        return self._call(
            "GET",
            "200",
            lambda: self.inner.list(
                resource, namespace, field_selector, label_selector, metadata_only=metadata_only
            ),
        )

    def watch(
        self,
        resource: Resource,
        namespace: str | None = None,
        resource_version: str = "",
        field_selector: str = "",
        label_selector: str = "",
        metadata_only: bool = False,
    ) -> Watch:
        return self._call(
            "GET",
            "200",
            lambda: self.inner.watch(
                resource,
                namespace,
                resource_version,
                field_selector,
                label_selector,
                metadata_only=metadata_only,
            ),
            answers=False,
        )

    def create(self, resource: Resource, obj: Obj) -> Obj:
        return self._write(
            "create", "POST", "201", resource, _key(obj), lambda: self.inner.create(resource, obj)
        )

    def update(self, resource: Resource, obj: Obj) -> Obj:
        return self._write(
            "update", "PUT", "200", resource, _key(obj), lambda: self.inner.update(resource, obj)
        )

    def update_status(self, resource: Resource, obj: Obj) -> Obj:
        return self._write(
            "status write",
            "PUT",
            "200",
            resource,
            _key(obj),
            lambda: self.inner.update_status(resource, obj),
        )

    def patch(self, resource: Resource, namespace: str | None, name: str, patch: Obj) -> Obj:
        return self._write(
            "patch",
            "PATCH",
            "200",
            resource,
            key_of(namespace, name),
            lambda: self.inner.patch(resource, namespace, name, patch),
        )

    def delete(self, resource: Resource, namespace: str | None, name: str) -> None:
        self._write(
            "delete",
            "DELETE",
            "200",
            resource,
            key_of(namespace, name),
            lambda: self.inner.delete(resource, namespace, name),
        )

    def evict(self, namespace: str, pod: str) -> bool:
        evicted: bool = self._write(
            "eviction",
            "POST",
            "201",
            PODS,
            key_of(namespace, pod),
            lambda: self.inner.evict(namespace, pod),
        )
        return evicted


def _key(obj: Obj) -> str:
    """The object's key; an Event being created has only its name's prefix."""
    meta = obj.get("metadata") or {}
    return key_of(meta.get("namespace"), meta.get("name") or meta.get("generateName", ""))
