"""A list that keeps only its last ``maxlen`` items: a book's history and chapters.

Not a ``collections.deque``: an empty deque takes 760 bytes (its first block of 64
slots is allocated at once) and a book holds two, 1.3 KB per host before anything
happened; measured at 2,000 hosts on a real kube-apiserver, they were the largest
item of a book. A list of six records takes 128 bytes. Dropping the oldest item is
O(n) here, for n at most the limit (50 by default), once per transition beyond it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import SupportsIndex, TypeVar

T = TypeVar("T")


class Bounded(list[T]):
    __slots__ = ("maxlen",)

    def __init__(self, maxlen: int, items: Iterable[T] = ()) -> None:
        super().__init__()
        self.maxlen = maxlen
        for item in items:
            self.append(item)

    def append(self, item: T) -> None:
        if self.maxlen <= 0:
            return
        if len(self) >= self.maxlen:
            del self[0]
        super().append(item)

    def extend(self, items: Iterable[T]) -> None:
        for item in items:
            self.append(item)

    def insert(self, index: SupportsIndex, item: T) -> None:
        raise TypeError("a Bounded list only appends")
