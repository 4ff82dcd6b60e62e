"""Where a Host may send the backend: what is refused by default, what an allowlist
admits, the spellings of an address that must not slip past, and the flags."""

from __future__ import annotations

from typing import Any

import pytest

from state_controller.api.host import HostSpec
from state_controller.api.reach import (
    ALLOW_BMC,
    ALLOW_IMAGE_HOST,
    Allowlist,
    Reach,
    address_of,
)
from state_controller.cli import build_parser
from state_controller.commands.flags import reach
from state_controller.runtime.hosts.inputs import NOT_ALLOWED, parse_spec

IMAGE = {"url": "http://images.example/os.img", "checksum": "0" * 64, "checksumType": "sha256"}


def spec(address: str = "redfish://bmc.example/redfish/v1/Systems/1", **image: Any) -> HostSpec:
    raw: dict[str, Any] = {"bmc": {"address": address, "credentialsName": "c"}}
    if image:
        raw["image"] = dict(IMAGE, **image)
    return HostSpec.model_validate(raw)


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("redfish://169.254.169.254/redfish/v1/Systems/1", "link-local"),
        ("redfish+http://[fe80::1]/redfish/v1/Systems/1", "link-local"),
        ("ipmi://127.0.0.1", "loopback"),
        ("ipmi://127.1", "loopback"),  # the spellings the C library reads as 127.0.0.1
        ("ipmi://0x7f.1", "loopback"),
        ("ipmi://2130706433", "loopback"),
        ("ipmi://017700000001", "loopback"),
        ("redfish://[::ffff:127.0.0.1]/x", "loopback"),
        ("redfish://[::1]/x", "loopback"),
        ("ipmi://0.0.0.0", "this host"),
        ("ipmi://0", "this host"),
        ("ipmi://localhost", "loopback or cloud metadata name"),
        ("ipmi://LocalHost.", "loopback or cloud metadata name"),
        ("ipmi://api.localhost", "loopback or cloud metadata name"),
        ("redfish://metadata.google.internal/x", "loopback or cloud metadata name"),
    ],
)
def test_default_refuses_loopback_link_local_and_this_host(address: str, kind: str) -> None:
    problem = Reach().problem(spec(address))
    assert problem.startswith("spec.bmc.address: ") and kind in problem, problem
    assert ALLOW_BMC in problem  # the way out, for the operator


@pytest.mark.parametrize(
    "address",
    ["ipmi://10.0.0.5:623", "redfish://bmc-1.example.com/x", "ipmi://[2001:db8::5]", "ipmi://1.2"],
)
def test_default_lets_any_other_address_through(address: str) -> None:
    assert Reach().problem(spec(address)) == ""


def test_image_and_checksum_hosts_are_checked_and_file_images_need_the_flag() -> None:
    default = Reach()
    assert default.problem(spec(**{})) == ""
    file_image = default.problem(spec(url="file:///var/lib/ironic/images/os.img"))
    assert file_image.startswith("spec.image.url: a file:// image") and "--allow-file-images" in (
        file_image
    )
    assert Reach(file_images=True).problem(spec(url="file:///var/lib/ironic/os.img")) == ""
    metadata = default.problem(spec(url="http://169.254.169.254/latest/meta-data/"))
    assert metadata.startswith("spec.image.url: 169.254.169.254 is a link-local address")
    conductor = default.problem(spec(checksum="http://localhost:6385/v1"))
    assert conductor.startswith("spec.image.checksum: localhost is a loopback")
    assert ALLOW_IMAGE_HOST in conductor


def test_an_allowlist_admits_its_networks_and_names_and_refuses_the_rest() -> None:
    policy = Reach(
        bmc=Allowlist.parse(["10.0.0.0/8,*.bmc.example", "rack-1.example"], ALLOW_BMC),
        images=Allowlist.parse(["images.example"], ALLOW_IMAGE_HOST),
    )
    for ok in ("ipmi://10.20.30.40", "ipmi://a.b.bmc.example", "ipmi://RACK-1.example."):
        assert policy.problem(spec(ok)) == "", ok
    for address, why in (
        ("ipmi://11.0.0.1", "its address is not in them"),
        ("ipmi://bmc.example", "a name is matched as written"),  # the zone, not a name in it
        ("ipmi://evilbmc.example", "a name is matched as written"),
        ("ipmi://rack-1.example.evil", "a name is matched as written"),
    ):
        problem = policy.problem(spec(address))
        assert "not among the hosts the operator allows" in problem, address
        assert "10.0.0.0/8, *.bmc.example, rack-1.example" in problem and why in problem
    assert "spec.image.url" in policy.problem(spec("ipmi://10.0.0.1", url="http://x.example/i"))
    assert policy.problem(spec("ipmi://10.0.0.1", url="http://images.example/i")) == ""


def test_an_allowlist_is_what_lets_a_denied_address_through() -> None:
    loopback = Reach(bmc=Allowlist.parse(["127.0.0.0/8", "localhost"], ALLOW_BMC))
    assert loopback.problem(spec("ipmi://127.0.0.1")) == ""
    assert loopback.problem(spec("ipmi://localhost")) == ""
    assert "link-local" in loopback.problem(spec("ipmi://169.254.169.254"))


def test_a_refused_spec_is_no_spec_to_the_machine() -> None:
    raw = {"bmc": {"address": "ipmi://169.254.169.254", "credentialsName": "c"}}
    parsed, problem = parse_spec(raw, Reach())
    assert parsed is None and problem is not None
    assert problem.reason == NOT_ALLOWED and problem.message.startswith("spec.bmc.address")
    parsed, problem = parse_spec(raw, Reach(bmc=Allowlist.parse(["169.254.0.0/16"], ALLOW_BMC)))
    assert parsed is not None and problem is None


def test_address_of_reads_what_a_connection_would() -> None:
    assert str(address_of("127.1")) == "127.0.0.1"
    assert str(address_of("::ffff:10.0.0.1")) == "10.0.0.1"
    assert address_of("bmc.example") is None
    assert address_of("1.2.3.4.example") is None


@pytest.mark.parametrize("entry", ["bad/name", "a..b", "-", "x_y.example", "*.", "http://x"])
def test_a_bad_allowlist_entry_names_the_flag_and_the_forms(entry: str) -> None:
    with pytest.raises(ValueError) as raised:
        Allowlist.parse([entry], ALLOW_BMC)
    assert str(raised.value).startswith(f"--allow-bmc {entry!r}: write a CIDR")


def test_the_flags_make_the_reach() -> None:
    args = build_parser().parse_args(
        [
            "run",
            "--allow-bmc",
            "10.0.0.0/8",
            "--allow-bmc",
            "*.bmc.example",
            "--allow-image-host",
            "images.example",
            "--allow-file-images",
        ]
    )
    made = reach(args)
    assert made.bmc.written == ("10.0.0.0/8", "*.bmc.example")
    assert made.images.written == ("images.example",) and made.file_images
    assert reach(build_parser().parse_args(["run"])) == Reach()


def firmware(*urls: str) -> HostSpec:
    updates = [{"component": "bios", "url": url} for url in urls]
    raw = {"bmc": {"address": "ipmi://10.0.0.5", "credentialsName": "c"}, "image": IMAGE}
    return HostSpec.model_validate(raw | {"firmwareUpdates": updates})


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("http://169.254.169.254/latest/meta-data/", "link-local"),
        ("http://127.0.0.1:6385/v1/nodes", "loopback"),  # Ironic's own API, on its loopback
        ("https://[::ffff:127.0.0.1]:6385/", "loopback"),
        ("http://2130706433/bios.bin", "loopback"),
        ("http://metadata.google.internal/computeMetadata/v1/", "loopback or cloud metadata"),
    ],
)
def test_a_firmware_url_is_checked_like_an_image_and_named_by_its_index(
    url: str, kind: str
) -> None:
    problem = Reach().problem(firmware("http://firmware.example/ok.bin", url))
    assert problem.startswith("spec.firmwareUpdates[1].url: ") and kind in problem, problem
    assert ALLOW_IMAGE_HOST in problem  # the way out, for the operator
    parsed, refused = parse_spec(
        {"bmc": {"address": "ipmi://10.0.0.5", "credentialsName": "c"},
         "firmwareUpdates": [{"component": "bmc", "url": url}]},
        Reach(),
    )  # fmt: skip
    assert parsed is None and refused is not None and refused.reason == NOT_ALLOWED


def test_firmware_urls_are_held_to_the_image_hosts_allowlist() -> None:
    policy = Reach(images=Allowlist.parse(["images.example", "*.fw.example"], ALLOW_IMAGE_HOST))
    assert policy.problem(firmware("https://a.fw.example/bios.bin")) == ""
    unlisted = policy.problem(firmware("https://a.fw.example/b.bin", "http://10.9.9.9/nic.bin"))
    assert unlisted.startswith("spec.firmwareUpdates[1].url: 10.9.9.9 is not among the hosts")
    assert f"({ALLOW_IMAGE_HOST}: images.example, *.fw.example;" in unlisted
    # the BMC allowlist says nothing about where firmware comes from
    bmcs = Reach(bmc=Allowlist.parse(["10.0.0.0/8"], ALLOW_BMC))
    assert bmcs.problem(firmware("http://firmware.example/x.bin")) == ""
    allowed = Reach(images=Allowlist.parse(["images.example,169.254.169.254"], ALLOW_IMAGE_HOST))
    assert allowed.problem(firmware("http://169.254.169.254/bios.bin")) == ""


def test_a_url_naming_no_server_this_parser_reads_is_refused() -> None:
    for url in ("http://[::1/bios.bin", "http:///bios.bin"):
        problem = Reach().problem(firmware(url))
        assert problem.startswith("spec.firmwareUpdates[0].url: ") and "names no server" in problem
