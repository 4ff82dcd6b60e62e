"""Bootstrap: a cluster's first hosts provisioned before the cluster exists, their books
kept in a state directory until ``pivot`` moves them in (see ``session.py``)."""

from .session import BootstrapOptions, run_bootstrap

__all__ = ["BootstrapOptions", "run_bootstrap"]
