"""What a reconcile answers: when to look at its book again."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ReconcileResult:
    """When to look at the book again (controller-runtime's ``reconcile.Result``)."""

    requeue_after: float | None = None
    rate_limited: bool = False
    wake_after: float | None = None  # the stuck-detection timer


DONE = ReconcileResult()
