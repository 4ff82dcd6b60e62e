"""The embedded provisioning reconciler: the state machine (:mod:`.machine`), the
provisioner protocol and its results, and the backends (:mod:`.simulated`, :mod:`.ironic`)."""
