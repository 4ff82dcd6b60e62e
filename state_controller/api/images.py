"""A Host's image: where to fetch it, how to check it, and how the backend takes it.

One model, ``spec.image``, as baremetal-operator v0.13.2's ``Image``
(apis/metal3.io/v1alpha1/baremetalhost_types.go) with ``format`` named ``diskFormat``:
an http(s), file or ``oci://`` URL; a checksum required but for a live ISO and an OCI
image; the registry credentials of an OCI image in a Secret
(``ociAuthSecretName``). Each rule stated once, checked by pydantic and by the CRD's CEL
with the same message, each naming its field.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import ConfigDict, Field, JsonValue, ValidationInfo, field_validator

from .base import DNS_SUBDOMAIN, NAME_MAX, Matches, SpecModel

IMAGE_URL_PATTERN = r"^(https?|file|oci)://\S+$"
IMAGE_URL_FIX = (
    "use an http://, https:// or file:// URL, or oci://REGISTRY/REPOSITORY:TAG (or @sha256:DIGEST)"
)

# Hex digits a checksum of each type has; "auto" lets the backend tell them apart.
CHECKSUM_HEX_DIGITS: dict[str, tuple[int, ...]] = {
    "md5": (32,),
    "sha256": (64,),
    "sha512": (128,),
    "auto": (32, 64, 128),
}
CHECKSUM_URL_PATTERN = r"^https?://\S+$"
CHECKSUM_FIX = (
    "write the image's checksum in hex as spec.image.checksumType says (md5: 32 hex digits, "
    "sha256: 64, sha512: 128, auto: any of these), or the http:// or https:// URL of a "
    "checksum file"
)
CHECKSUM_MESSAGE = f"spec.image.checksum: {CHECKSUM_FIX}"
OCI_AUTH_FIX = (
    "spec.image.ociAuthSecretName: name a kubernetes.io/dockerconfigjson Secret in the "
    "Host's namespace labelled hoststate.io/host-data=true (lowercase letters, digits, '-' "
    "and '.')"
)
CHECKSUM_REQUIRED = (
    "spec.image.checksum: give the image's checksum or the URL of a checksum file; only a "
    "live-iso (spec.image.diskFormat) or an oci:// image may go without one"
)
LIVE_ISO = "live-iso"
OCI_SCHEME = "oci://"


def needs_checksum(url: str, disk_format: str | None) -> bool:
    """Whether an image must say its checksum: as baremetal-operator v0.13.2's
    ``Image.GetChecksum`` (apis/metal3.io/v1alpha1/baremetalhost_types.go), every image
    but a live ISO (booted, not written) and an OCI artifact (its registry's digests
    vouch for it)."""
    return disk_format != LIVE_ISO and not url.startswith(OCI_SCHEME)


def unfetchable_checksum(url: str, reason: str, *, fetcher: str = "Ironic") -> str:
    """The sentence for a checksum file (``spec.image.checksum`` as a URL) that ``fetcher``
    could not download: which file, why, and the two ways out. Every backend says it the
    same way, so a user reads one sentence whichever runs (Ironic, or the simulated
    hardware)."""
    return (
        f"{fetcher} could not fetch the checksum file {url} named in spec.image.checksum: "
        f"{reason}; make it reachable from {fetcher} or put the checksum itself in "
        "spec.image.checksum"
    )


HEX_PATTERN = r"^[0-9a-fA-F]+$"


def _checksum_rules() -> list[JsonValue]:
    """The CEL twins of :func:`checksum_fits` and :func:`needs_checksum`, on the image
    object because they read several fields; ``fieldPath`` makes the API server name
    ``spec.image.checksum``."""
    digits = ", ".join(f"'{kind}': {list(n)}" for kind, n in CHECKSUM_HEX_DIGITS.items())
    kind = "has(self.checksumType) ? self.checksumType : 'auto'"
    given = "has(self.checksum) && self.checksum != ''"
    return [
        {
            "rule": f"!({given}) || self.checksum.matches(r'{CHECKSUM_URL_PATTERN}') || "
            f"(self.checksum.matches(r'{HEX_PATTERN}') && "
            f"size(self.checksum) in {{{digits}}}[{kind}])",
            "message": CHECKSUM_MESSAGE,
            "fieldPath": ".checksum",
        },
        {
            "rule": f"({given}) || (has(self.diskFormat) && self.diskFormat == '{LIVE_ISO}') "
            f"|| self.url.startsWith('{OCI_SCHEME}')",
            "message": CHECKSUM_REQUIRED,
            "fieldPath": ".checksum",
        },
    ]


def checksum_fits(checksum: str, checksum_type: str) -> bool:
    """Whether ``checksum`` can be a checksum of ``checksum_type`` (or is a checksum URL)."""
    if re.fullmatch(CHECKSUM_URL_PATTERN, checksum):
        return True
    digits = CHECKSUM_HEX_DIGITS.get(checksum_type, ())
    return re.fullmatch(HEX_PATTERN, checksum) is not None and len(checksum) in digits


class Image(SpecModel):
    """The image to provision: written to disk, or (``diskFormat: live-iso``) booted.

    ``checksum`` must be able to be a checksum of ``checksumType`` (or be the URL
    of a checksum file): a value that cannot match would only fail, late, on the
    machine. It may be left out for a live ISO and an ``oci://`` image, as in
    baremetal-operator. The CRD checks both with the same rules and messages.
    """

    # merged with SpecModel's configuration
    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": _checksum_rules()})

    url: Annotated[
        str,
        Field(
            max_length=4096,
            description="Where to fetch the image: http(s)://, file:// (on the Ironic "
            "conductor), or oci://REGISTRY/REPOSITORY:TAG or @sha256:DIGEST (an OCI "
            "artifact; Ironic 33.0 or newer).",
        ),
        Matches(IMAGE_URL_PATTERN, f"spec.image.url: {IMAGE_URL_FIX}"),
    ]
    checksum_type: Literal["md5", "sha256", "sha512", "auto"] = Field(
        default="auto",
        description="The algorithm of checksum; auto: whichever its length says.",
    )
    disk_format: Literal["raw", "qcow2", "vdi", "vmdk", "live-iso"] | None = None
    checksum: Annotated[
        str,
        Field(
            max_length=4096,
            validate_default=True,  # its absence is checked too
            description="The image checksum in hex (md5: 32 hex digits, sha256: 64, "
            "sha512: 128), or the http(s) URL of a checksum file. Required but for a "
            "live-iso and an oci:// image.",
        ),
    ] = ""
    oci_auth_secret_name: (
        Annotated[str, Field(max_length=NAME_MAX), Matches(DNS_SUBDOMAIN, OCI_AUTH_FIX)] | None
    ) = Field(
        default=None,
        description="For an oci:// image: a Secret in the Host's namespace, labelled "
        "hoststate.io/host-data=true, of type kubernetes.io/dockerconfigjson (or dockercfg), "
        "whose credentials for the image's registry Ironic pulls it with.",
    )

    @field_validator("checksum")
    @classmethod
    def _checksum_fits_its_type(cls, value: str, info: ValidationInfo) -> str:
        """After ``url``, ``checksumType`` and ``diskFormat`` (declared before it): an
        error here is ``spec.image.checksum``'s, as the CRD's ``fieldPath`` says."""
        kind = info.data.get("checksum_type")
        url = info.data.get("url")
        if not value and url is not None and needs_checksum(url, info.data.get("disk_format")):
            raise ValueError(CHECKSUM_REQUIRED)
        if value and kind is not None and not checksum_fits(value, kind):
            raise ValueError(CHECKSUM_MESSAGE)  # (no kind: its own error says why)
        return value
