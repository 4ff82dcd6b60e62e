"""Who may read ``/metrics`` in a cluster: callers the API server authenticates and
authorises, served over HTTPS, as kubebuilder's scaffold does by default.

A scrape's bearer token is checked with a ``TokenReview``; the user it names must be
allowed ``get`` on the non-resource URL ``/metrics`` by a ``SubjectAccessReview``
(the ``hoststate-metrics-reader`` ClusterRole in ``manifests/`` grants it). An
answer is remembered for a minute per token, so a scrape every 30 s costs the API
server two reviews a minute per scraper at most. A token not allowed before is
reviewed only within an allowance (10 at once, 10 more a minute): beyond it the
caller is answered 429, so made-up tokens cannot make the controller flood the API
server. Tokens are never logged or kept: only their SHA-256.
"""

from __future__ import annotations

import datetime
import hashlib
import ipaddress
import logging
import math
import os
import ssl
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import MetricsHandler

from ..api.objects import Obj
from ..cluster.interface import ApiError, Resource
from .endpoints import LIMITS, Limits, Server, serve

log = logging.getLogger(__name__)

TOKEN_REVIEWS = Resource(
    "authentication.k8s.io", "v1", "TokenReview", "tokenreviews", namespaced=False
)
ACCESS_REVIEWS = Resource(
    "authorization.k8s.io", "v1", "SubjectAccessReview", "subjectaccessreviews", namespaced=False
)
REMEMBER = 60.0  # seconds an answer is reused for the same token
NEW_TOKENS = 10  # tokens not allowed before, reviewed at once at most...
NEW_TOKENS_PER_SECOND = 10 / 60  # ...and as many more a minute
KNOWN = 3600.0  # seconds an allowed token is reviewed again outside that allowance
RELOAD_EVERY = 5.0  # seconds between looks at the certificate's files
PATH = "/metrics"


@dataclass(frozen=True)
class Verdict:
    code: int  # 200, 401, 403, 429 or 503
    reason: str
    retry_after: int = 0  # seconds, with 429


class Reviews(Protocol):
    """Where reviews are created: the API server (a ``Cluster``)."""

    def create(self, resource: Resource, obj: Obj) -> Obj: ...


class DelegatedAuth:
    """Asks the API server who a token is and whether it may read ``/metrics``."""

    def __init__(
        self,
        cluster: Reviews,
        *,
        remember: float = REMEMBER,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.cluster = cluster
        self.remember = remember
        self.clock = clock
        self._answers: dict[str, tuple[float, Verdict]] = {}
        self._allowance, self._filled = float(NEW_TOKENS), clock()
        self._lock = threading.Lock()

    def check(self, authorization: str | None) -> Verdict:
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return Verdict(401, "send a bearer token (Authorization: Bearer <token>)")
        digest = hashlib.sha256(token.strip().encode()).hexdigest()
        now = self.clock()
        with self._lock:
            kept = self._answers.get(digest)
            if kept is not None and kept[0] > now:
                return kept[1]
            known = kept is not None and kept[1].code == 200
            if not known and (wait := self._take_allowance(now)):
                return Verdict(429, "too many new tokens to review; try again later", wait)
        verdict = self._review(token.strip())
        if verdict.code != 503:  # an unanswered review is asked again next time
            with self._lock:
                self._answers[digest] = (now + self.remember, verdict)
                for key, (until, was) in list(self._answers.items()):
                    if until <= now and not (was.code == 200 and until + KNOWN > now):
                        del self._answers[key]
        return verdict

    def _take_allowance(self, now: float) -> int:
        """0 when a new token may be reviewed now, else the seconds until one may."""
        since, self._filled = max(0.0, now - self._filled), now
        self._allowance = min(NEW_TOKENS, self._allowance + since * NEW_TOKENS_PER_SECOND)
        if self._allowance >= 1:
            self._allowance -= 1
            return 0
        return math.ceil((1 - self._allowance) / NEW_TOKENS_PER_SECOND)

    def _review(self, token: str) -> Verdict:
        try:
            review = self.cluster.create(
                TOKEN_REVIEWS,
                {
                    "apiVersion": TOKEN_REVIEWS.api_version,
                    "kind": "TokenReview",
                    "spec": {"token": token},
                },
            )
        except ApiError as err:
            return Verdict(503, f"could not review the token: {err.reason}")
        status = review.get("status") or {}
        if not status.get("authenticated"):
            return Verdict(401, "the API server did not authenticate the token")
        user = status.get("user") or {}
        spec: dict[str, Any] = {
            "user": user.get("username", ""),
            "groups": user.get("groups") or [],
            "uid": user.get("uid", ""),
            "extra": user.get("extra") or {},
            "nonResourceAttributes": {"path": PATH, "verb": "get"},
        }
        try:
            access = self.cluster.create(
                ACCESS_REVIEWS,
                {
                    "apiVersion": ACCESS_REVIEWS.api_version,
                    "kind": "SubjectAccessReview",
                    "spec": spec,
                },
            )
        except ApiError as err:
            return Verdict(503, f"could not review the access: {err.reason}")
        if not (access.get("status") or {}).get("allowed"):
            name = user.get("username", "?")
            return Verdict(403, f"{name} may not get {PATH} (bind it to hoststate-metrics-reader)")
        return Verdict(200, "")


class ServerCertificate:
    """The TLS context for a new connection: from ``cert_dir`` (``tls.crt``, ``tls.key``:
    a mounted cert-manager Secret), loaded again when the files change (a Secret is
    rotated in place), looked at no more often than every ``every`` seconds and only
    when a connection comes. Without ``cert_dir``, or until its files appear, a
    certificate made at start and signed by itself (as controller-runtime does)."""

    def __init__(
        self,
        cert_dir: str | None,
        hostnames: list[str],
        *,
        every: float = RELOAD_EVERY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.folder = Path(cert_dir) if cert_dir else None
        self.hostnames, self.every, self.clock = hostnames, every, clock
        self._lock = threading.Lock()
        self._looked, self._version = clock(), self._files()
        self._context = self._load(self._version)  # a broken certificate stops the start

    def context(self) -> ssl.SSLContext:
        now = self.clock()
        with self._lock:
            if self.folder is None or now - self._looked < self.every:
                return self._context
            self._looked, version = now, self._files()
            if version != self._version:
                try:
                    self._context = self._load(version)
                except (OSError, ssl.SSLError) as err:  # looked at again next time
                    log.warning(
                        "certificate in %s not loaded (%s); still the last", self.folder, err
                    )
                else:
                    self._version = version
                    log.info("certificate in %s loaded", self.folder)
            return self._context

    def _files(self) -> tuple[tuple[int, int, int], ...] | None:
        """What changes when the files do (the kubelet swaps a new folder in)."""
        if self.folder is None:
            return None
        try:
            found = [os.stat(self.folder / name) for name in ("tls.crt", "tls.key")]
        except OSError:
            return None
        return tuple((f.st_ino, f.st_mtime_ns, f.st_size) for f in found)

    def _load(self, version: object) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        if self.folder is not None and version is not None:
            context.load_cert_chain(self.folder / "tls.crt", self.folder / "tls.key")
            return context
        if self.folder is not None:
            log.warning("no tls.crt and tls.key in %s: self-signed until they appear", self.folder)
        cert, key = _self_signed(self.hostnames)
        with tempfile.TemporaryDirectory() as private:  # ssl reads files; they live a moment
            os.chmod(private, 0o700)
            (Path(private) / "tls.crt").write_bytes(cert)
            (Path(private) / "tls.key").write_bytes(key)
            context.load_cert_chain(Path(private) / "tls.crt", Path(private) / "tls.key")
        return context


def _self_signed(hostnames: list[str]) -> tuple[bytes, bytes]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hostnames[0])])
    now = datetime.datetime.now(datetime.UTC)
    alternatives: list[x509.GeneralName] = []
    for host in hostnames:
        try:
            alternatives.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            alternatives.append(x509.DNSName(host))
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=365))
        .add_extension(x509.SubjectAlternativeName(alternatives), critical=False)
        .sign(key, hashes.SHA256())
    )
    return (
        cert.public_bytes(serialization.Encoding.PEM),
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
    )


def serve_metrics_securely(
    registry: CollectorRegistry,
    address: tuple[str, int],
    auth: DelegatedAuth,
    certificate: ServerCertificate,
    limits: Limits = LIMITS,
) -> Server:
    """``/metrics`` over HTTPS, to callers ``auth`` lets in (401 or 403 otherwise)."""
    base = MetricsHandler.factory(registry)

    class Guarded(base):  # type: ignore[misc, valid-type]
        def do_GET(self) -> None:
            verdict = auth.check(self.headers.get("Authorization"))
            if verdict.code != 200:
                body = (verdict.reason + "\n").encode()
                self.send_response(verdict.code)
                if verdict.code == 401:
                    self.send_header("WWW-Authenticate", 'Bearer realm="hoststate"')
                if verdict.retry_after:
                    self.send_header("Retry-After", str(verdict.retry_after))
                self.send_header("Content-Type", "text/plain; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            super().do_GET()

        def log_message(self, format: str, *args: object) -> None:  # scrapes are not news
            pass

    tls = certificate.context
    return serve("metrics", "--metrics-bind-address", address, Guarded, limits, tls)
