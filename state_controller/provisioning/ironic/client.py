"""The HTTP client of Ironic's REST API: one request in, one :class:`Reply` or an answer out.

It negotiates the microversion on first use from ``GET /v1`` (the lower of the server's
maximum and :data:`PREFERRED_VERSION`; below :data:`MIN_VERSION` every call fails with a
message saying so), sends HTTP basic auth when configured, and reads the credentials
again after a 401 when they come from a mounted Secret, so that a rotated password needs
no restart. What cannot go on ends the operation with an :class:`~.faults.Answer`:

* ``409`` that passes (node locked by another operation, or a node between two
  provision states that may not be updated yet) → ``retry_after`` naming the lock
  holder, even where the caller allows other 409s;
* ``406``: the microversion is negotiated again; if the server now offers another one
  (an older Ironic took its place) → ``transient``, else the request is refused → ``failed``;
* ``503``, other ``5xx``, connection errors and timeouts → ``transient``
  ("Ironic at URL is unreachable/busy"): the host shows ``BackendUnavailable``;
* ``401``, ``403`` and other ``4xx`` → ``failed`` with a readable message, Ironic's
  ``faultstring`` in the details.

Why plain HTTP (urllib3, already a dependency through ``kubernetes``) and not
openstacksdk's baremetal proxy — measured against Ironic 39.0.0 with
openstacksdk 4.22.0 (``Connection(auth_type="none", baremetal_endpoint_override=url,
baremetal_status_code_retries=0)``):

* keystoneauth logs every request at DEBUG as a curl line *with the body*:
  ``POST /v1/nodes`` printed ``"ipmi_password": "secret"`` in clear. The BMC
  password must never reach a log line, whatever the log level.
* the SDK pins its own microversion (sent ``1.109`` while the server offers
  ``1.115``), spends two discovery ``GET /v1`` calls before the first request,
  and re-reads the node after every provision-state ``PUT`` (one extra ``GET``
  per action), where the controller polls anyway.
* an unreachable Ironic surfaces as keystoneauth's ``DiscoveryFailure`` (not a
  connection error) and error texts come wrapped in SDK prose; here the raw
  status code, ``faultstring`` and ``last_error`` are kept as Ironic sent them.
* it would add openstacksdk, keystoneauth1, requests' siblings, dogpile.cache,
  os-service-types … to the controller image for about fifteen endpoints.

Passwords are sent in request bodies only: never logged (only method, route and status
are). A URL written with ``user:password@`` is used and shown without them (urllib3 never
sent them): messages name the Ironic, and go to logs and to every Host's status.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import urllib3

from ..results import failed, retry_after, transient
from .faults import (
    Answer,
    conflict_message,
    connection_trouble,
    fault_text,
    passes_by_itself,
    readable,
)

log = logging.getLogger(__name__)

Version = tuple[int, int]

MIN_VERSION: Version = (1, 47)  # automated_clean on nodes; everything else used is older
PREFERRED_VERSION: Version = (1, 115)  # the newest this was tested against (Ironic 39.0.0)


@dataclass(frozen=True, slots=True)
class Reply:
    """What Ironic answered one request: the status and the JSON body (None if empty)."""

    status: int
    data: Any

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300


class IronicClient:
    """Requests to one Ironic endpoint, shared by all hosts (thread-safe).

    ``calls`` counts requests by ``METHOD route`` and ``seconds`` sums the time spent
    waiting for their answers. ``lock_retry_delay`` is the delay a passing 409 answers.
    """

    def __init__(
        self,
        url: str,
        *,
        username: str | None = None,
        password: str | None = None,
        reread_credentials: Callable[[], tuple[str, str]] | None = None,
        lock_retry_delay: float = 2.0,
        connect_timeout: float = 5.0,
        read_timeout: float = 30.0,
        max_connections: int = 8,
        ca_file: str | None = None,
        insecure: bool = False,
    ) -> None:
        shown = without_userinfo(url)
        if shown != url:
            log.warning(
                "the Ironic URL has user:password@ in it, which is neither sent nor shown; "
                "give the credentials apart (username and password)"
            )
        url = shown.rstrip("/")
        self.url = url[: -len("/v1")] if url.endswith("/v1") else url
        self.lock_retry_delay = lock_retry_delay
        self._timeout = urllib3.Timeout(connect=connect_timeout, read=read_timeout)
        tls: dict[str, Any] = {"cert_reqs": "CERT_NONE"} if insecure else {}
        if ca_file:
            tls["ca_certs"] = ca_file
        self._http = urllib3.PoolManager(num_pools=2, maxsize=max_connections, retries=False, **tls)
        self._headers: dict[str, str] = {"Accept": "application/json"}
        if username:
            self._headers["authorization"] = basic_auth(username, password or "")
        self._reread_credentials = reread_credentials
        self._version: Version | None = None
        self._lock = threading.Lock()
        self._negotiating = threading.Lock()
        self.calls: Counter[str] = Counter()
        self.seconds: defaultdict[str, float] = defaultdict(float)

    @property
    def microversion(self) -> str | None:
        """The API microversion in use, once negotiated (on the first request)."""
        version = self._version
        return None if version is None else f"{version[0]}.{version[1]}"

    def version(self) -> Version:
        """The microversion in use, negotiated now if it was not yet."""
        version = self._version
        if version is not None:
            return version
        with self._negotiating:  # once, not once per worker
            if self._version is not None:
                return self._version
            return self._negotiate_now()

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        route: str,
        allow: tuple[int, ...] = (),
    ) -> Reply:
        """A 2xx reply, or one whose status is in ``allow``; anything else ends the
        operation with an :class:`~.faults.Answer` (see the module's docstring)."""
        version = self.version()
        reply = self._send(method, path, body, route, version=version)
        if reply.status == 401 and self._credentials_rotated():
            reply = self._send(method, path, body, route, version=version)
        status = reply.status
        if status == 406 and self._renegotiated(version):  # replaced by an older Ironic
            raise Answer(transient(f"Ironic at {self.url} no longer speaks API 1.{version[1]}"))
        if reply.ok:
            return reply
        fault = fault_text(reply.data) or f"HTTP {status}"
        if status == 409 and passes_by_itself(fault):  # even where a caller allows other 409s
            raise Answer(retry_after(self.lock_retry_delay, conflict_message(fault)))
        if status in allow:
            return reply
        if status >= 500:
            busy = "busy (no free conductor)" if status == 503 else f"failing (HTTP {status})"
            raise Answer(transient(f"Ironic at {self.url} is {busy}", fault))
        if status == 401:
            raise Answer(
                failed(
                    f"Ironic at {self.url} refused hoststate's credentials (HTTP 401); "
                    "check the Ironic username and password",
                    fault,
                )
            )
        if status == 403:  # a protected node, or a policy: not the password
            raise Answer(
                failed(
                    f"Ironic forbade {method} {route} (HTTP 403); the node may be "
                    "protected (protected=true), or the Ironic user may not do this",
                    fault,
                )
            )
        # other 4xx, and a 409 that is no lock (a state that forbids it): waiting won't help
        raise Answer(
            failed(f"Ironic refused {method} {route} (HTTP {status}): {readable(fault)}", fault)
        )

    # -- microversion -------------------------------------------------------------------

    def _negotiate_now(self) -> Version:
        reply = self._send("GET", "/v1", None, "v1", version=None)
        try:
            top = _parse_version(str(reply.data["version"]["version"]))
        except (KeyError, TypeError, ValueError):
            raise Answer(
                transient(f"Ironic at {self.url} answered GET /v1 without an API version")
            ) from None
        if top < MIN_VERSION:
            raise Answer(
                failed(
                    f"Ironic at {self.url} offers API 1.{top[1]} at most; hoststate needs "
                    f"1.{MIN_VERSION[1]} or newer (Ironic 12.0, Stein, or later)"
                )
            )
        version = min(top, PREFERRED_VERSION)
        self._version = version
        log.info("Ironic at %s: using API microversion %d.%d", self.url, *version)
        return version

    def _renegotiated(self, version: Version) -> bool:
        """After a 406: True if the server now offers another microversion (it was
        replaced); False if it still offers ``version``, so the request itself is refused
        (Ironic answers 406 for a field the version does not have) and retrying won't help."""
        with self._negotiating:
            if self._version == version:
                self._version = None
                self._negotiate_now()
            return self._version != version

    # -- credentials --------------------------------------------------------------------

    def _credentials_rotated(self) -> bool:
        """After a 401: True if the credentials source now holds other credentials, which
        are used from here on (a rotated Secret needs no restart)."""
        if self._reread_credentials is None:
            return False
        try:
            username, password = self._reread_credentials()
        except ValueError as err:
            log.warning("Ironic refused the credentials and reading them again failed: %s", err)
            return False
        header = basic_auth(username, password)
        with self._lock:
            if self._headers.get("authorization") == header:
                return False
            self._headers = {**self._headers, "authorization": header}
        log.info("Ironic refused the credentials; using the changed ones now on disk")
        return True

    # -- the wire -----------------------------------------------------------------------

    def _send(
        self, method: str, path: str, body: Any, route: str, *, version: Version | None
    ) -> Reply:
        headers = dict(self._headers)
        if version is not None:
            headers["X-OpenStack-Ironic-API-Version"] = f"{version[0]}.{version[1]}"
        payload = None
        if body is not None:
            payload = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        key = f"{method} {route}"
        with self._lock:
            self.calls[key] += 1
        started = time.perf_counter()
        try:
            response = self._http.request(
                method, self.url + path, body=payload, headers=headers, timeout=self._timeout
            )
        except urllib3.exceptions.HTTPError as error:
            log.debug("%s %s: %s", method, route, type(error).__name__)
            raise Answer(
                transient(f"Ironic at {self.url} is unreachable", connection_trouble(error))
            ) from None
        finally:
            waited = time.perf_counter() - started
            with self._lock:
                self.seconds[key] += waited
        log.debug("%s %s: %d", method, route, response.status)
        data: Any = None
        if response.data:
            try:
                data = json.loads(response.data)
            except ValueError:
                data = response.data.decode(errors="replace")[:500]
        return Reply(response.status, data)


def without_userinfo(url: str) -> str:
    """``url`` without ``user:password@``, which must show nowhere."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def basic_auth(username: str, password: str) -> str:
    """The ``Authorization`` header value for HTTP basic auth."""
    return str(urllib3.make_headers(basic_auth=f"{username}:{password}")["authorization"])


def _parse_version(text: str) -> Version:
    major, minor = text.split(".", 1)
    return int(major), int(minor)
