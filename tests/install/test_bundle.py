"""The OLM bundle (bundle/ and bundle.Dockerfile) is the OpenShift install as OLM carries
it: tools/olm/bundle.py makes it from ``kubectl kustomize manifests/openshift``, and
nothing in it is edited by hand. These tests fail when the committed bundle and what the
generator makes now differ, when the operator-framework's own validator (OperatorHub's
checks included) finds an error or a warning not listed here, and when the CSV's version,
Deployment, permissions or CRDs are not pyproject's and the install's.

Offline and fast: kustomize renders without a cluster; no control plane is started.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from testbed.kube import k8s_bin_dir
from testbed.tools import olm_validator

ROOT = Path(__file__).resolve().parents[2]
VERSION: str = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
CSV_FILE = "bundle/manifests/hoststate.clusterserviceversion.yaml"
REGENERATE = "run `.venv/bin/python tools/olm/bundle.py` and commit bundle/ and bundle.Dockerfile"

# What the validator warns of, each for a reason docs/olm.md gives: the project has no
# logo; `alpha` is the channel of a 0.x release serving v1alpha1 (docs/versioning.md), not
# one of OLM's recommended candidate/fast/stable names; the controller alone writes every
# CRD, so there is no example to give (they are marked internal-objects instead).
KNOWN_WARNINGS = {
    "Value : (hoststate.v{v}) csv.Spec.Icon not specified",
    'Value hoststate.v{v}: channel(s) ["alpha"] are not following the recommended naming '
    "convention: https://olm.operatorframework.io/docs/best-practices/channel-naming",
    "Value hoststate.io/v1alpha1, Kind=HostState: provided API should have an example annotation",
    "Value hoststate.io/v1alpha1, Kind=NodePool: provided API should have an example annotation",
    "Value hoststate.io/v1alpha1, Kind=HostStateController: provided API should have an "
    "example annotation",
}


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("olm_bundle", ROOT / "tools/olm/bundle.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


generator = _generator()


@pytest.fixture(scope="module")
def rendered() -> list[dict[str, Any]]:
    """The objects of ``kubectl kustomize manifests/openshift``."""
    objects: list[dict[str, Any]] = generator.render(k8s_bin_dir() / "kubectl")
    return objects


@pytest.fixture(scope="module")
def fresh(rendered: list[dict[str, Any]]) -> Any:
    """The bundle the generator makes of the install now."""
    return generator.build(rendered, generator.version())


@pytest.fixture(scope="module")
def csv() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / CSV_FILE).read_text())
    return loaded


def differences(root: Path, files: dict[str, str]) -> list[str]:
    """The files under ``root`` that are not what ``files`` says: changed, missing, or
    in bundle/ without being made."""
    found = []
    for name, text in sorted(files.items()):
        path = root / name
        if not path.is_file():
            found.append(f"{name}: missing")
        elif path.read_text() != text:
            found.append(f"{name}: differs")
    stray = {str(p.relative_to(root)) for p in (root / "bundle").rglob("*") if p.is_file()}
    found += [f"{name}: not made by the generator" for name in sorted(stray - set(files))]
    return found


def test_the_committed_bundle_is_what_the_generator_makes_of_the_install(fresh: Any) -> None:
    assert differences(ROOT, fresh.files) == [], REGENERATE


def test_a_changed_manifest_is_named_by_the_file_it_changes(
    rendered: list[dict[str, Any]], fresh: Any, tmp_path: Path
) -> None:
    generator.write(fresh, tmp_path)
    assert differences(tmp_path, fresh.files) == []

    def changed(kind: str, edit: Any) -> list[str]:
        objects = json.loads(json.dumps(rendered))
        (obj,) = [o for o in objects if o["kind"] == kind]
        edit(obj)
        return differences(tmp_path, generator.build(objects, VERSION).files)

    def args(deployment: dict[str, Any]) -> None:
        deployment["spec"]["template"]["spec"]["containers"][0]["args"].append("--x")

    def rule(rule: dict[str, Any]) -> None:
        rule["spec"]["groups"][0]["rules"][0]["for"] = "2m"

    assert changed("Deployment", args) == [f"{CSV_FILE}: differs"]
    assert changed("PrometheusRule", rule) == [
        "bundle/manifests/hoststate-alerts.prometheusrule.yaml: differs"
    ]
    (tmp_path / "bundle/manifests/old.yaml").write_text("{}\n")
    assert differences(tmp_path, fresh.files) == [
        "bundle/manifests/old.yaml: not made by the generator"
    ]


def test_an_object_olm_cannot_carry_stops_the_generator(rendered: list[dict[str, Any]]) -> None:
    stranger = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "x"}}
    with pytest.raises(SystemExit, match="Job/x: no registry\\+v1 bundle carries a Job"):
        generator.build([*rendered, stranger], VERSION)


def test_the_controllers_roles_are_read_only_from_bindings_olm_can_make(
    rendered: list[dict[str, Any]], fresh: Any
) -> None:
    def built(edit: Any) -> Any:
        objects = json.loads(json.dumps(rendered))
        name = "hoststate-controller-leader-election"
        (binding,) = [o for o in objects
                      if o["kind"] == "RoleBinding" and o["metadata"]["name"] == name]  # fmt: skip
        edit(binding)
        return generator.build(objects, VERSION)

    def spelled_out(binding: dict[str, Any]) -> None:
        binding["subjects"][0]["apiGroup"] = ""

    assert built(spelled_out).files == fresh.files

    def elsewhere(binding: dict[str, Any]) -> None:
        binding["metadata"]["namespace"] = "metal"

    with pytest.raises(SystemExit, match="grants in another namespace than hoststate-system"):
        built(elsewhere)

    def shared(binding: dict[str, Any]) -> None:
        binding["subjects"].append({"kind": "User", "name": "someone"})

    with pytest.raises(SystemExit, match="binds the controller and others"):
        built(shared)


def test_the_operator_frameworks_validator_passes_the_bundle(fresh: Any) -> None:
    done = subprocess.run(
        [str(olm_validator()), "-json", "-k8s-version", "1.32", str(ROOT / "bundle")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode in (0, 1), done.stderr
    found = json.loads(done.stdout)
    errors = [f"{f['source']}: {f['message']}" for f in found if f["level"] == "error"]
    assert (done.returncode, errors) == (0, []), found
    warnings = {f["message"] for f in found if f["level"] == "warning"}
    assert warnings == {w.replace("{v}", VERSION) for w in KNOWN_WARNINGS}, warnings


def test_the_csv_is_pyprojects_version(csv: dict[str, Any]) -> None:
    assert csv["metadata"]["name"] == f"hoststate.v{VERSION}"
    assert csv["spec"]["version"] == VERSION
    assert f"hoststate-bundle:v{VERSION}" in (ROOT / "bundle.Dockerfile").read_text()


def test_the_csvs_deployment_is_the_installs(
    csv: dict[str, Any], rendered: list[dict[str, Any]]
) -> None:
    (deployment,) = [o for o in rendered if o["kind"] == "Deployment"]
    (installed,) = csv["spec"]["install"]["spec"]["deployments"]
    assert installed["name"] == deployment["metadata"]["name"] == "hoststate-controller"
    assert installed["spec"] == deployment["spec"]

    pod = installed["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    image = f"localhost/hoststate/state-controller:{VERSION}"
    assert container["image"] == image
    assert csv["metadata"]["annotations"]["containerImage"] == image
    assert csv["spec"]["relatedImages"] == [{"name": "controller", "image": image}]
    assert "--sources=machineconfignodes" in container["args"]
    assert "--namespace" not in container["args"]  # observe-only: no Hosts' namespace
    # restricted-v2 picks the UID and fsGroup: none is pinned.
    assert pod["securityContext"] == {
        "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}


def test_the_csv_grants_what_the_installs_roles_grant_and_writes_nothing_of_the_mcos(
    csv: dict[str, Any], rendered: list[dict[str, Any]]
) -> None:
    strategy = csv["spec"]["install"]["spec"]
    (namespaced,) = strategy["permissions"]
    (cluster,) = strategy["clusterPermissions"]
    assert namespaced["serviceAccountName"] == cluster["serviceAccountName"]
    assert namespaced["serviceAccountName"] == "hoststate-controller"

    def rules(kind: str, names: set[str]) -> list[dict[str, Any]]:
        return [r for o in rendered if o["kind"] == kind
                and o["metadata"]["name"] in names for r in o["rules"]]  # fmt: skip

    assert namespaced["rules"] == rules(
        "Role", {"hoststate-controller-leader-election", "hoststate-controller-node-states"}
    )
    assert cluster["rules"] == rules(
        "ClusterRole",
        {
            "hoststate-controller-metrics-auth",
            "hoststate-controller-nodes",
            "hoststate-controller-openshift",
            "hoststate-controller-status",
        },
    )
    mco = [r for r in cluster["rules"] if "machineconfiguration.openshift.io" in r["apiGroups"]]
    assert mco == [
        {
            "apiGroups": ["machineconfiguration.openshift.io"],
            "resources": ["machineconfignodes", "machineconfigpools"],
            "verbs": ["get", "list", "watch"],
        }
    ]
    # OwnNamespace only: under AllNamespaces OLM would grant `permissions` cluster-wide.
    supported = {m["type"] for m in csv["spec"]["installModes"] if m["supported"]}
    assert supported == {"OwnNamespace"}


def test_every_crd_of_the_install_is_owned_and_shipped(
    csv: dict[str, Any], rendered: list[dict[str, Any]]
) -> None:
    crds = {o["metadata"]["name"]: o for o in rendered if o["kind"] == "CustomResourceDefinition"}
    owned = {c["name"]: c for c in csv["spec"]["customresourcedefinitions"]["owned"]}
    expected = {f"{p}.hoststate.io" for p in ("hoststates", "nodepools", "hoststatecontrollers")}
    assert set(owned) == set(crds) == expected
    for name, crd in crds.items():
        assert owned[name]["kind"] == crd["spec"]["names"]["kind"]
        assert owned[name]["version"] == "v1alpha1"
        assert owned[name]["description"].strip()
        plural = crd["spec"]["names"]["plural"]
        shipped = ROOT / f"bundle/manifests/{crd['spec']['group']}_{plural}.yaml"
        labels = {**crd["metadata"]["labels"], "app.kubernetes.io/managed-by": "olm"}
        assert yaml.safe_load(shipped.read_text()) == {
            **crd,
            "metadata": {**crd["metadata"], "labels": labels},
        }


def test_what_is_left_out_and_what_olm_makes_itself(fresh: Any) -> None:
    assert fresh.left_out.keys() == {
        "Namespace/hoststate-system",
        "ValidatingAdmissionPolicy/hoststate-node-links",
        "ValidatingAdmissionPolicyBinding/hoststate-node-links",
    }
    # Neither the controller's ServiceAccount nor its roles are objects: OLM makes them.
    shipped = [yaml.safe_load(text) for n, text in fresh.files.items() if n.endswith(".yaml")]
    kinds = {(o["kind"], o["metadata"]["name"]) for o in shipped if "kind" in o}
    assert ("ServiceAccount", "hoststate-controller") not in kinds
    assert not {k for k in kinds if k[0] in ("Role", "RoleBinding")}
    assert not any("namespace" in o.get("metadata", {}) for o in shipped)
    managers = {o["metadata"]["labels"].get("app.kubernetes.io/managed-by") for o in shipped
                if o.get("kind") not in (None, "ClusterServiceVersion")}  # fmt: skip
    assert managers == {"olm"}


def test_a_bundle_for_a_registry_names_its_image_in_all_three_places(
    rendered: list[dict[str, Any]], fresh: Any
) -> None:
    image = "registry.example.com/hoststate/state-controller@sha256:" + "0" * 64
    mine = generator.build(rendered, VERSION, image)
    changed = sorted(n for n in fresh.files if mine.files[n] != fresh.files[n])
    assert changed == [CSV_FILE]
    csv = yaml.safe_load(mine.files[CSV_FILE])
    (installed,) = csv["spec"]["install"]["spec"]["deployments"]
    assert installed["spec"]["template"]["spec"]["containers"][0]["image"] == image
    assert csv["metadata"]["annotations"]["containerImage"] == image
    assert csv["spec"]["relatedImages"] == [{"name": "controller", "image": image}]
    (deployment,) = [o for o in rendered if o["kind"] == "Deployment"]
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"].startswith("localhost/")
