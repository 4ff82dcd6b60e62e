"""Servicing runs in the controller: slots per pool (fleet-wide when sharded) and the
drain of a serviced host's Node."""
