"""Learned durations: how long each step takes on each kind of machine in each pool.

Everything an operator plans around is a time, and the right time differs by machine: a
bare-metal restart of 15 minutes is normal on one server and a fault on another. So the
controller learns, from the transitions its books record and observe, how long each
provisioning state, node update step and servicing step took, per pool and per hardware
class (vendor and model, as the inventory gives them):

- :mod:`.keys` — what a duration is of: the kind of step, the step, the pool, the class;
- :mod:`.window` — the last durations of one key, in bounded memory, and their quantiles;
- :mod:`.learned` — every key's window, and the estimate for a step (a median and a late
  bound, with how many past durations they rest on; none from too few);
- :mod:`.reading` — the journal reader that teaches it, once per record, from a book's
  history when the book is first read (after a restart, or on a new shard) and from its
  journal after that.

The books are the only source: a restarted or resharded controller learns again from the
histories its HostStates keep, and nothing else has to be stored.
"""
