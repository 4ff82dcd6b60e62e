"""Where a Host may send the backend: the operator's limits on BMC and image addresses.

A Host's author names addresses the backend then contacts from where it runs (Ironic's
conductor, inside the cluster, or the BMC it tells to fetch): ``spec.bmc.address``,
``spec.image.url``, a checksum URL in ``spec.image.checksum`` and each
``spec.firmwareUpdates[].url``. Left open, that lets anyone who may create a
Host make the conductor connect anywhere it can: the cloud's metadata service
(169.254.169.254), the conductor's own loopback services, a ``file://`` path on its disk.
:class:`Reach` is the operator's answer, checked before anything is sent:

* loopback, link-local and "this host" addresses (and the names ``localhost`` and
  ``metadata.google.internal``) are refused unless an allowlist names them;
* ``--allow-bmc`` and ``--allow-image-host`` (CIDRs, names, ``*.zone``) restrict BMCs and
  image servers to what they list; without them, any other address is let through. A
  firmware image is an image: its URL is held to ``--allow-image-host`` (Ironic fetches
  it to serve it to the BMC, or hands the BMC the URL: either way a server on the
  provisioning side is reached, as for an OS image);
* ``file://`` images only with ``--allow-file-images``.

A name is matched as written, never resolved: the controller's resolver is not the
conductor's, and an answer checked now may change before the conductor asks (DNS
rebinding). To bound where names lead, allow only names of a zone you control, and keep
a NetworkPolicy on the conductor. An address the C library would read as IPv4
(``127.1``, ``0x7f000001``, ``2130706433``) is read as that address here too.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from .bmc import BMCAddressError, parse_bmc_address
from .host import CHECKSUM_URL_PATTERN, HostSpec

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address

# What no Host may reach unless an allowlist names it.
DENIED_NETWORKS: dict[str, tuple[Network, ...]] = {
    "a loopback address": (ipaddress.ip_network("127.0.0.0/8"), ipaddress.ip_network("::1/128")),
    "a link-local address (where cloud metadata services answer)": (
        ipaddress.ip_network("169.254.0.0/16"),
        ipaddress.ip_network("fe80::/10"),
    ),
    "an address of 'this host'": (
        ipaddress.ip_network("0.0.0.0/8"),
        ipaddress.ip_network("::/128"),
    ),
}
DENIED_NAMES = (
    "localhost",
    "localhost.localdomain",
    "ip6-localhost",
    "ip6-loopback",
    "metadata.google.internal",
)
ALLOW_BMC, ALLOW_IMAGE_HOST, ALLOW_FILE_IMAGES = (
    "--allow-bmc",
    "--allow-image-host",
    "--allow-file-images",
)
SHOWN_ENTRIES = 5  # allowed entries a refusal lists


def address_of(host: str) -> Address | None:
    """``host`` as an IP address, in any spelling a connection would accept; None for a
    name. IPv4-mapped IPv6 addresses are their IPv4 address."""
    try:
        found: Address = ipaddress.ip_address(host)
    except ValueError:
        try:  # inet_aton: the forms getaddrinfo takes as numbers (127.1, 0x7f.1, 2130706433)
            found = ipaddress.IPv4Address(socket.inet_aton(host))
        except (OSError, UnicodeError, ValueError):
            return None
    if isinstance(found, ipaddress.IPv6Address) and found.ipv4_mapped is not None:
        return found.ipv4_mapped
    return found


def _name(host: str) -> str:
    return host.lower().rstrip(".")


@dataclass(frozen=True)
class Allowlist:
    """Networks and names an operator allows; empty: anything not denied by default."""

    networks: tuple[Network, ...] = ()
    names: tuple[str, ...] = ()  # "bmc.example.com", or ".example.com" for any name in it
    written: tuple[str, ...] = ()  # as the operator wrote them, for messages

    @classmethod
    def parse(cls, entries: Iterable[str], flag: str) -> Allowlist:
        """From flag values: each a CIDR, an address, a name or ``*.zone``; a bad one is a
        ``ValueError`` naming the flag and how to write it."""
        networks: list[Network] = []
        names: list[str] = []
        written: list[str] = []
        for raw in entries:
            for entry in (e.strip() for e in raw.split(",")):
                if not entry:
                    continue
                written.append(entry)
                try:
                    networks.append(ipaddress.ip_network(entry, strict=False))
                    continue
                except ValueError:
                    pass
                name = _name(entry)
                zone = name[1:] if name.startswith("*.") else name
                labels = zone.lstrip(".").split(".")
                if not all(lbl.isascii() and lbl.replace("-", "").isalnum() for lbl in labels):
                    raise ValueError(
                        f"{flag} {entry!r}: write a CIDR (10.0.0.0/16), an address, a host "
                        "name (bmc-1.example.com) or a zone (*.example.com)"
                    )
                names.append(zone)
        return cls(tuple(networks), tuple(names), tuple(written))

    def __bool__(self) -> bool:
        return bool(self.networks or self.names)

    def admits(self, host: str) -> bool:
        address = address_of(host)
        if address is not None:
            return any(address in network for network in self.networks)
        name = _name(host)
        return any(name == n or (n.startswith(".") and name.endswith(n)) for n in self.names)

    def shown(self) -> str:
        listed = ", ".join(self.written[:SHOWN_ENTRIES])
        more = len(self.written) - SHOWN_ENTRIES
        return listed + (f" and {more} more" if more > 0 else "")


def denied_by_default(host: str) -> str:
    """What kind of address no Host reaches by default ("" when ``host`` is none)."""
    address = address_of(host)
    if address is None:
        name = _name(host)
        if name in DENIED_NAMES or name.endswith(".localhost"):
            return "a loopback or cloud metadata name"
        return ""
    for kind, networks in DENIED_NETWORKS.items():
        if any(address in network for network in networks):
            return kind
    return ""


@dataclass(frozen=True)
class Reach:
    """The operator's limits on where Hosts send the backend; the default refuses only
    loopback, link-local and ``file://``."""

    bmc: Allowlist = Allowlist()
    images: Allowlist = Allowlist()
    file_images: bool = False

    def problem(self, spec: HostSpec) -> str:
        """The first address of ``spec`` the backend may not be sent to ("" if none)."""
        return self._bmc_problem(spec) or self._image_problem(spec) or self._firmware_problem(spec)

    def _bmc_problem(self, spec: HostSpec) -> str:
        if spec.bmc is not None:
            try:
                host = parse_bmc_address(spec.bmc.address).host
            except BMCAddressError:
                host = ""  # the spec's own check says what is wrong with it
            return host and _refused(host, "spec.bmc.address", self.bmc, ALLOW_BMC)
        return ""

    def _image_problem(self, spec: HostSpec) -> str:
        if spec.image is None:
            return ""
        url = spec.image.url
        if url.startswith("file:"):
            if not self.file_images:
                return (
                    "spec.image.url: a file:// image is read from the Ironic conductor's own "
                    "disk, which Hosts may not name here; serve the image over https, or ask "
                    f"the operator to start hoststate with {ALLOW_FILE_IMAGES}"
                )
        else:
            problem = _url_refused(url, "spec.image.url", self.images)
            if problem:
                return problem
        checksum = spec.image.checksum
        if _is_url(checksum):
            return _url_refused(checksum, "spec.image.checksum", self.images)
        return ""

    def _firmware_problem(self, spec: HostSpec) -> str:
        """The first firmware image URL (``http(s)://`` by the spec's own check) whose
        server is not to be reached."""
        for index, update in enumerate(spec.firmware_updates or ()):
            problem = _url_refused(update.url, f"spec.firmwareUpdates[{index}].url", self.images)
            if problem:
                return problem
        return ""


def _is_url(value: str) -> bool:
    return re.fullmatch(CHECKSUM_URL_PATTERN, value) is not None


def _url_refused(url: str, field: str, allowed: Allowlist) -> str:
    """Why the server of an image's ``url`` may not be reached ("" when it may). A URL
    this parser cannot read, or one that names no host, is refused: another parser (the
    conductor's, a BMC's) might read a host into it that was never checked."""
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        host = ""
    if not host:
        return (
            f"{field}: {url[:64]!r} names no server hoststate can read; write http(s)://HOST/PATH"
        )
    return _refused(host, field, allowed, ALLOW_IMAGE_HOST)


def _refused(host: str, field: str, allowed: Allowlist, flag: str) -> str:
    """Why ``host`` may not be reached ("" when it may)."""
    if allowed.admits(host):
        return ""
    kind = denied_by_default(host)
    if kind:
        return (
            f"{field}: {host} is {kind}, which no Host may make the backend reach; use "
            f"another address, or ask the operator to allow it with {flag}"
        )
    if allowed:
        how = (
            "its address is not in them"
            if address_of(host) is not None
            else "a name is matched as written, not resolved"
        )
        return (
            f"{field}: {host} is not among the hosts the operator allows ({flag}: "
            f"{allowed.shown()}; {how}); use an allowed one, or ask the operator to add it"
        )
    return ""
