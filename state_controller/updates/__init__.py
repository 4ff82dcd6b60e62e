"""Node update progression, MachineConfigNode-style, for every Node.

```
 Node / Pod watch ─► signals ─► adapter ─► Reading ─► progression ─► Book.update_to(...)
                     (what the   (MCO,      (the step   (what changed    (the update cursor,
                      book reads  agent,     it is at)   is recorded)     one chapter per
                      of a Node)  kubelet)                                update)
```

- :mod:`.signals` reduces a Node to what an update is read from; equal
  signals mean nothing to do, so heartbeats stop at the event filter.
- :mod:`.adapters` turn signals into a step, one adapter per agent.
- :mod:`.progression` records each change of step in the book
  (``Book.update_to``), as :mod:`..provisioning.machine` does for
  provisioning; it writes nothing itself.
- :mod:`.links` finds the Host a Node runs on.

The MachineConfigNode vocabulary is a projection of the book
(:mod:`..books.update_conditions`); the step names are API
(:mod:`..api.updates`).
"""
