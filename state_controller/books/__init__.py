"""The bookkeeping model: one book per host (its present, history, chapters and journal),
the conditions derived from it, its projections, and its restoring after a restart.

State change and state reporting share this model. The state machine changes a host
only through the book's transitions (:meth:`~.book.Book.transition`, ``update_to``,
``service_to``); Host.status, HostState.status, metrics and Events are pure projections
of the book.
"""
