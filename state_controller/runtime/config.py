"""Controller settings with sane defaults; every one can be set from the command line."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..api.hoststate import Mode
from ..api.reach import Reach
from ..books.book import Limits
from ..books.stuck import StuckPolicy
from ..provisioning.backoff import Backoff
from ..remediation.policy import RemediationPolicy
from ..sharding.members import Members
from ..updates.signals import DEFAULT_POOL_LABEL


@dataclass(frozen=True)
class ControllerConfig:
    workers: int = 4
    namespaces: tuple[str, ...] | None = None  # None: all namespaces
    limits: Limits = field(default_factory=Limits)
    stuck: StuckPolicy = field(default_factory=StuckPolicy)
    backoff: Backoff = field(default_factory=Backoff)
    follow_nodes: bool = True  # watch Nodes and follow their updates
    node_state_namespace: str = "hoststate-system"  # where node-only HostStates live
    pool_label: str = DEFAULT_POOL_LABEL  # the label that puts a Node in a pool
    # a Node whose hostname is the name of one Host runs on it (updates/links.py); off:
    # any tenant may name a Host, and only providerID or the hoststate.io/host label prove
    link_nodes_by_hostname: bool = False
    # what the controller watches: Hosts it drives, and/or metal3 BareMetalHosts it
    # observes (written by baremetal-operator; never written here)
    drive_hosts: bool = True
    observe_baremetalhosts: bool = False
    # OpenShift's MachineConfigNodes, read beside the Nodes they describe
    observe_machineconfignodes: bool = False
    # where a Host may send the backend (BMC, image and checksum hosts; file:// images)
    reach: Reach = field(default_factory=Reach)
    # a NodePool's status is written at most this often (seconds): a rollout moves its
    # counts at every node's start and end, and a summary a second old is as good
    pool_status_interval: float = 1.0
    # a MachineConfigPool's degraded count that differs from its Nodes' is told once it
    # has differed this long (seconds): both recount as a rollout moves, a moment apart
    pool_counts_grace: float = 120.0
    # power-cycle a machine whose Node never came back (remediation/); None: off (opt-in)
    remediation: RemediationPolicy | None = None
    # the pools remediated (a Node's pool, by pool_label); None: every pool
    remediation_pools: frozenset[str] | None = None
    # servicing runs (spec.servicingPolicy rolling) under way at once in each node pool
    servicing_max_unavailable: int = 1
    # this replica's shard (runtime/shards/sharder.py): it reconciles only the Hosts labelled with
    # it, and lets go of those drained; "" (the default): not sharded, every Host is its own
    shard: str = ""
    # the shards the operator runs (--shards) and their Lease duration: a Lease is shown
    # as a shard only when they vouch for it (sharding/members.py); None: any shard Lease
    shard_members: Members | None = None
    # the controller's namespace: where its Leases are, and the name of its own status
    # object (HostStateController, cluster-scoped, one per installation)
    lease_namespace: str = "hoststate-system"
    # this replica's name in that object when it is not sharded (a shard is named by its
    # shard); "": the host's name (a pod's)
    replica: str = ""
    # seconds between looks at the controller's own status (written only on a change)
    controller_status_interval: float = 5.0
    # who keeps the books: Bootstrap (state-controller bootstrap, before the cluster exists)
    mode: Mode = Mode.CLUSTER

    @property
    def event_workers(self) -> int | None:
        """The workers that may reconcile items added by events at once: all but one, kept
        for the polls of work under way on the machines (None: no limit, with one)."""
        return self.workers - 1 if self.workers > 1 else None
