"""The book a Node is told in, and what the pools read of it: its update, what its step is
expected to take, its machine's hardware class; and the pool of a book's machine.

A Node is told in its machine's book (a Host's or an observed BareMetalHost's) or in a book
of its own; which one is the node index's and the routes' knowledge, and the book is in
the table of kinds the manager assembled. The pool reconciler and the learned durations
ask through this one place.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

from ...books.book import Book
from ...books.records import UpdateCursor
from ...durations.keys import hardware_class
from ..machinery.keys import Kind, parse
from ..machinery.workers import KindOfBook
from .nodes import NodeIndex


class QueueKeys(Protocol):
    """What the routes tell: the queue key that reconciles a book's key."""

    def queue_key(self, key: str) -> str: ...


class NodeBooks:
    def __init__(
        self,
        nodes: NodeIndex,
        routes: Callable[[], QueueKeys],
        kinds: Callable[[], Mapping[Kind, KindOfBook]],
    ) -> None:
        self.nodes = nodes
        # bound late: the routes and the kinds are assembled after the reconcilers
        self.routes = routes
        self.kinds = kinds

    def book_of(self, node: str) -> Book | None:
        """The book a Node is told in (None: none, or not read yet)."""
        key = self.nodes.key_of(node)
        if key is None:
            return None
        kind, name = parse(self.routes().queue_key(key))
        book = self.kinds()[kind].book(name)
        return book if book is not None and book.facts.node == node else None

    def update_of(self, node: str) -> UpdateCursor | None:
        book = self.book_of(node)
        return book.update if book is not None else None

    def class_of(self, node: str) -> str:
        """The hardware class of a Node's machine ("" unknown)."""
        book = self.book_of(node)
        return hardware_class(book.facts.hardware) if book is not None else ""

    def pool_of(self, book: Book) -> str:
        """The pool of a book's machine: its Node's ("" without one, as for servicing
        slots)."""
        signals = self.nodes.node_on(book.key)
        if signals is None and book.facts.node:
            return self.nodes.pool(book.facts.node)
        return signals.pool if signals is not None else ""
