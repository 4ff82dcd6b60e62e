"""spec.bmc.address takes exactly the BMC types baremetal-operator v0.13.2 registers, and
each becomes the Ironic node baremetal-operator would make of it.

The expected table is written here from baremetal-operator's source at v0.13.2, not read
from the code under test: ``pkg/hardwareutils/bmc/`` (the ``RegisterFactory`` calls of
ipmi.go, redfish.go, redfish_virtualmedia.go, idrac_virtualmedia.go and redfish_https.go;
each type's ``Driver()`` and ``BootInterface()``); access.go registers ``<name>+http``
and ``<name>+https`` for a type that lists those schemes.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from state_controller.api import bmc
from state_controller.api.baremetalhost import host_spec
from state_controller.api.bmc import BMCAddressError, parse_bmc_address
from state_controller.provisioning.ironic.nodes import driver_info, new_node
from tests.ironic.helpers import view_of

# type -> (Ironic hardware type, boot interface or None, takes +http/+https)
BAREMETAL_OPERATOR_V0_13_2 = {
    "ipmi": ("ipmi", None, False),
    "libvirt": ("ipmi", None, False),
    "redfish": ("redfish", None, True),
    "ilo5-redfish": ("redfish", None, True),
    "idrac-redfish": ("idrac", None, True),
    "redfish-virtualmedia": ("redfish", "redfish-virtual-media", True),
    "ilo5-virtualmedia": ("redfish", "redfish-virtual-media", True),
    "idrac-virtualmedia": ("idrac", "idrac-redfish-virtual-media", True),
    "redfish-uefihttp": ("redfish", "redfish-https", True),
}
SCHEMES = {
    scheme: (name, *rest)
    for name, (*rest, transports) in BAREMETAL_OPERATOR_V0_13_2.items()
    for scheme in ((name, f"{name}+http", f"{name}+https") if transports else (name,))
}


def test_the_accepted_schemes_are_exactly_baremetal_operators() -> None:
    assert len(SCHEMES) == 23
    assert set(bmc.BMC_SCHEMES) == set(SCHEMES)


@pytest.mark.parametrize("scheme", sorted(SCHEMES))
def test_each_scheme_becomes_the_node_baremetal_operator_makes(scheme: str) -> None:
    _, driver, boot = SCHEMES[scheme]
    address = parse_bmc_address(f"{scheme}://192.0.2.10:8000/redfish/v1/Systems/1")
    host = replace(view_of("ns", 0), bmc=address)
    node = new_node(host, driver=None, interfaces={}, overrides=None)
    assert node["driver"] == driver
    assert node.get("boot_interface") == boot
    info = driver_info(host)
    if driver == "ipmi":
        assert (info["ipmi_address"], info["ipmi_port"]) == ("192.0.2.10", 8000)
    else:
        transport = "http" if scheme.endswith("+http") else "https"
        assert info["redfish_address"] == f"{transport}://192.0.2.10:8000"
        assert info["redfish_system_id"] == "/redfish/v1/Systems/1"


@pytest.mark.parametrize(
    ("scheme", "instead"),
    [("ilo4", "redfish://"), ("ilo5", "ilo5-redfish://"), ("irmc", "redfish://"),
     ("idrac", "idrac-redfish://")],
)  # fmt: skip
def test_a_type_baremetal_operator_no_longer_has_is_refused_with_what_to_write(
    scheme: str, instead: str
) -> None:
    with pytest.raises(BMCAddressError) as refused:
        parse_bmc_address(f"{scheme}://192.0.2.10")
    message = str(refused.value)
    assert message.startswith("spec.bmc.address") and instead in message
    assert "v0.13.2" in message


def test_an_ipmi_address_without_a_port_gets_ipmis() -> None:
    assert parse_bmc_address("libvirt://192.0.2.10").port == 623
    assert parse_bmc_address("redfish://192.0.2.10").port is None


@pytest.mark.parametrize(
    ("written", "read_as"),
    [
        ("192.0.2.10:623", "ipmi://192.0.2.10:623"),
        ("192.0.2.10", "ipmi://192.0.2.10"),
        ("[2001:db8::10]:623", "ipmi://[2001:db8::10]:623"),
        ("bmc-0.example.com", "ipmi://bmc-0.example.com"),
        ("ipmi:192.0.2.10:6233", "ipmi://192.0.2.10:6233"),
        ("redfish:bmc.example/redfish/v1/Systems/1", "redfish://bmc.example/redfish/v1/Systems/1"),
    ],
)
def test_an_address_without_a_type_is_refused_with_what_baremetal_operator_reads(
    written: str, read_as: str
) -> None:
    """baremetal-operator v0.13.2 (pkg/hardwareutils/bmc/access.go, GetParsedURL) reads a
    bare host or host:port as IPMI and ``type:host`` as ``type://host``; its
    access_test.go (lines 34, 44, 86, 96, 122, 132) has ``192.168.122.1``,
    ``my.favoritebmc.com``, ``192.168.122.1:6233``, ``[fe80::...]:6233`` and
    ``ipmi:192.168.122.1:6233`` as ipmi. A Host names
    the type, so the address is refused with that URL to write, and the URL parses."""
    assert bmc.as_baremetal_operator_reads(written) == read_as
    with pytest.raises(BMCAddressError) as refused:
        parse_bmc_address(written)
    message = str(refused.value)
    assert message.startswith("spec.bmc.address") and repr(read_as) in message
    assert parse_bmc_address(read_as).host in read_as


def test_a_hostname_and_port_is_a_type_for_baremetal_operator_too() -> None:
    """Go's url.Parse takes ``bmc.example:623`` as scheme ``bmc.example``; so does
    baremetal-operator v0.13.2 (an unknown BMC type), and so does the Host."""
    assert bmc.as_baremetal_operator_reads("bmc.example:623") == "bmc.example://623"
    with pytest.raises(BMCAddressError, match=r"^spec\.bmc\.address"):
        parse_bmc_address("bmc.example:623")


def test_convert_writes_a_bare_address_as_baremetal_operator_reads_it() -> None:
    """A BareMetalHost's ``192.0.2.10:623`` becomes the Host's ``ipmi://192.0.2.10:623``
    (convert, bootstrap --hosts and adopt read a BareMetalHost's spec through host_spec)."""
    bmh = {
        "apiVersion": "metal3.io/v1alpha1",
        "kind": "BareMetalHost",
        "metadata": {"name": "worker-9", "namespace": "metal"},
        "spec": {
            "bmc": {"address": "192.0.2.10:623", "credentialsName": "worker-9-bmc"},
            "bootMACAddress": "52:54:00:00:00:09",
            "online": True,
        },
    }
    spec, why = host_spec(bmh)
    assert why == "" and spec is not None, why
    assert spec["bmc"]["address"] == "ipmi://192.0.2.10:623"
