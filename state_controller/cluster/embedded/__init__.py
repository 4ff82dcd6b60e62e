"""An in-process object store with the Kubernetes API semantics the controller relies on.

:class:`EmbeddedCluster` lets the controller run (``demo``, ``bootstrap``, tests) without
Kubernetes while exercising the same contract as a real API server: optimistic concurrency,
a status subresource, ``generation``, finalizers, owner-reference garbage collection and
watches that resume from a resourceVersion or fail with :class:`Gone`.

Design choices, each made for speed or for fidelity:

- Objects are stored serialized (``orjson`` bytes), like etcd does. Every read parses a fresh
  copy, so no caller can ever mutate stored state by accident.
- One global resourceVersion counter, bumped by every committed change. Every change is
  exactly one event in a bounded history, so the history holds consecutive versions and a
  watch can resume from any version it still holds.
- Writes are compare-and-swap: the new object is computed (and validated — validators are
  user code) *outside* the lock against a snapshot, then committed under the lock only if
  the stored object is still that snapshot; otherwise the write is recomputed. Under the
  lock there is only bookkeeping, serialization, fan-out and (optionally) sqlite.
- A write that changes nothing is not committed (no new resourceVersion, no event), as the
  API server does.
- With a pruner (see ``EmbeddedCluster``), every write drops the fields the resource's
  schema does not declare before anything else looks at it, as the API server does for a
  request without ``fieldValidation``: a write that only adds unknown fields changes
  nothing, and does not bump ``generation``.
- Unlike the API server, ``create`` keeps a ``status`` given in the body (the API server
  drops it for resources with a status subresource): it makes seeding fixtures simpler.

The package, one module per concern:

- ``store``: :class:`EmbeddedCluster` itself: the lock, the verbs, compare-and-swap;
- ``table``: the committed objects, resourceVersions, deletion and garbage collection,
  every method called under the store's lock;
- ``watch``: the event history, the watchers and the fan-out to them;
- ``persistence``: the optional sqlite file;
- ``semantics``: the API server's rules for one object, as pure functions.
"""

from state_controller.cluster.embedded.semantics import merge_patch
from state_controller.cluster.embedded.store import EmbeddedCluster, ReadOnlyStore

__all__ = ["EmbeddedCluster", "ReadOnlyStore", "merge_patch"]
