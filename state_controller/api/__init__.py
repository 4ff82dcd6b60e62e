"""The hoststate.io/v1alpha1 API: pydantic models, names and CRD generation.

Everything a user writes or reads is defined here once; the CRD schemas, the
embedded store's validation and the controller's own parsing all come from
these models, so they cannot drift apart.
"""

GROUP = "hoststate.io"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
