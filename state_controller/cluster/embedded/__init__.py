"""The embedded cluster: an in-process object store with the Kubernetes API semantics."""

from state_controller.cluster.embedded.semantics import merge_patch
from state_controller.cluster.embedded.store import EmbeddedCluster, ReadOnlyStore

__all__ = ["EmbeddedCluster", "ReadOnlyStore", "merge_patch"]
