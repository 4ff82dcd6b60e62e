"""Remediation: power-cycling, through its own BMC, a machine whose Node did not come back.

:mod:`.policy` decides (a pure function of the host's situation, its pool's health and
the instant); the runtime gathers the situation and turns the verdict into the
provisioner's reboot, a record in the host's book, an Event and a metric.
"""
