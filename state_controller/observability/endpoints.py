"""HTTP endpoints: /metrics, and the /healthz and /readyz probes Kubernetes calls."""

from __future__ import annotations

import argparse
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, HTTPServer, ThreadingHTTPServer

from prometheus_client import CollectorRegistry, start_http_server

MAX_PORT = 65535


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


class Server:
    """A started HTTP server and the thread serving it."""

    def __init__(self, server: HTTPServer, thread: threading.Thread) -> None:
        self.server, self.thread = server, thread

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def serve_metrics(
    registry: CollectorRegistry, address: tuple[str, int], flag: str = "--metrics-bind-address"
) -> Server:
    def start() -> Server:
        server, thread = start_http_server(address[1], addr=address[0], registry=registry)
        return Server(server, thread)

    return listen(flag, address, start)


def serve_probes(ready: Callable[[], bool], address: tuple[str, int]) -> Server:
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

    def start() -> Server:
        server = ThreadingHTTPServer(address, Probes)
        server.daemon_threads = True
        thread = threading.Thread(target=server.serve_forever, name="probes", daemon=True)
        thread.start()
        return Server(server, thread)

    return listen("--health-probe-bind-address", address, start)
