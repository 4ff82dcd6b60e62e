"""The embedded provisioning reconciler: state machine, provisioner protocol, backends."""
