"""userData, networkData and metaData: Secret references of the Host's own namespace."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from state_controller.provisioning.provisioner import HostData
from state_controller.runtime.hosts import bounded_yaml
from state_controller.runtime.hosts import data as host_data
from state_controller.runtime.hosts.data import read_host_data
from state_controller.runtime.hosts.inputs import OTHER_NAMESPACE, SpecCache
from state_controller.runtime.indexes.machines import MachineIndex


def _host(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "bmc": {"address": "ipmi://192.0.2.1", "credentialsName": "bmc"},
        "online": True,
    }
    return {
        "metadata": {"name": "h", "namespace": "team-a", "uid": "u", "generation": 1},
        "spec": {**base, **spec},
    }


def test_the_three_references_parse_with_baremetal_operators_names() -> None:
    spec, problem = SpecCache().parse(
        "team-a/h",
        _host(
            userData={"name": "u", "namespace": "team-a"},
            networkData={"name": "n"},
            metaData={"name": "m"},
        ),
    )
    assert problem is None and spec is not None
    assert spec.user_data is not None and spec.user_data.name == "u"
    assert spec.network_data is not None and spec.network_data.name == "n"
    assert spec.meta_data is not None and spec.meta_data.name == "m"


def test_a_secret_of_another_namespace_is_refused_naming_the_field() -> None:
    spec, problem = SpecCache().parse(
        "team-a/h", _host(networkData={"name": "n", "namespace": "team-b"})
    )
    assert spec is None and problem is not None
    assert problem.reason == OTHER_NAMESPACE
    assert problem.message.startswith('spec.networkData.namespace: "team-b"')
    assert "team-a" in problem.message


def test_a_bad_secret_name_is_refused() -> None:
    spec, problem = SpecCache().parse("team-a/h", _host(userData={"name": "Not_A_Name"}))
    assert spec is None and problem is not None
    assert "userData" in problem.message


def test_host_data_shows_only_its_digest_and_sizes() -> None:
    text = "#cloud-config\npassword: hunter2\n"
    data = HostData(user_data=text, meta_data={"k": "v"})
    shown = f"{data!r} {data}"
    assert "hunter2" not in shown and data.digest()[:12] in shown
    assert data.config_drive() == {
        "meta_data": {"k": "v"},
        "user_data": "#cloud-config\npassword: hunter2\n",
    }
    assert data.sizes() == {"meta_data": len('{"k": "v"}'), "user_data": len(text)}


def test_yaml_reads_a_mac_address_as_text() -> None:
    secret = {
        "metadata": {"labels": {"hoststate.io/host-data": "true"}, "resourceVersion": "7"},
        "data": {"networkData": base64.b64encode(b"mac: 52:54:00:00:00:01\n").decode()},
    }
    spec, _ = SpecCache().parse("team-a/h", _host(networkData={"name": "n"}))
    assert spec is not None
    data, versions, problem, _ = read_host_data(spec, "team-a", lambda key: secret)
    assert problem is None and versions == (("n", "7"),)
    assert data is not None and data.network_data == {"mac": "52:54:00:00:00:01"}


def test_a_host_reads_its_credentials_and_data_secrets() -> None:
    index = MachineIndex(lambda key: False)
    index.secret("ns/a", ["ns/bmc", "ns/user-data"])
    assert index.readers("ns/user-data") == ["ns/a"] and index.readers("ns/bmc") == ["ns/a"]
    index.secret("ns/a", ["ns/bmc"])
    assert index.readers("ns/user-data") == [] and index.is_host("ns/a")
    index.secret("ns/a", None)
    assert index.readers("ns/bmc") == [] and not index.is_host("ns/a")


def test_network_data_is_parsed_once_per_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Host reconciled at every poll reads its data again; the parse is kept by what the
    text is (a resourceVersion can name two texts in two API servers), bounded, and what
    a caller gets is its own copy."""
    calls: list[str] = []
    real = host_data._object

    def counted(text: str, *args: str) -> Any:
        calls.append(text)
        return real(text, *args)

    monkeypatch.setattr(host_data, "_object", counted)
    parsed = host_data._Parsed()
    first, problem = parsed.parse("links: []\n", "networkData", "ns", "nd")
    assert problem is None and first == {"links": []}
    assert first is not None
    first["links"].append("changed by a caller")
    again, _ = parsed.parse("links: []\n", "networkData", "ns", "nd")
    assert again == {"links": []} and len(calls) == 1
    other, _ = parsed.parse("links: [a]\n", "networkData", "ns", "nd")
    assert other == {"links": ["a"]} and len(calls) == 2  # another text: parsed again
    big = "k: " + "x" * bounded_yaml.TEXT_MAX + "\n"
    assert parsed.parse(big, "networkData", "ns", "nd")[1] is not None  # refused, not kept big
    parsed.parse(big, "networkData", "ns", "nd")
    assert len(calls) == 3  # its refusal is kept too
    for n in range(host_data._Parsed.ENTRIES + 10):
        parsed.parse(f"a: {n}\n", "metaData", "ns", "md")
    assert len(parsed._results) == host_data._Parsed.ENTRIES


def test_the_spec_cache_keeps_only_the_hosts_reconciled_last() -> None:
    cache = SpecCache(size=2)
    first, _ = cache.parse("team-a/a", _host())
    assert cache.parse("team-a/a", _host())[0] is first  # the same generation: not parsed
    cache.parse("team-a/b", _host())
    cache.parse("team-a/a", _host())  # used again: b is now the oldest
    cache.parse("team-a/c", _host())
    assert cache.parse("team-a/a", _host())[0] is first
    again, _ = cache.parse("team-a/b", _host())  # dropped for c, so parsed anew
    assert again is not None and again == first and again is not first
    changed = _host()
    changed["metadata"]["generation"] = 2
    assert cache.parse("team-a/b", changed)[0] is not again  # a new generation: parsed
