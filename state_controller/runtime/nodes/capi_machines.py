"""Cluster API's Machines, watched only where their CRD is served.

A Machine's ``Updating`` condition is read beside its Node (``updates/adapters/capi.py``)
and holds remediation off the host while Cluster API updates it in place
(``remediation/situation.py``). Most clusters have no Cluster API: before the first
watch, one list of the Machines' metadata asks the API server whether it serves
``machines.cluster.x-k8s.io/v1beta2``. A 404 (no CRD, or one too old to serve v1beta2)
means no watch and no error; a 403 (the controller's role does not grant ``machines``:
a hand-made role) is said once in the log with its fix, and nothing is watched. A CRD
installed later is read from the controller's next start.
"""

from __future__ import annotations

import logging

from ...cluster.interface import CAPI_MACHINES, ApiError, Cluster, NotFound
from ..machinery.informer import Handler, Informer

log = logging.getLogger(__name__)


def served(cluster: Cluster) -> bool:
    """Whether Cluster API's Machines can be read here (see the module's words)."""
    try:
        cluster.list(CAPI_MACHINES, None, metadata_only=True)
    except NotFound:
        return False
    except ApiError as err:
        if err.code != 403:
            raise
        log.warning(
            "Cluster API Machines are not read: %s. Grant get, list and watch on "
            "machines.cluster.x-k8s.io to the controller's ClusterRole (the chart's and "
            "manifests/' do) to read their in-place updates",
            err.message,
        )
        return False
    return True


class CapiMachines:
    """The Machines' informer, and whether it is started at all."""

    def __init__(self, cluster: Cluster, handler: Handler) -> None:
        self.cluster = cluster
        self.informer = Informer(cluster, CAPI_MACHINES, None, handlers=[handler])
        self._served: bool | None = None  # asked once, before the first start

    def informers(self) -> list[Informer]:
        if self._served is None:
            self._served = served(self.cluster)
            if self._served:
                log.info("reading Cluster API Machines' in-place updates (%s)", CAPI_MACHINES)
        return [self.informer] if self._served else []
