"""One replica's share, counted from its books: what its entry in the controller's
status says it keeps, and how much of it is stuck or failed."""

from __future__ import annotations

from collections.abc import Iterable
from importlib import metadata

from ..api.controller_status import PoolShare
from ..books.book import Book
from ..books.stuck import StuckPolicy
from .summary import Share


def share_of(
    books: Iterable[Book],
    stuck: StuckPolicy,
    now: float,
    *,
    draining: int,
    pools: Iterable[PoolShare] = (),
) -> Share:
    """Hosts (driven or observed), Nodes followed, stuck (a host's or node's clock past its
    threshold, as the Stuck condition says) and failed (a host in error)."""
    hosts = nodes = stuck_count = failed = 0
    for book in books:
        if book.follows_node():
            nodes += 1
        if not book.node_only:
            hosts += 1
            if book.cursor.error_type is not None:
                failed += 1
        if stuck.stuck_now(book, now):
            stuck_count += 1
    return Share(
        hosts=hosts,
        nodes=nodes,
        draining=draining,
        stuck=stuck_count,
        failed=failed,
        pools=tuple(pools),
    )


def controller_version() -> str:
    """The installed package's version (``unknown`` from a source tree never installed)."""
    try:
        return metadata.version("hoststate")
    except metadata.PackageNotFoundError:
        return "unknown"
