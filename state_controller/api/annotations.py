"""Annotations the controller understands on a Host (all under ``hoststate.io/``)."""

PREFIX = "hoststate.io/"

PAUSED = PREFIX + "paused"
"""Present: do nothing and write nothing (used while moving objects between clusters), but
keep the HostState's status in its :data:`STATUS` annotation, for a move to carry."""

DELETE_FOR_MOVE = "clusterctl.cluster.x-k8s.io/delete-for-move"
"""Set by ``clusterctl move`` on each source object just before it deletes it (Cluster API
v1.14.2, ``cmd/clusterctl/api/v1alpha3/annotations.go``, ``DeleteForMoveAnnotation``;
``cmd/clusterctl/client/cluster/mover.go``, ``deleteSourceObject``). The object lives on in
the target: a Host carrying it is left alone, never deprovisioned, and its finalizer is
released with nothing done to the machine."""

DETACHED = PREFIX + "detached"
"""Present: forget the host in the backend without deprovisioning; removing it resumes.
Its value, as baremetal-operator's: ``{"deleteAction": "delete"|"delay", "force": bool}``;
without ``force`` a host mid-operation is forgotten once at rest
(:mod:`..provisioning.power_requests`)."""

STATUS = PREFIX + "status"
"""A JSON copy of ``Host.status``; restores the status when the status is empty. On a
HostState, a JSON copy of its status that the controller keeps while the host is paused
(:mod:`..runtime.writing.saved_status`), for a move that drops statuses (clusterctl)."""

MOVED_FROM = PREFIX + "moved-from"
"""Set by ``pivot`` on the Host it creates, naming where it comes from, until the move ends."""

HARDWARE_DETAILS = PREFIX + "hardware-details"
"""JSON hardware details to use when inspection is disabled."""

INSPECT = PREFIX + "inspect"
"""``disabled``: skip inspection. Any other value (or empty): inspect again when idle."""

REBOOT = PREFIX + "reboot"
"""Present: power-cycle the host once, then the controller removes the annotation.
Its value: ``{"mode": "soft"|"hard"}`` (hard unless it says soft)."""

INSPECT_DISABLED = "disabled"

ADOPTED_FROM = PREFIX + "adopted-from"
"""Set by ``adopt`` on the Host it creates: the uid of the metal3 BareMetalHost whose
machine it drives now (the controller records the handover when it restores the status)."""

HANDED_OVER_TO = PREFIX + "handed-over-to"
"""Set by ``adopt`` on a metal3 BareMetalHost, beside baremetal-operator's paused
annotation: ``Host <namespace>/<name>``, the Host that drives its machine now."""

HOST_LABEL = PREFIX + "host"
"""A label on the HostState of a Host: the Host's name."""

BAREMETALHOST = PREFIX + "baremetalhost"
"""A label on the HostState of an observed metal3 BareMetalHost: the BareMetalHost's name."""

BMC_CREDENTIALS = PREFIX + "bmc-credentials"
"""A label, not an annotation: ``true`` on a Secret that holds BMC credentials for Hosts.

Only Secrets carrying it are read (and cached) by the controller: a Host naming any other
Secret of its namespace gets a registration error instead of sending it to a BMC.
"""

BMC_CREDENTIALS_SELECTOR = BMC_CREDENTIALS + "=true"
"""The label selector of the Secrets the controller watches."""

HOST_DATA = PREFIX + "host-data"
"""A label, not an annotation: ``true`` on a Secret that holds data for a Host's deployed
OS (``spec.userData``, ``spec.networkData``, ``spec.metaData``).

A second label beside :data:`BMC_CREDENTIALS`, watched the same way: each Secret says
what it may be used for, so a Secret labelled for user data is never sent to a BMC and
BMC credentials never end up on a machine's config drive.
"""

HOST_DATA_SELECTOR = HOST_DATA + "=true"
"""The label selector of the data Secrets the controller watches."""

FINALIZER = "hoststate.io/host"
"""Keeps a Host until the controller has deprovisioned and deleted it in the backend."""

ALL = (PAUSED, DETACHED, STATUS, MOVED_FROM, HARDWARE_DETAILS, INSPECT, REBOOT, ADOPTED_FROM)
