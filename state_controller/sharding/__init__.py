"""Hosts shared out across replicas: a ring over the replicas' Leases, a label per host."""
