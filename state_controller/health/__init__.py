"""The controller's own health: what one replica says of itself, and the one
``HostStateController`` status the replicas' words add up to (pure functions; the
runtime's :mod:`~state_controller.runtime.self_status` reads and writes the object)."""
