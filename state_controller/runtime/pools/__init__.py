"""The NodePool reconciler: a pool's status from its Nodes' books."""
