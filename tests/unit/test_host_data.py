"""userData, networkData and metaData: Secret references of the Host's own namespace."""

from __future__ import annotations

from typing import Any

from state_controller.runtime.host_inputs import OTHER_NAMESPACE, SpecCache


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
