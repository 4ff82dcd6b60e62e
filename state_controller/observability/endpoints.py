"""HTTP endpoints: /metrics, and the /healthz and /readyz probes Kubernetes calls."""

from __future__ import annotations

import argparse
import ipaddress
import logging
import socket
import ssl
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import MetricsHandler

log = logging.getLogger(__name__)

MAX_PORT = 65535


@dataclass(frozen=True)
class Limits:
    """What one client may hold of a server: anyone who reaches its port is one."""

    silence: float = 5.0  # seconds a connection may send nothing (a TLS handshake: in all)
    deadline: float = 30.0  # seconds a connection may last, however it trickles
    connections: int = 512  # served at once; beyond, a new one is closed unanswered


LIMITS = Limits()
BACKLOG = 1024  # connections the kernel completes while the server is busy (socketserver: 5)


def parse_bind_address(value: str, flag: str) -> tuple[str, int] | None:
    """``:8080`` → all interfaces; ``127.0.0.1:0`` → a free port; ``0`` → disabled."""
    if value in ("0", ""):
        return None
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"{flag} {value!r}: write [host]:port, e.g. :8080 or 127.0.0.1:8080")
    if int(port) > MAX_PORT:
        raise ValueError(f"{flag} {value!r}: a port is 0 to {MAX_PORT} (0: any free port)")
    return host or "0.0.0.0", int(port)


def loopback(host: str) -> bool:
    """Whether only this machine (this pod) can reach ``host``."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def port_number(value: str) -> int:
    """An argparse type: a TCP port, 0 for any free one."""
    if not value.isdigit() or int(value) > MAX_PORT:
        raise argparse.ArgumentTypeError(f"{value!r} is not a port: write 0 to {MAX_PORT}")
    return int(value)


class BindError(Exception):
    """A server could not listen where it was told; the message names the flag and the fix."""


def listen(flag: str, address: tuple[str, int], start: Callable[[], Server]) -> Server:
    try:
        return start()
    except OSError as err:
        reason = err.strerror or str(err)
        raise BindError(
            f"{flag} {address[0]}:{address[1]}: cannot listen there ({reason}); "
            "choose another port, or 0 for any free one"
        ) from None


class BoundedServer(ThreadingHTTPServer):
    """A thread per connection, as ``ThreadingHTTPServer``, within ``limits``: a silent
    connection is dropped after ``limits.silence``, any after ``limits.deadline`` (checked
    by ``serve_forever`` every half second), and a connection beyond
    ``limits.connections`` is closed at once. With ``tls`` (the context for a new
    connection), each connection's handshake runs in its own thread, under the limits."""

    daemon_threads = True
    request_queue_size = BACKLOG

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        limits: Limits = LIMITS,
        tls: Callable[[], ssl.SSLContext] | None = None,
    ) -> None:
        self.limits, self.tls = limits, tls
        self._slots = threading.BoundedSemaphore(limits.connections)
        self._lock = threading.Lock()
        self._live: dict[int, tuple[float, socket.socket]] = {}  # thread: (deadline, socket)
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            log.debug("%s: %d connections already, one refused", self, self.limits.connections)
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def finish_request(self, request: Any, client_address: Any) -> None:
        began = time.monotonic()
        request.settimeout(self.limits.silence)
        if self.tls is not None:  # the whole handshake has one timeout (CPython's ssl)
            request = self.tls().wrap_socket(request, server_side=True)
        with self._lock:
            self._live[threading.get_ident()] = (began + self.limits.deadline, request)
        try:
            super().finish_request(request, client_address)
        finally:
            with self._lock:  # before it is closed: service_actions shuts only live ones
                del self._live[threading.get_ident()]
            if self.tls is not None:
                self.shutdown_request(request)

    def service_actions(self) -> None:
        """Cut connections past their deadline; their threads then end at once."""
        now = time.monotonic()
        with self._lock:
            for until, sock in self._live.values():
                if until < now:
                    with suppress(OSError):  # not SSLSocket.shutdown: its reader holds it
                        socket.socket.shutdown(sock, socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that stalls, fails its TLS handshake or hangs up is no traceback."""
        log.debug("request from %s failed", client_address[0], exc_info=True)


def serve(
    name: str,
    flag: str,
    address: tuple[str, int],
    handler: type[BaseHTTPRequestHandler],
    limits: Limits = LIMITS,
    tls: Callable[[], ssl.SSLContext] | None = None,
) -> Server:
    """``handler`` served at ``address`` (given by ``flag``) within ``limits``, by a
    thread called ``name``."""

    def start() -> Server:
        server = BoundedServer(address, handler, limits, tls)
        thread = threading.Thread(target=server.serve_forever, name=name, daemon=True)
        thread.start()
        return Server(server, thread)

    return listen(flag, address, start)


class Server:
    """A started HTTP server and the thread serving it."""

    def __init__(self, server: BoundedServer, thread: threading.Thread) -> None:
        self.server, self.thread = server, thread

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def serve_metrics(
    registry: CollectorRegistry,
    address: tuple[str, int],
    flag: str = "--metrics-bind-address",
    limits: Limits = LIMITS,
) -> Server:
    """``/metrics`` over plain HTTP, to anyone who reaches ``address``."""
    return serve("metrics", flag, address, MetricsHandler.factory(registry), limits)


def serve_probes(
    ready: Callable[[], bool], address: tuple[str, int], limits: Limits = LIMITS
) -> Server:
    """/healthz answers while the process runs; /readyz once the caches are synced."""

    class Probes(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.startswith("/healthz"):
                self._answer(200, b"ok")
            elif self.path.startswith("/readyz"):
                ok = ready()
                self._answer(200 if ok else 503, b"ok" if ok else b"caches not synced")
            else:
                self._answer(404, b"not found")

        def _answer(self, code: int, body: bytes) -> None:
            self.send_response(code)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # probes are not news
            pass

    return serve("probes", "--health-probe-bind-address", address, Probes, limits)
