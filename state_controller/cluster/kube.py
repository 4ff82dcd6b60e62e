"""The Cluster interface over a real Kubernetes API server.

Built on the official ``kubernetes`` client: its configuration loading
(kubeconfig or in-cluster), authentication, TLS and connection pool
(``ApiClient``), and its line iterator for watch streams. Requests and
responses stay raw JSON, parsed with orjson, rather than going through the
client's typed models: the controller works on plain dicts, and decoding
every watch event into generated model classes would cost more CPU than the
rest of a reconcile.

Watches ask for bookmarks and a server-side timeout (so connections renew),
and an expired resourceVersion surfaces as :class:`Gone`, on which the
informer lists again.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote, urlencode

import orjson
from kubernetes import client, config
from kubernetes.watch.watch import iter_resp_lines

from ..api.objects import Obj
from .interface import (
    PODS,
    AlreadyExists,
    ApiError,
    Conflict,
    FieldCause,
    Gone,
    Invalid,
    NotFound,
    Resource,
    WatchEvent,
    metadata_of,
)

log = logging.getLogger(__name__)

FIELD_MANAGER = "hoststate-controller"
REQUEST_TIMEOUT = (10.0, 60.0)  # connect, read


def load_api_client(kubeconfig: str | None = None, context: str | None = None) -> client.ApiClient:
    """From a kubeconfig when given (or found), else the pod's service account."""
    configuration = client.Configuration()
    try:
        config.load_kube_config(
            config_file=kubeconfig, context=context, client_configuration=configuration
        )
    except (config.ConfigException, FileNotFoundError, TypeError):
        if kubeconfig:
            raise
        config.load_incluster_config(client_configuration=configuration)
    return client.ApiClient(configuration)


def _error(status: int, body: bytes) -> ApiError:
    try:
        parsed = orjson.loads(body)
    except orjson.JSONDecodeError:
        parsed = {}
    message = str(parsed.get("message") or body[:500].decode(errors="replace"))
    reason = parsed.get("reason", "")
    if status == 404:
        return NotFound(message)
    if status == 409:
        return AlreadyExists(message) if reason == "AlreadyExists" else Conflict(message)
    if status == 410:
        return Gone(message)
    if status == 422:
        causes = [
            FieldCause(str(c.get("field", "")), str(c.get("message", "")))
            for c in (parsed.get("details") or {}).get("causes") or []
        ]
        return Invalid(message, causes)
    error = ApiError(message)
    error.code = status
    error.reason = reason or "Error"
    return error


# metadata-only answers (``metadata_only``): kube-apiserver sends PartialObjectMetadata
# objects, as client-go's metadata informers ask for them
PARTIAL = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
PARTIAL_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"


class KubeWatch:
    """One watch request; iterating yields events until the server ends it or stop()."""

    def __init__(self, cluster: KubeCluster, url: str, accept: str = "application/json") -> None:
        self._cluster = cluster
        self._url = url
        self._accept = accept
        self._response: Any = None
        self._stopped = threading.Event()
        self._lock = threading.Lock()  # stop() and the start of iteration, in either order

    def __iter__(self) -> Iterator[WatchEvent]:
        if self._stopped.is_set():
            return
        response = self._cluster._send("GET", self._url, accept=self._accept, stream=True)
        with self._lock:
            self._response = response
            stopped = self._stopped.is_set()
        if stopped:  # stopped while the request was on its way: nobody else will shut it
            response.shutdown()
            response.release_conn()
            return
        try:
            for line in iter_resp_lines(response):
                if self._stopped.is_set():
                    return
                if not line:
                    continue
                event = orjson.loads(line)
                kind = event.get("type")
                obj = event.get("object") or {}
                if kind == "ERROR":
                    raise _error(int(obj.get("code") or 500), orjson.dumps(obj))
                yield WatchEvent(kind, obj)
        except Exception:
            if self._stopped.is_set():
                return
            raise
        finally:
            response.release_conn()

    def stop(self) -> None:
        with self._lock:
            self._stopped.set()
            response = self._response
        if response is not None:
            try:
                response.shutdown()  # unblocks a reader in another thread
            except Exception:  # already closed
                log.debug("watch response already closed", exc_info=True)


class KubeCluster:
    """Talks to one API server. Thread-safe (the client's connection pool is)."""

    def __init__(self, api: client.ApiClient) -> None:
        # urllib3 retries a refused connection and warns each time (hundreds of lines in a 15 s
        # kube-apiserver restart); the controller logs the outage once, where it counts
        # the calls (observability/api_client.py). Left alone when configured already.
        retries = logging.getLogger("urllib3.connectionpool")
        if retries.level == logging.NOTSET:
            retries.setLevel(logging.ERROR)
        self.api = api
        self.host = api.configuration.host.rstrip("/")
        self._stats_lock = threading.Lock()
        self._stats = dict.fromkeys(
            ("create", "update", "update_status", "patch", "delete", "get", "list", "watch"), 0
        )
        self._writes: dict[tuple[str, str], int] = {}  # (verb, resource plural) -> writes

    @classmethod
    def from_kubeconfig(
        cls, kubeconfig: str | None = None, context: str | None = None
    ) -> KubeCluster:
        return cls(load_api_client(kubeconfig, context))

    @property
    def stats(self) -> dict[str, int]:
        """Requests made, by verb (for tests and benchmarks)."""
        with self._stats_lock:
            return dict(self._stats)

    @property
    def writes(self) -> dict[tuple[str, str], int]:
        """Writes made, by verb and resource (plural)."""
        with self._stats_lock:
            return dict(self._writes)

    def close(self) -> None:
        self.api.close()

    # -- paths ------------------------------------------------------------------------------

    @staticmethod
    def path(
        resource: Resource, namespace: str | None, name: str | None = None, sub: str = ""
    ) -> str:
        base = f"/apis/{resource.group}/{resource.version}" if resource.group else "/api/v1"
        if resource.namespaced and namespace:
            base += f"/namespaces/{quote(namespace)}"
        base += f"/{resource.plural}"
        if name is not None:
            base += f"/{quote(name)}"
        if sub:
            base += f"/{sub}"
        return base

    # -- transport --------------------------------------------------------------------------

    def _count(self, verb: str, resource: Resource | None = None) -> None:
        with self._stats_lock:
            self._stats[verb] += 1
            if resource is not None:
                key = (verb, resource.plural)
                self._writes[key] = self._writes.get(key, 0) + 1

    def _send(
        self,
        method: str,
        path: str,
        *,
        body: Obj | None = None,
        query: dict[str, str] | None = None,
        content_type: str = "application/json",
        accept: str = "application/json",
        stream: bool = False,
    ) -> Any:
        url = self.host + path + (f"?{urlencode(query)}" if query else "")
        headers = {"Accept": accept, "Content-Type": content_type}
        self.api.update_params_for_auth(headers, None, ["BearerToken"], method, url, body)
        response = self.api.rest_client.request(
            method,
            url,
            headers=headers,
            body=body,
            _request_timeout=None if stream else REQUEST_TIMEOUT,
        )
        raw = response.response
        if not 200 <= raw.status < 300:
            data = raw.data
            raw.release_conn()
            raise _error(raw.status, data)
        return raw

    def _json(self, method: str, path: str, **kwargs: Any) -> Obj:
        raw = self._send(method, path, **kwargs)
        try:
            return orjson.loads(raw.data)  # type: ignore[no-any-return]
        finally:
            raw.release_conn()

    # -- Cluster ----------------------------------------------------------------------------

    def get(self, resource: Resource, namespace: str | None, name: str) -> Obj:
        self._count("get")
        return self._with_kind(resource, self._json("GET", self.path(resource, namespace, name)))

    def list(
        self,
        resource: Resource,
        namespace: str | None = None,
        field_selector: str = "",
        label_selector: str = "",
        metadata_only: bool = False,
    ) -> tuple[list[Obj], str]:
        self._count("list")
        items: list[Obj] = []
        first = _selectors(field_selector, label_selector)
        query: dict[str, str] = {"limit": "500", **first}
        accept = PARTIAL_LIST if metadata_only else "application/json"
        while True:
            page = self._json("GET", self.path(resource, namespace), query=query, accept=accept)
            found = page.get("items") or []
            items.extend(
                map(metadata_of, found)
                if metadata_only
                else (self._with_kind(resource, o) for o in found)
            )
            meta = page.get("metadata") or {}
            if not meta.get("continue"):
                return items, str(meta.get("resourceVersion", ""))
            query = {"limit": "500", "continue": meta["continue"], **first}

    def watch(
        self,
        resource: Resource,
        namespace: str | None = None,
        resource_version: str = "",
        field_selector: str = "",
        label_selector: str = "",
        metadata_only: bool = False,
    ) -> KubeWatch:
        self._count("watch")
        query = {
            "watch": "true",
            "allowWatchBookmarks": "true",
            # renew connections every few minutes, spread so a fleet of watches does not align
            "timeoutSeconds": str(random.randint(240, 360)),
        }
        if resource_version:
            query["resourceVersion"] = resource_version
        query.update(_selectors(field_selector, label_selector))
        url = self.path(resource, namespace) + "?" + urlencode(query)
        return KubeWatch(self, url, PARTIAL if metadata_only else "application/json")

    def create(self, resource: Resource, obj: Obj) -> Obj:
        self._count("create", resource)
        body = self._with_kind(resource, dict(obj))
        namespace = body.get("metadata", {}).get("namespace")
        return self._json(
            "POST",
            self.path(resource, namespace),
            body=body,
            query={"fieldManager": FIELD_MANAGER},
        )

    def update(self, resource: Resource, obj: Obj) -> Obj:
        self._count("update", resource)
        meta = obj["metadata"]
        return self._json(
            "PUT",
            self.path(resource, meta.get("namespace"), meta["name"]),
            body=self._with_kind(resource, dict(obj)),
            query={"fieldManager": FIELD_MANAGER},
        )

    def update_status(self, resource: Resource, obj: Obj) -> Obj:
        self._count("update_status", resource)
        meta = obj["metadata"]
        return self._json(
            "PUT",
            self.path(resource, meta.get("namespace"), meta["name"], "status"),
            body=self._with_kind(resource, dict(obj)),
            query={"fieldManager": FIELD_MANAGER},
        )

    def patch(self, resource: Resource, namespace: str | None, name: str, patch: Obj) -> Obj:
        self._count("patch", resource)
        return self._json(
            "PATCH",
            self.path(resource, namespace, name),
            body=patch,
            query={"fieldManager": FIELD_MANAGER},
            content_type="application/merge-patch+json",
        )

    def evict(self, namespace: str, pod: str) -> bool:
        self._count("create", PODS)
        body = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": pod, "namespace": namespace},
        }
        path = f"/api/v1/namespaces/{quote(namespace, safe='')}/pods/{quote(pod, safe='')}/eviction"
        try:
            self._json("POST", path, body=body)
        except NotFound:
            return True  # gone already
        except ApiError as error:
            if error.code == 429:  # a PodDisruptionBudget allows no disruption now
                return False
            raise
        return True

    def delete(self, resource: Resource, namespace: str | None, name: str) -> None:
        self._count("delete", resource)
        self._json("DELETE", self.path(resource, namespace, name))

    @staticmethod
    def _with_kind(resource: Resource, obj: Obj) -> Obj:
        """List items come without apiVersion/kind; the controller expects them."""
        obj.setdefault("apiVersion", resource.api_version)
        obj.setdefault("kind", resource.kind)
        return obj


def _selectors(field_selector: str, label_selector: str) -> dict[str, str]:
    """The query parameters of a list's or watch's selectors (none when empty)."""
    query: dict[str, str] = {}
    if field_selector:
        query["fieldSelector"] = field_selector
    if label_selector:
        query["labelSelector"] = label_selector
    return query
