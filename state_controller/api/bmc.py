"""BMC addresses: which protocols exist and what a well-formed address looks like.

Users write ``spec.bmc.address`` as a URL whose scheme names the management
protocol (``ipmi://10.0.0.5:623``, ``redfish://bmc.example/redfish/v1/Systems/1``).
The CRD schema checks the shape and the known types (one CEL rule whose message
says what to write); :func:`parse_bmc_address` gives the precise verdict (port,
host) with a message that says how to fix the address.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import _CacheInfo, lru_cache
from urllib.parse import urlsplit

# scheme -> default port (None: the protocol's usual HTTPS port is implied)
BMC_SCHEMES: dict[str, int | None] = {
    "ipmi": 623,
    "redfish": None,
    "redfish+http": None,
    "redfish+https": None,
    "redfish-virtualmedia": None,
    "redfish-virtualmedia+http": None,
    "redfish-virtualmedia+https": None,
    "idrac": None,
    "idrac-redfish": None,
    "idrac-virtualmedia": None,
    "ilo4": None,
    "ilo5": None,
    "ilo5-redfish": None,
    "irmc": None,
}

_SHAPE = r"^[a-z0-9][a-z0-9+.-]*://[^\s/]+(/\S*)?$"
_ADDRESS_RE = re.compile(_SHAPE)
# The shape with a known type, enforced by the CRD schema too: <type>://host[:port][/path]
ADDRESS_PATTERN = (
    "^(" + "|".join(re.escape(s) for s in sorted(BMC_SCHEMES)) + r")://[^\s/]+(/\S*)?$"
)
ADDRESS_FIX = (
    "write it as <type>://<host>[:port][/path] with <type> one of "
    + ", ".join(sorted(BMC_SCHEMES))
    + ", e.g. ipmi://192.0.2.10:623"
)


class BMCAddressError(ValueError):
    """The address cannot be used; the message says what to write instead."""


@dataclass(frozen=True)
class BMCAddress:
    scheme: str
    host: str
    port: int | None
    path: str

    @property
    def protocol(self) -> str:
        """``ipmi``, ``redfish``, …: the scheme without transport or media suffixes."""
        return self.scheme.split("+", 1)[0].replace("-virtualmedia", "")


CACHE_SIZE = 1024  # addresses kept
CACHED_LENGTH = 256  # the longest address kept


def parse_bmc_address(address: str) -> BMCAddress:
    """The address's parts, or :class:`BMCAddressError` saying how to write it.

    The address is a tenant's string, so what the cache keeps of it is bounded: a
    reconcile parses twice, the cache saves a small share of its time, and no more than
    that is worth memory. Only addresses of at most :data:`CACHED_LENGTH` characters (any
    real BMC's) are kept, at most :data:`CACHE_SIZE` of them, whatever tenants write. A
    longer one is parsed every time (``urlsplit`` keeps its own 128 answers). The costs
    and the memory, measured, are in docs/security.md (bounded memory for tenant input).
    """
    if len(address) <= CACHED_LENGTH:
        return _parse_cached(address)
    return _parse(address)


def cache_info() -> _CacheInfo:
    return _parse_cached.cache_info()


def cache_clear() -> None:
    _parse_cached.cache_clear()


def _parse(address: str) -> BMCAddress:
    example = "e.g. ipmi://192.0.2.10:623 or redfish://bmc.example.com/redfish/v1/Systems/1"
    if not _ADDRESS_RE.match(address):
        raise BMCAddressError(
            f"spec.bmc.address {address!r} is not of the form <type>://<host>[:port][/path]; "
            f"write it as a URL, {example}"
        )
    parts = urlsplit(address)
    scheme = parts.scheme
    if scheme not in BMC_SCHEMES:
        known = ", ".join(sorted(BMC_SCHEMES))
        raise BMCAddressError(
            f"spec.bmc.address uses unknown BMC type {scheme!r}; use one of: {known}"
        )
    try:
        port = parts.port
    except ValueError:
        raise BMCAddressError(
            f"spec.bmc.address {address!r} has an invalid port; use a number from 1 to 65535"
        ) from None
    host = parts.hostname or ""
    if not host:
        raise BMCAddressError(f"spec.bmc.address {address!r} has no host; {example}")
    if port is None:
        port = BMC_SCHEMES[scheme]
    return BMCAddress(scheme=scheme, host=host, port=port, path=parts.path)


_parse_cached = lru_cache(maxsize=CACHE_SIZE)(_parse)
