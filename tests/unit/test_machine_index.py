"""The machines by name and UID that Nodes link by, and the Secrets Hosts read."""

from __future__ import annotations

from typing import Any

from state_controller.runtime.indexes.machines import MachineIndex


def obj(uid: str) -> dict[str, Any]:
    return {"metadata": {"uid": uid}}


def test_a_machine_is_found_by_name_and_uid_until_it_goes() -> None:
    hosts: set[str] = set()
    index = MachineIndex(lambda key: key in hosts)
    assert index.machine("metal3/w-1", obj("u-1"), observed=True) == ["w-1", "uid:u-1"]
    assert index.named("w-1") == ["metal3/w-1"] and index.named("uid:u-1") == ["metal3/w-1"]
    assert index.observed("metal3/w-1")
    assert index.machine("metal3/w-1", obj("u-1"), observed=True) == []  # nothing new
    assert index.machine("metal3/w-1", None, observed=True) == ["w-1", "uid:u-1"]
    assert index.named("w-1") == [] and index.named("uid:u-1") == []


def test_a_host_of_the_same_key_tells_the_story_and_keeps_the_name() -> None:
    hosts = {"metal3/w-2"}
    index = MachineIndex(lambda key: key in hosts)
    index.machine("metal3/w-2", obj("u-2"), observed=True)
    index.machine("metal3/w-2", obj("h-2"))  # the Host (a handover): ours
    assert not index.observed("metal3/w-2")
    assert index.machine("metal3/w-2", None, observed=True) == []  # the Host is still there
    assert index.named("w-2") == ["metal3/w-2"]


def test_the_hosts_reading_a_secret() -> None:
    index = MachineIndex(lambda key: False)
    index.secret("ns/a", "ns/bmc")
    index.secret("ns/b", "ns/bmc")
    assert sorted(index.readers("ns/bmc")) == ["ns/a", "ns/b"] and index.is_host("ns/a")
    index.secret("ns/a", "ns/other")
    index.secret("ns/b", None)
    assert index.readers("ns/bmc") == [] and not index.is_host("ns/b")


def test_names_held_by_one_host_or_several() -> None:
    """One key is held as itself, several as a set: both answer alike, a name that is
    a prefix of another is another name, and a set left with one key is one again."""
    index = MachineIndex(lambda key: False)
    index.machine("a/w", obj("u-1"))
    index.machine("a/w-1", obj("u-2"))  # its key starts with the other's
    index.machine("b/w", obj("u-3"))
    assert index.named("w") == ["a/w", "b/w"] and index.named("w-1") == ["a/w-1"]
    assert index.machine("b/w", None) == ["w", "uid:u-3"]
    assert index.named("w") == ["a/w"] and index.named("uid:u-3") == []
    index.machine("a/w", None)
    assert index.named("w") == [] and index.named("w-1") == ["a/w-1"]
    for host in ("ns/h", "ns/h-1", "ns/h-10"):
        index.secret(host, ["ns/bmc", "ns/data"])
    index.secret("ns/h-1", "ns/bmc")  # no longer reads the data Secret
    assert sorted(index.readers("ns/data")) == ["ns/h", "ns/h-10"]
    assert sorted(index.readers("ns/bmc")) == ["ns/h", "ns/h-1", "ns/h-10"]
    index.secret("ns/h", None)
    index.secret("ns/h-10", None)
    assert index.readers("ns/data") == [] and index.readers("ns/bmc") == ["ns/h-1"]
