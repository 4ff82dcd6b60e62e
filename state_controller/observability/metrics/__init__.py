"""Prometheus metrics: ``hoststate_*`` for hosts, client-go's and controller-runtime's
names for the machinery, each group in a module of its own, assembled in one
:class:`Metrics`. The names are part of the API: dashboards and alerts use them."""

from .registry import Metrics

__all__ = ["Metrics"]
