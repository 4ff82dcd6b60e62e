"""Metrics, Events and traces: the projections of the books that leave the process."""
