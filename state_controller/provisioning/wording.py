"""Sentences every backend uses for the same trouble, so a user reads one
sentence whichever backend runs (Ironic, or the simulated hardware)."""

from __future__ import annotations


def unfetchable_checksum(url: str, reason: str, *, fetcher: str = "Ironic") -> str:
    """The sentence for a checksum file (``spec.image.checksum`` as a URL) that ``fetcher``
    could not download: which file, why, and the two ways out."""
    return (
        f"{fetcher} could not fetch the checksum file {url} named in spec.image.checksum: "
        f"{reason}; make it reachable from {fetcher} or put the checksum itself in "
        "spec.image.checksum"
    )
