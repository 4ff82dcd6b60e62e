"""HTTP endpoints: /metrics, and the /healthz and /readyz probes Kubernetes calls."""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, HTTPServer, ThreadingHTTPServer

from prometheus_client import CollectorRegistry, start_http_server


def parse_bind_address(value: str, flag: str) -> tuple[str, int] | None:
    """``:8080`` → all interfaces; ``127.0.0.1:0`` → a free port; ``0`` → disabled."""
    if value in ("0", ""):
        return None
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"{flag} {value!r}: write [host]:port, e.g. :8080 or 127.0.0.1:8080")
    return host or "0.0.0.0", int(port)


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


def serve_metrics(registry: CollectorRegistry, address: tuple[str, int]) -> Server:
    server, thread = start_http_server(address[1], addr=address[0], registry=registry)
    return Server(server, thread)


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

    server = ThreadingHTTPServer(address, Probes)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="probes", daemon=True)
    thread.start()
    return Server(server, thread)
