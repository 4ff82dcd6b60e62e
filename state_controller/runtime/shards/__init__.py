"""Sharded replicas: the sharder, a shard's side of its handshake, and the lead's share
(what belongs to no shard)."""
