"""How what goes wrong in Ironic is told: its error texts read, and turned into sentences.

Ironic words a problem three ways: an HTTP error body (``faultstring``, parsed by
:func:`fault_text`), a 409 whose phrase says whether it passes by itself
(:func:`passes_by_itself`), and a node's ``last_error`` after a failed step
(:func:`readable`). Every sentence here names what the user can change (a field of the
Host, the credentials Secret, Ironic's configuration); Ironic's own words are always kept
next to it as the result's details, which only the operator's log shows. :func:`scrub`
makes sure neither carries the BMC password, whatever Ironic wrote.

A sentence never quotes Ironic's text: that text quotes what a BMC, an image server or a
checksum URL answered, and a Host's author chooses those addresses, so a quote would make
Ironic a scanner of every network it reaches, reading back banners and pages. A sentence
says only which known failure it was (the BMC rejected the credentials, did not answer,
the image does not exist); anything else is :data:`NOT_SHOWN`.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

from ...api.host import unfetchable_checksum
from ..provisioner import HostView
from ..results import Result
from .scrubbing import scrub_text


class Answer(Exception):
    """Ends an operation early with this result (a refusal, an outage, a failure)."""

    def __init__(self, result: Result) -> None:
        super().__init__(result.message)
        self.result = result


def fault_text(data: Any) -> str:
    """Ironic's error text: ``{"error_message": "<JSON with a faultstring>"}``, parsed twice."""
    if isinstance(data, dict):
        inner: Any = data.get("error_message", data)
        if isinstance(inner, str):
            try:
                inner = json.loads(inner)
            except ValueError:
                return str(inner)
        if isinstance(inner, dict):
            return str(inner.get("faultstring") or inner.get("message") or "")
        return ""
    return str(data or "")


# -- 409s -------------------------------------------------------------------------------

_LOCKED_BY = re.compile(r"locked by host ([^,\s]+)")
# Ironic's 409s that end by themselves: the node's lock is held (NodeLocked: "... is locked
# by host X, please retry ..."), or the node is between two provision states and may not be
# updated until it arrives ("Node X can not be updated while a state transition is in
# progress.", 'Cannot update node "X" while it is in state "inspecting".').
_TRANSITION_WORDS = ("state transition is in progress", "while it is in state")
_PASSING_WORDS = ("locked by host", "please retry", "try again", *_TRANSITION_WORDS)


def _says(fault: str, phrases: tuple[str, ...]) -> bool:
    lowered = fault.lower()
    return any(phrase in lowered for phrase in phrases)


def passes_by_itself(fault: str) -> bool:
    """A 409 that passes by itself (a lock, a transition under way), not a refusal."""
    return _says(fault, _PASSING_WORDS)


def conflict_message(fault: str) -> str:
    """What a 409 that passes by itself means: who holds the node, or that it is moving."""
    match = _LOCKED_BY.search(fault)
    if match:  # the conductor holding the lock: Ironic's own name for it
        return f"the Ironic node is locked by {match.group(1)} for another operation"
    if _says(fault, _TRANSITION_WORDS):
        return "the Ironic node is changing state and cannot be updated until it is done"
    return "Ironic asked to retry later"


def connection_trouble(error: Exception) -> str:
    """A connection error in a few words ("connection refused", "timed out")."""
    reason = getattr(error, "reason", None) or error
    text = str(reason)
    for marker in ("Connection refused", "timed out", "Name or service not known", "reset"):
        if marker in text:
            return marker.lower() if marker != "reset" else "connection reset"
    return type(reason).__name__


# -- last_error -------------------------------------------------------------------------

# What Ironic writes when it gives up on an operation because it restarted while the
# operation ran (the conductor that held it is gone).
INTERRUPTED = "can't be resumed by conductor"


# Ironic's words when it fetches a checksum file itself (image_download_source "local";
# ironic/common/checksum_utils.py and image_service.py, Ironic 39.0.0):
#   ImageDownloadFailed: "Failed to download image <url>, reason: <requests' error>"
#     (unreachable, or a file it cannot read a checksum from), and
#   ImageRefValidationFailed: "Validation of image href <url> failed, reason: Got HTTP
#     code 404 instead of 200 in response to GET request." (any status but 200),
# both with the checksum file's URL as the "image"; the deploy then fails with
# "Failed to prepare to deploy: " and that text as last_error.
_CHECKSUM_FETCH = r"(?:download image|image href) {url}(?:,| failed,) reason: (.*)"
_HTTP_CODE = re.compile(r"HTTP code (\d{3})\b")
_NETWORK_TROUBLE = (
    "Name or service not known",
    "Temporary failure in name resolution",
    "Connection refused",
    "No route to host",
    "timed out",
)


def _checksum_file_trouble(last_error: str, checksum_url: str) -> str | None:
    """The sentence for a failure to fetch ``checksum_url``, if ``last_error`` is one."""
    if not checksum_url.startswith(("http://", "https://")):
        return None
    match = re.search(_CHECKSUM_FETCH.format(url=re.escape(checksum_url)), last_error)
    if match is None:
        return None
    reason = match.group(1)
    trouble = next((words for words in _NETWORK_TROUBLE if words in reason), None)
    if trouble is None:  # never the file's contents or a server's words: its HTTP code
        code = _HTTP_CODE.search(reason)
        trouble = f"HTTP {code.group(1)}" if code else "it held no checksum Ironic could read"
    return unfetchable_checksum(checksum_url, trouble)


# Ironic's text is read for a reason within its first READ_MAX characters: enough for
# any of its messages, and a bound on what a pattern costs whatever a BMC, an image server
# or a tenant's URL made it quote. A pattern that needs a phrase somewhere after another
# commits to the first occurrence of the first phrase on a line (an atomic group): tried
# from every occurrence, "checksum " * 6700 took 5.7 s, now 2 ms (60 KB, uncut).
READ_MAX = 4096
_LINE = r"[^\n]*?"  # what "." matches, as few as possible


def _after_first(first: str, then: str, flags: int = 0) -> re.Pattern[str]:
    """``first`` then, later on the same line, ``then``; linear in the text."""
    return re.compile(f"^(?>{_LINE}{first}){_LINE}{then}", flags | re.MULTILINE)


# The two sentences about the BMC itself (also the reasons a power action names).
BMC_REJECTED = (
    "the BMC rejected the credentials; check username and password in the credentials Secret"
)
BMC_SILENT = "the BMC did not answer; check spec.bmc.address and that Ironic can reach the BMC"

_REASONS: tuple[tuple[re.Pattern[str], str], ...] = (
    # a failed service step: Ironic names the step first; what follows quotes the BMC
    (
        re.compile(r"failed step \{'interface': 'firmware', 'step': 'update'"),
        "the BMC did not complete the firmware update; check the image at "
        "spec.firmwareUpdates[].url and that the BMC can fetch it",
    ),
    (
        re.compile(r"failed step \{'interface': 'bios'"),
        "the BMC refused the firmware settings; check spec.firmwareSettings against what "
        "the HostState's status.firmware shows",
    ),
    (
        re.compile(r"failed step \{'interface': 'raid'"),
        "the RAID controller refused the volumes; check spec.raid against the host's disks",
    ),
    (
        _after_first(r"image href (\S+) failed", "(Connection refused|Name or service not known)"),
        "Ironic could not download the image {0} ({1}); check spec.image.url and that the "
        "image server is reachable from Ironic",
    ),
    (
        _after_first(r"image href (\S+) failed", "(404|Not Found)"),
        "the image {0} does not exist (HTTP 404); check spec.image.url",
    ),
    (
        re.compile(r"image href (\S+) failed"),
        "Ironic could not validate the image {0}; check spec.image.url",
    ),
    # an oci:// image: Ironic's registry client calls the registry's API root, /v2/
    # ("Max retries exceeded with url: /v2/ (Caused by NewConnectionError(... Connection
    # refused))", Ironic 39.0.0), before any BMC is involved
    (
        _after_first(
            r"ConnectionPool\(host='([^']+)', port=(\d+)\): Max retries exceeded with url: /v2/",
            "(Connection refused|Name or service not known|timed out)",
        ),
        "Ironic could not reach the OCI registry {0}:{1} of spec.image.url ({2}); check "
        "spec.image.url and that the registry is reachable from Ironic",
    ),
    (
        re.compile(r"url: /v2/"),
        "Ironic could not use the OCI registry of spec.image.url; check spec.image.url, "
        "spec.image.ociAuthSecretName and that the registry is reachable from Ironic",
    ),
    (
        _after_first("checksum", "(mismatch|does not match|did not match)", re.I),
        "the image's checksum did not match spec.image.checksum",
    ),
    (
        re.compile(r"Timeout reached while inspecting"),
        "the inspection ramdisk never reported back; check that the host boots from the "
        "provisioning network and can reach Ironic",
    ),
    (
        re.compile(r"Timeout reached while waiting for callback|callback timeout", re.I),
        "the deploy ramdisk never called back; check that the host boots from the "
        "provisioning network and can reach Ironic",
    ),
    (
        re.compile(re.escape(INTERRUPTED)),
        "Ironic restarted while the operation ran",
    ),
    (
        re.compile(r"\b401\b|Unauthorized|[Aa]uthentication fail|[Ii]nvalid credentials"),
        BMC_REJECTED,
    ),
    (
        re.compile(r"Connection refused|timed out|No route to host|Unable to connect"),
        BMC_SILENT,
    ),
    (
        # a driver_info Ironic cannot use: a missing or malformed field, an interface that
        # needs settings the host does not give ("Missing the following Redfish properties")
        re.compile(
            r"Failed to validate (\w+) driver interface for node \S+ Error: "
            r"((?:[^.\n]|\.(?=\S))+\.?)"  # its first sentence; a dot in a word or URL is no end
        ),
        "Ironic cannot use the {0} settings made from spec.bmc and the credentials Secret: {1}",
    ),
)


NOT_SHOWN = "Ironic's words are in hoststate's log (not shown here: they may quote a remote server)"


def readable(last_error: str, *, checksum_url: str = "") -> str:
    """A sentence for users from Ironic's ``last_error`` (which is kept as the details).

    A known failure becomes a sentence that names what to check; any other is
    :data:`NOT_SHOWN` (see the module's docstring). ``checksum_url`` is the node's
    ``instance_info.image_checksum``: Ironic names a checksum file it could not fetch as
    an image, so only that URL tells the two apart. Only the first :data:`READ_MAX`
    characters are read.
    """
    last_error = last_error[:READ_MAX]
    checksum_trouble = _checksum_file_trouble(last_error, checksum_url)
    if checksum_trouble is not None:
        return checksum_trouble
    for pattern, text in _REASONS:
        match = pattern.search(last_error)
        if match:
            return text.format(*match.groups())
    return NOT_SHOWN if last_error.strip() else "Ironic gave no reason"


def registration_message(host: HostView, last_error: str) -> str:
    """A BMC that Ironic could not validate, named by its address, with the reason."""
    reason = readable(last_error)
    port = f":{host.bmc.port}" if host.bmc.port else ""
    return f"could not validate the BMC at {host.bmc.host}{port}: {reason}"


def power_message(verb: str, last_error: str) -> str:
    """A power action the BMC did not carry out (``verb``: "power on", "reboot" ...): the
    reason when Ironic's words say the BMC rejected the credentials or did not answer,
    else that it may be busy or misconfigured."""
    reason = readable(last_error) if last_error else ""
    if reason in (BMC_REJECTED, BMC_SILENT):
        return f"the BMC did not {verb} the host: {reason}"
    return f"the BMC did not {verb} the host; it may be busy or misconfigured"


def adopted_message(lost: bool) -> str:
    """What adopting a running host meant: a first registration, or a node Ironic lost."""
    if lost:
        return (
            "Ironic had lost this host's node (its database reset, or the node deleted); "
            "adopted the running host again, without deploying it"
        )
    return "registered the running host in Ironic and adopted it, without deploying it"


def scrub(result: Result, password: str) -> Result:
    """No message or detail may carry the BMC password, in any form Ironic wrote it
    (:mod:`.scrubbing`). A message quotes Ironic's words (the details): what is masked
    there is masked where the message quotes them too."""
    message, details = result.message, scrub_text(result.details, password)
    quoted = message.rfind(result.details) if details != result.details else -1
    if quoted >= 0:
        message = message[:quoted] + details + message[quoted + len(result.details) :]
    message = scrub_text(message, password)
    if message == result.message and details == result.details:
        return result
    return replace(result, message=message, details=details)
