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

BMO = "baremetal-operator v0.13.2, pkg/hardwareutils/bmc/"


@dataclass(frozen=True)
class BMCType:
    """One BMC type baremetal-operator registers (``RegisterFactory``): the Ironic
    hardware type it drives, the boot interface it asks for (None: Ironic's default for
    that hardware type), whether it also takes ``+http``/``+https``, and where it is
    registered."""

    name: str
    driver: str
    boot_interface: str | None
    transports: bool
    source: str


# Every type baremetal-operator v0.13.2 accepts, and nothing else: the Host speaks its
# BareMetalHost's addresses as they are. Each +http/+https form is the same type over
# that transport (access.go RegisterFactory: "<name>+<scheme>").
BMC_TYPES: tuple[BMCType, ...] = (
    BMCType("ipmi", "ipmi", None, False, BMO + "ipmi.go:9"),
    BMCType("libvirt", "ipmi", None, False, BMO + "ipmi.go:10"),
    BMCType("redfish", "redfish", None, True, BMO + "redfish.go:11"),
    BMCType("ilo5-redfish", "redfish", None, True, BMO + "redfish.go:12"),
    BMCType("idrac-redfish", "idrac", None, True, BMO + "redfish.go:13"),
    BMCType("redfish-virtualmedia", "redfish", "redfish-virtual-media", True,
            BMO + "redfish_virtualmedia.go:9"),
    BMCType("ilo5-virtualmedia", "redfish", "redfish-virtual-media", True,
            BMO + "redfish_virtualmedia.go:10"),
    BMCType("idrac-virtualmedia", "idrac", "idrac-redfish-virtual-media", True,
            BMO + "idrac_virtualmedia.go:15"),
    BMCType("redfish-uefihttp", "redfish", "redfish-https", True, BMO + "redfish_https.go:10"),
)  # fmt: skip

# scheme -> its type: the name, and name+http and name+https where the type takes them
TYPE_OF: dict[str, BMCType] = {
    scheme: kind
    for kind in BMC_TYPES
    for scheme in (
        (kind.name, f"{kind.name}+http", f"{kind.name}+https") if kind.transports else (kind.name,)
    )
}
# scheme -> default port (None: the protocol's usual HTTPS port is implied)
BMC_SCHEMES: dict[str, int | None] = {
    scheme: 623 if kind.driver == "ipmi" else None for scheme, kind in TYPE_OF.items()
}
# Types earlier baremetal-operator releases registered and v0.13.2 does not (their
# Ironic hardware types are gone from Ironic): what to write instead.
REMOVED: dict[str, str] = {
    "ilo4": "redfish:// (or ipmi://)",
    "ilo5": "ilo5-redfish://",
    "irmc": "redfish:// (or ipmi://)",
    "idrac": "idrac-redfish://",
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
    def kind(self) -> BMCType:
        """The BMC type the scheme names (the parse took only known schemes)."""
        return TYPE_OF[self.scheme]

    @property
    def transport(self) -> str:
        """``http`` for a ``+http`` scheme, else ``https``."""
        return "http" if self.scheme.endswith("+http") else "https"


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


_SCHEME_OPAQUE = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):(?!/)(.*)$")


def as_baremetal_operator_reads(address: str) -> str:
    """The URL baremetal-operator v0.13.2 makes of an address written without ``://``
    (pkg/hardwareutils/bmc/access.go, GetParsedURL, lines 99-145): a bare host, IP:port
    or [IPv6]:port is IPMI (``192.0.2.10:623`` is ``ipmi://192.0.2.10:623``), and
    ``type:host`` is ``type://host``. What Go's url.Parse takes for a scheme (a letter
    first, then letters, digits, ``+``, ``-``, ``.``, then ``:``) is one here too, so
    ``bmc.example:623`` is the unknown type ``bmc.example`` in both. A Host names the
    type; ``convert`` writes this form for a BareMetalHost's bare address."""
    if "://" in address:
        return address
    opaque = _SCHEME_OPAQUE.match(address)
    if opaque:
        return f"{opaque[1]}://{opaque[2]}"
    if ":/" in address or not address:
        return address
    return "ipmi://" + address


def _parse(address: str) -> BMCAddress:
    example = "e.g. ipmi://192.0.2.10:623 or redfish://bmc.example.com/redfish/v1/Systems/1"
    read_as = as_baremetal_operator_reads(address)
    if read_as != address and _ADDRESS_RE.match(read_as) and urlsplit(read_as).scheme in TYPE_OF:
        raise BMCAddressError(
            f"spec.bmc.address {address!r} is not a <type>://<host> URL; write {read_as!r}, "
            "which is how baremetal-operator v0.13.2 reads it"
        )
    if not _ADDRESS_RE.match(address):
        raise BMCAddressError(
            f"spec.bmc.address {address!r} is not of the form <type>://<host>[:port][/path]; "
            f"write it as a URL, {example}"
        )
    parts = urlsplit(address)
    scheme = parts.scheme
    if scheme.split("+", 1)[0] in REMOVED:
        instead = REMOVED[scheme.split("+", 1)[0]]
        raise BMCAddressError(
            f"spec.bmc.address uses BMC type {scheme!r}, which baremetal-operator v0.13.2 "
            f"and Ironic no longer have; write {instead} for the same machine"
        )
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
