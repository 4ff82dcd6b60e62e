"""The controller's HTTP endpoints under abuse: /metrics (plain and HTTPS with bearer
tokens) and the probes, each started in this process on loopback.

A connection that sends nothing, or begins a TLS handshake and stalls, is dropped after
the server's timeout and holds no scrape back meanwhile; connections beyond the cap are
refused at once.
"""

from __future__ import annotations

import datetime
import http.client
import re
import select
import selectors
import socket
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from prometheus_client import CollectorRegistry

from state_controller.api.objects import Obj
from state_controller.cluster.interface import Resource
from state_controller.observability.endpoints import (
    LIMITS,
    Limits,
    Server,
    serve_metrics,
    serve_probes,
)
from state_controller.observability.metrics_auth import (
    RELOAD_EVERY,
    DelegatedAuth,
    ServerCertificate,
    serve_metrics_securely,
)
from testbed.clocks import Clock
from testbed.processes import CLI, cli
from testbed.secret_volume import write_secret_volume
from tests.conftest import wait_for

pytestmark = pytest.mark.slow  # servers on loopback and state-controller run as a process

LOOPBACK = "127.0.0.1"
GOOD = "prometheus-token"  # the one token the stand-in API server allows
IDLE = 300  # connections an abuser holds open
SCRAPE_BOUND = 5.0  # seconds: generous; a scrape under idle connections takes milliseconds
CONNECT_BOUND = 10.0  # seconds to open them: the kernel completes them, busy server or not
# the first bytes of a TLS ClientHello (a record of 200 bytes), and then nothing
STALLED_HELLO = b"\x16\x03\x01\x00\xc8\x01\x00\x00\xc4\x03\x03"


class Reviewer:
    """The API server's TokenReview and SubjectAccessReview, counted."""

    def __init__(self) -> None:
        self.token_reviews = 0
        self._lock = threading.Lock()

    def create(self, resource: Resource, obj: Obj) -> Obj:
        if resource.kind == "TokenReview":
            with self._lock:
                self.token_reviews += 1
            known = obj["spec"]["token"] == GOOD
            user = {"username": "system:serviceaccount:monitoring:prometheus-k8s"}
            return {"status": {"authenticated": known, "user": user if known else {}}}
        return {"status": {"allowed": True}}


def get(url: str, token: str | None = None, timeout: float = SCRAPE_BOUND) -> int:
    """The status of a GET; 0 when the server hung up without answering."""
    request = urllib.request.Request(url)
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE  # self-signed
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=context) as response:
            response.read()
            return int(response.status)
    except urllib.error.HTTPError as err:
        return err.code
    except (urllib.error.URLError, http.client.RemoteDisconnected, ConnectionError):
        return 0


@contextmanager
def connections(port: int, count: int, first: bytes = b"") -> Iterator[list[socket.socket]]:
    """``count`` connections that send ``first`` and then nothing; all closed on exit."""
    opened: list[socket.socket] = []
    began = time.monotonic()
    try:
        for _ in range(count):
            opened.append(socket.create_connection((LOOPBACK, port), timeout=CONNECT_BOUND))
            if first:
                opened[-1].sendall(first)
            took = time.monotonic() - began
            assert took < CONNECT_BOUND, f"{len(opened)} of {count} connected in {took:.1f}s"
        yield opened
    finally:
        for sock in opened:
            sock.close()


def hung_up(sockets: list[socket.socket], timeout: float) -> tuple[int, bytes]:
    """How many of ``sockets`` the server closed within ``timeout`` seconds, and the
    bytes it sent on them before (an answer, where it should have refused)."""
    answered = b""
    closed = 0
    with selectors.DefaultSelector() as selector:
        for sock in sockets:
            selector.register(sock, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout
        while closed < len(sockets) and (left := deadline - time.monotonic()) > 0:
            for key, _ in selector.select(left):
                conn = key.fileobj
                assert isinstance(conn, socket.socket)
                try:
                    data = conn.recv(4096)
                except OSError:  # reset
                    data = b""
                answered += data
                if not data:
                    closed += 1
                    selector.unregister(conn)
    return closed, answered


def started(stack: ExitStack, server: Server) -> Server:
    stack.callback(server.stop)
    return server


def secure(stack: ExitStack, reviewer: Reviewer) -> Server:
    auth = DelegatedAuth(reviewer)
    certificate = ServerCertificate(None, ["localhost", LOOPBACK])
    return started(
        stack, serve_metrics_securely(CollectorRegistry(), (LOOPBACK, 0), auth, certificate)
    )


def test_silent_connections_hold_no_scrape_back_and_are_dropped() -> None:
    """300 connections that send nothing (or stall their TLS handshake) on each endpoint:
    a scrape is still answered at once, and the server drops them after its timeout."""
    reviewer = Reviewer()
    with ExitStack() as stack:
        plain = started(stack, serve_metrics(CollectorRegistry(), (LOOPBACK, 0)))
        probes = started(stack, serve_probes(lambda: True, (LOOPBACK, 0)))
        silent_tls, stalled_tls = secure(stack, reviewer), secure(stack, reviewer)
        cases: list[tuple[str, str, str | None, bytes]] = [
            ("plain /metrics", f"http://{LOOPBACK}:{plain.port}/metrics", None, b""),
            ("/healthz", f"http://{LOOPBACK}:{probes.port}/healthz", None, b""),
            ("HTTPS /metrics", f"https://{LOOPBACK}:{silent_tls.port}/metrics", GOOD, b""),
            (
                "HTTPS /metrics, handshake stalled",
                f"https://{LOOPBACK}:{stalled_tls.port}/metrics",
                GOOD,
                STALLED_HELLO,
            ),
        ]
        held = {}
        for name, url, _, first in cases:
            port = int(url.rsplit(":", 1)[1].split("/")[0])
            held[name] = stack.enter_context(connections(port, IDLE, first))
        for name, url, token, _ in cases:
            began = time.monotonic()
            assert get(url, token) == 200, f"{name}: no answer under {IDLE} idle connections"
            took = time.monotonic() - began
            assert took < SCRAPE_BOUND, f"{name}: answered in {took:.2f}s"
        bound = LIMITS.silence + 10.0
        for name, *_ in cases:
            closed, _sent = hung_up(held[name], bound)
            assert closed == IDLE, f"{name}: {IDLE - closed} of {IDLE} still open after {bound}s"


def test_connections_beyond_the_cap_are_refused_at_once() -> None:
    """With the cap's worth of silent connections held, a further request is refused
    (closed unanswered) at once; once they are gone, requests are answered again."""
    with ExitStack() as stack:
        probes = started(stack, serve_probes(lambda: True, (LOOPBACK, 0)))
        request = b"GET /healthz HTTP/1.0\r\n\r\n"
        with connections(probes.port, LIMITS.connections):
            with connections(probes.port, 20, request) as beyond:
                closed, answered = hung_up(beyond, timeout=LIMITS.silence / 2)
            assert answered == b"", f"served beyond the cap: {answered[:60]!r}"
            assert closed == 20
        url = f"http://{LOOPBACK}:{probes.port}/healthz"
        wait_for(lambda: get(url) == 200, timeout=10.0, what="/healthz answered again")


def test_a_request_trickled_in_is_cut_at_the_deadline() -> None:
    """A client that sends a byte of a header every tenth of a second, never silent long
    enough to be dropped for it, is cut when the connection's deadline passes."""
    limits = Limits(deadline=1.0)
    with ExitStack() as stack:
        probes = started(stack, serve_probes(lambda: True, (LOOPBACK, 0), limits))
        with connections(probes.port, 1, b"GET /healthz HTTP/1.0\r\nX-Slow: ") as (sock,):
            began = time.monotonic()
            cut = False
            while not cut and time.monotonic() - began < limits.deadline + 10.0:
                try:
                    sock.sendall(b"x")
                    readable, _, _ = select.select([sock], [], [], 0.1)
                    cut = bool(readable) and sock.recv(4096) == b""
                except OSError:  # reset
                    cut = True
            took = time.monotonic() - began
            assert cut, f"still trickling after {took:.1f}s"
            assert took < limits.deadline + 5.0, f"cut after {took:.1f}s"


def test_unknown_tokens_cost_at_most_ten_token_reviews() -> None:
    """1,000 made-up tokens at once cost at most 10 TokenReviews, the rest answered 429
    unreviewed; a token allowed before is reviewed again when its minute is up however
    many strangers came; and the allowance comes back with time."""
    reviewer, clock = Reviewer(), Clock()
    auth = DelegatedAuth(reviewer, clock=clock)
    assert auth.check(f"Bearer {GOOD}").code == 200
    before = reviewer.token_reviews
    verdicts = Counter(auth.check(f"Bearer made-up-{n}").code for n in range(1000))
    reviews = reviewer.token_reviews - before
    assert reviews <= 10, f"1,000 made-up tokens cost {reviews} TokenReviews"
    assert verdicts == {401: reviews, 429: 1000 - reviews}, verdicts
    assert auth.check(f"Bearer {GOOD}").code == 200  # remembered: no review
    clock.advance(61.0)
    before = reviewer.token_reviews
    assert auth.check(f"Bearer {GOOD}").code == 200
    assert reviewer.token_reviews == before + 1, "the known token was not reviewed again"
    assert auth.check("Bearer made-up-again").code == 401  # a minute refilled the allowance


def test_a_token_beyond_the_allowance_is_told_when_to_come_back() -> None:
    reviewer = Reviewer()
    with ExitStack() as stack:
        server = secure(stack, reviewer)
        url = f"https://{LOOPBACK}:{server.port}/metrics"
        codes = [get(url, f"made-up-{n}") for n in range(12)]
        assert codes[0] == 401 and codes[-1] == 429, codes
        request = urllib.request.Request(url, headers={"Authorization": "Bearer made-up-x"})
        context = ssl.create_default_context()
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        try:
            urllib.request.urlopen(request, timeout=SCRAPE_BOUND, context=context).close()
        except urllib.error.HTTPError as err:
            assert err.code == 429 and int(err.headers["Retry-After"]) > 0
            assert b"too many new tokens" in err.read()
        else:
            raise AssertionError("a made-up token beyond the allowance was reviewed")


def certificate(name: str = "localhost") -> tuple[str, str, int]:
    """A self-signed certificate for ``name``: its PEM, its key's PEM, its serial."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .sign(key, hashes.SHA256())
    )
    pem = cert.public_bytes(serialization.Encoding.PEM).decode()
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    return pem, key_pem, cert.serial_number


def served_serial(port: int) -> int:
    """The serial of the certificate a new connection is shown."""
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    with (
        socket.create_connection((LOOPBACK, port), timeout=SCRAPE_BOUND) as raw,
        context.wrap_socket(raw, server_hostname="localhost") as tls,
    ):
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return int(x509.load_der_x509_certificate(der).serial_number)


def test_a_rotated_certificate_is_shown_to_new_connections(tmp_path: Path) -> None:
    """The certificate folder rotated as the kubelet rotates a mounted Secret (a new
    ..data): new connections are shown the new certificate once the files are looked
    at again; a half-written rotation keeps the last one; a folder without the files
    (yet) is served self-signed until they appear."""
    crt, key, first = certificate()
    folder = write_secret_volume(tmp_path / "certs", {"tls.crt": crt, "tls.key": key})
    empty = tmp_path / "empty"
    empty.mkdir()
    clock = Clock()
    with ExitStack() as stack:
        auth = DelegatedAuth(Reviewer())
        rotated = ServerCertificate(str(folder), ["localhost"], clock=clock)
        later = ServerCertificate(str(empty), ["localhost"], clock=clock)
        server, waiting = (
            started(stack, serve_metrics_securely(CollectorRegistry(), (LOOPBACK, 0), auth, c))
            for c in (rotated, later)
        )
        assert served_serial(server.port) == first
        crt, key, second = certificate()
        write_secret_volume(folder, {"tls.crt": crt, "tls.key": key})
        assert served_serial(server.port) == first  # not looked at within RELOAD_EVERY
        clock.advance(RELOAD_EVERY)
        assert served_serial(server.port) == second
        _, other_key, _ = certificate()
        write_secret_volume(folder, {"tls.crt": crt + "x", "tls.key": other_key})
        clock.advance(RELOAD_EVERY)
        assert served_serial(server.port) == second  # the broken pair is not served

        assert served_serial(waiting.port) not in (first, second)
        crt, key, third = certificate()
        write_secret_volume(empty, {"tls.crt": crt, "tls.key": key})
        clock.advance(RELOAD_EVERY)
        assert served_serial(waiting.port) == third


def metrics_line(tmp_path: Path, *flags: str) -> str:
    """What ``state-controller run`` says of its /metrics, with ``flags``; its API
    server never answers (the servers start before the caches sync)."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(UNREACHABLE_KUBECONFIG)
    log = tmp_path / f"run-{len(list(tmp_path.iterdir()))}.log"
    argv = [*CLI, "run", "--kubeconfig", str(kubeconfig), "--no-nodes", *flags]
    argv += ["--health-probe-bind-address", "0"]
    with log.open("w") as out:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=out, start_new_session=True)
    try:

        def said() -> str | None:
            assert proc.poll() is None, log.read_text()
            found = re.search(r"^metrics: .*$", log.read_text(), re.MULTILINE)
            return found.group(0) if found else None

        return str(wait_for(said, timeout=60.0, what=f"run's /metrics line in {log}"))
    finally:
        proc.kill()  # SIGTERM waits for the caches, which never sync
        proc.wait(timeout=30)


UNREACHABLE_KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:9"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
"""


def test_run_serves_metrics_over_https_unless_told_or_on_loopback(tmp_path: Path) -> None:
    """On every interface /metrics is HTTPS with TokenReview, unless --metrics-insecure;
    on loopback plain HTTP, unless --metrics-secure; the two flags together are refused."""
    everywhere = metrics_line(tmp_path, "--metrics-bind-address", ":0")
    assert everywhere.startswith("metrics: https://0.0.0.0:"), everywhere
    told = metrics_line(tmp_path, "--metrics-bind-address", ":0", "--metrics-insecure")
    assert told.startswith("metrics: 0.0.0.0:"), told
    loopback = metrics_line(tmp_path, "--metrics-bind-address", f"{LOOPBACK}:0")
    assert loopback.startswith(f"metrics: {LOOPBACK}:"), loopback
    forced = metrics_line(tmp_path, "--metrics-bind-address", f"{LOOPBACK}:0", "--metrics-secure")
    assert forced.startswith(f"metrics: https://{LOOPBACK}:"), forced
    both = cli("run", "--metrics-secure", "--metrics-insecure")
    assert both.returncode == 2 and "not allowed with argument" in both.stderr, both.stderr
