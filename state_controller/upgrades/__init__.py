"""Node update progression, MachineConfigNode-style, for every Node.

```
 Node / Pod watch ─► signals ─► adapter ─► Reading ─► progression ─► Book.transition(...)
                     (what the   (MCO,      (the step   (what changed    (the update cursor,
                      book reads  agent,     it is at)   is recorded)     one chapter per
                      of a Node)  kubelet)                                update)
```

- :mod:`.signals` reduces a Node to what an update is read from; equal
  signals mean nothing to do, so heartbeats stop at the event filter.
- :mod:`.adapters` turn signals into a step, one adapter per agent.
- :mod:`.conditions` derives the MachineConfigNode vocabulary from the book's
  update cursor: parents ``UpdatePrepared`` … ``Updated``, their children,
  and ``NodeDegraded``.
"""
