"""Who an event concerns: which machines exist (by name, UID and Secret), and the Nodes
by pool."""
