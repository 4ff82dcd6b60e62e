"""Informers, work queue, reconcile loop, timers and leader election."""
