"""Update metrics: nodes per step and one series per node at scrape time, durations and
outcomes from the journal."""

from __future__ import annotations

from opentelemetry.trace import NoOpTracer
from prometheus_client import generate_latest

from state_controller.api.states import ProvisioningState as P
from state_controller.api.updates import UPDATE_COMPLETE, UPDATE_STARTED, UpdateStep
from state_controller.books.book import Book
from state_controller.books.records import UpdateCursor
from state_controller.books.stuck import StuckPolicy
from state_controller.observability.collectors import STEP_CODES
from state_controller.observability.metrics import Metrics
from state_controller.observability.reporter import Observability
from testbed.clocks import T0


def step(book: Book, to: UpdateStep, at: float, reason: str) -> None:
    book.update_to(UpdateCursor(step=to, desired="v2"), now=at, reason=reason)


def test_update_metrics_from_books_and_journal() -> None:
    host = Book("metal/host-0", now=T0)
    host.move(P.PROVISIONED, now=T0, reason="r")
    host.note(now=T0, node="worker-0")
    alone = Book("hoststate-system/worker-9", now=T0, node_only=True)
    never = Book("metal/host-1", now=T0)  # no Node: no update series
    metrics = Metrics()
    books = {"metal/host-0": host, "hoststate-system/worker-9": alone, "metal/host-1": never}
    metrics.watch_books(lambda: books, StuckPolicy())
    reporter = Observability(metrics, None, NoOpTracer())

    step(host, UpdateStep.PENDING, T0 + 10, UPDATE_STARTED)
    step(host, UpdateStep.DRAINING, T0 + 20, "Draining")
    step(host, UpdateStep.UPDATED, T0 + 320, UPDATE_COMPLETE)
    step(alone, UpdateStep.DRAINING, T0 + 50, UPDATE_STARTED)
    for book in (host, alone):
        reporter.report({"metadata": {"name": "x"}}, book.journal.since(0)[0])

    sample = metrics.registry.get_sample_value
    assert sample("hoststate_node_update_steps", {"step": "draining"}) == 1
    assert sample("hoststate_node_update_steps", {"step": "updated"}) == 1
    labels = {"namespace": "metal", "hoststate": "host-0", "node": "worker-0"}
    assert sample("hoststate_node_update_step_entered_timestamp_seconds", labels) == T0 + 320
    assert sample("hoststate_node_update_step", labels) == STEP_CODES[UpdateStep.UPDATED]
    alone_labels = {"namespace": "hoststate-system", "hoststate": "worker-9", "node": "worker-9"}
    assert sample("hoststate_node_update_step", alone_labels) == STEP_CODES[UpdateStep.DRAINING]
    per_node = [
        line
        for line in generate_latest(metrics.registry).decode().splitlines()
        if line.startswith("hoststate_node_update_step_entered_timestamp_seconds{")
    ]
    assert len(per_node) == 2  # one series per followed node; host-1 runs none
    duration = {"step": "draining"}
    assert sample("hoststate_node_update_step_duration_seconds_count", duration) == 1
    assert sample("hoststate_node_update_step_duration_seconds_sum", duration) == 300
    assert sample("hoststate_node_updates_total", {"outcome": "completed"}) == 1
    # the node-only book is no host: it is not counted among provisioning states
    assert (
        sample("hoststate_hosts", {"namespace": "metal", "state": "none"}) == 1
    )  # never registered
    assert sample("hoststate_hosts", {"namespace": "metal", "state": "provisioned"}) == 1
