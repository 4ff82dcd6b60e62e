"""The bookkeeping model: one book per host, and its projections.

State change and state reporting share this model. The state machine changes
a host only through :meth:`Book.transition`; Host.status, HostState.status,
metrics and Events are pure projections of the book.
"""
