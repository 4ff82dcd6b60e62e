"""The controller that runs every reconcile: the manager (``controller``) over the
reconcilers by kind, over one status writer, over the machinery (informers, queue, leases)."""
