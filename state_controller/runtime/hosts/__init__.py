"""The Host reconciler: its inputs (spec, Secrets, host data within bounds), the
provisioning machine's step, remediation's looks, the book written."""
