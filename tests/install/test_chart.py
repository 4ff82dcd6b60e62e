"""charts/hoststate/, the Helm chart, installs what the kustomize installs do (docs/helm.md).

- For each choice (the default, Ironic, metal3, BareMetalHosts observed in every
  namespace or in two named ones, OpenShift, sharded, servicing drains), ``helm
  template`` with the choice's value file from charts/hoststate/ci/ renders the same
  objects as ``kubectl kustomize`` of the matching folder under manifests/, field for
  field, but for what a Helm install must do otherwise (``normalised``): its
  managed-by and chart labels, no Namespace hoststate-system (Helm keeps its release
  in it, so the chart cannot own it), and the Host CRD in every install (crds/ cannot be
  chosen by values).
- What no kustomize folder shows: the image by tag or digest, metrics without
  authentication, no Nodes watched, the monitors off or labelled, a sharded StatefulSet
  of another size, several driven namespaces, and bad values refused with the field
  named.
- Helm is the pinned release, and offline it assumes a Kubernetes the chart accepts.
- ``helm lint --strict`` passes with each value set, and fails, naming the template,
  on a broken one.
- On a real kube-apiserver (one for the file, with prometheus-operator's CRDs), Helm
  refuses the chart in another namespace, then installs it and every rendered object is
  there; an upgrade to the sharded choice replaces the Deployment by a StatefulSet;
  ``helm uninstall`` removes every templated object and leaves the CRDs (with the Hosts
  in them), the namespace of the Hosts and its Secret as they were.
- Every folder under manifests/ that is an install has its choice here.
"""

from __future__ import annotations

import copy
import functools
import json
import shutil
import subprocess
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from testbed.control_plane import ControlPlane
from testbed.kube import k8s_bin_dir
from testbed.tools import helm, prometheus_operator_crds

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "hoststate"
CI = CHART / "ci"
NS = "hoststate-system"
RELEASE = "hoststate"
# the chart's appVersion, hence the image's default tag (tests/unit/test_version.py)
VERSION: str = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]

# Each choice: the chart's value files (under ci/) and the kustomize folders it matches
# (applied together, as docs/cluster.md applies servicing-drains on top of another).
CHOICES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "default": ((), ("manifests",)),
    "ironic": (("ironic-values.yaml",), ("manifests/ironic",)),
    "metal3": (("metal3-values.yaml",), ("manifests/metal3",)),
    "observe": (("observe-values.yaml",), ("manifests/observe",)),
    "observe-namespaces": (("observe-namespaces-values.yaml",), ("manifests/observe-namespaces",)),
    "openshift": (("openshift-values.yaml",), ("manifests/openshift",)),
    "sharded": (("sharded-values.yaml",), ("manifests/sharded",)),
    "servicing-drains": (
        ("servicing-drains-values.yaml",),
        ("manifests", "manifests/servicing-drains"),
    ),
}
OBSERVE_ONLY = {"observe", "observe-namespaces", "openshift"}
# The labels only Helm writes, or writes otherwise: normalised away on both sides.
HELM_LABELS = ("app.kubernetes.io/managed-by", "helm.sh/chart")

Obj = dict[str, Any]
Key = tuple[str, str, str, str]  # apiVersion, kind, namespace, name


def run(argv: list[str], *, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    if check and done.returncode != 0:
        raise AssertionError(f"{argv[0]} exited {done.returncode}:\n{done.stdout}{done.stderr}")
    return done


@functools.cache
def binary(name: str) -> str:
    """helm or kubectl, each found once: their scripts check the cache on every call."""
    return str(helm() if name == "helm" else k8s_bin_dir() / name)


def helm_argv(*args: str) -> list[str]:
    return [binary("helm"), *args]


def values_flags(files: tuple[str, ...]) -> list[str]:
    return [f"--values={CI / name}" for name in files]


def parse(text: str) -> list[Obj]:
    return [doc for doc in yaml.load_all(text, Loader=yaml.CSafeLoader) if doc]


def template(*flags: str) -> list[Obj]:
    """``helm template`` of the chart, CRDs included, parsed (a copy of the one render
    for these flags)."""
    return copy.deepcopy(_template(flags))


@functools.cache
def _template(flags: tuple[str, ...]) -> list[Obj]:
    argv = helm_argv("template", RELEASE, str(CHART), "--namespace", NS, "--include-crds")
    return parse(run([*argv, *flags]).stdout)


def template_fails(*flags: str, namespace: str = NS) -> str:
    argv = helm_argv("template", RELEASE, str(CHART), "--namespace", namespace, *flags)
    done = run(argv, check=False)
    assert done.returncode != 0, f"rendered with {flags}:\n{done.stdout[:2000]}"
    return done.stderr


def kustomize(folder: str) -> list[Obj]:
    return copy.deepcopy(_kustomize(folder))


@functools.cache
def _kustomize(folder: str) -> list[Obj]:
    return parse(run([binary("kubectl"), "kustomize", str(ROOT / folder)]).stdout)


def key(obj: Obj) -> Key:
    meta = obj["metadata"]
    return (obj["apiVersion"], obj["kind"], meta.get("namespace", ""), meta["name"])


def named(k: Key) -> str:
    return f"{k[1]} {k[2] + '/' if k[2] else ''}{k[3]} ({k[0]})"


def normalised(objects: list[Obj]) -> dict[Key, Obj]:
    """Objects by key, without the labels only Helm writes (or writes otherwise)."""
    out: dict[Key, Obj] = {}
    for obj in objects:
        labels = obj["metadata"].get("labels", {})
        for label in HELM_LABELS:
            labels.pop(label, None)
        assert key(obj) not in out, f"{named(key(obj))} rendered twice"
        out[key(obj)] = obj
    return out


def differences(chart: Any, kust: Any, path: str = "") -> list[str]:
    """Where two parsed objects differ, each as `path: chart ... != kustomize ...`."""
    if isinstance(chart, dict) and isinstance(kust, dict):
        found = []
        for field in sorted(set(chart) | set(kust)):
            where = f"{path}.{field}" if path else str(field)
            if field not in kust:
                found.append(f"{where}: only the chart has it: {chart[field]!r}")
            elif field not in chart:
                found.append(f"{where}: only kustomize has it: {kust[field]!r}")
            else:
                found += differences(chart[field], kust[field], where)
        return found
    if isinstance(chart, list) and isinstance(kust, list):
        common = min(len(chart), len(kust))
        found = [d for i in range(common) for d in differences(chart[i], kust[i], f"{path}[{i}]")]
        if len(chart) > common:
            found.append(f"{path}[{common}:]: only the chart has {chart[common:]!r}")
        if len(kust) > common:
            found.append(f"{path}[{common}:]: only kustomize has {kust[common:]!r}")
        return found
    if chart != kust:
        return [f"{path}: chart {chart!r} != kustomize {kust!r}"]
    return []


def compare(choice: str) -> list[str]:
    files, folders = CHOICES[choice]
    chart = normalised(template(*values_flags(files)))
    kust = normalised([obj for folder in folders for obj in kustomize(folder)])
    # Helm keeps its release record in the release namespace: it must exist before the
    # chart's objects, so the chart cannot own it (helm install --create-namespace).
    namespace = ("v1", "Namespace", "", NS)
    assert namespace in kust, f"{folders} no longer declares {NS}"
    del kust[namespace]
    if choice in OBSERVE_ONLY:
        # crds/ is installed whatever the values: the Host CRD comes with the others.
        host_crd = ("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "hosts.hoststate.io")
        assert host_crd in chart and host_crd not in kust
        del chart[host_crd]
    found = [f"{named(k)}: the chart lacks it" for k in sorted(kust.keys() - chart.keys())]
    found += [f"{named(k)}: only the chart has it" for k in sorted(chart.keys() - kust.keys())]
    for k in sorted(chart.keys() & kust.keys()):
        found += [f"{named(k)}: {d}" for d in differences(chart[k], kust[k])]
    return found


@pytest.mark.parametrize("choice", sorted(CHOICES))
def test_the_chart_renders_what_kustomize_does(choice: str) -> None:
    found = compare(choice)
    assert not found, f"{choice}: the chart and {CHOICES[choice][1]} differ:\n" + "\n".join(found)


def test_every_kustomize_install_has_its_values() -> None:
    """A folder added under manifests/ is an install the chart must offer too."""
    installs = {
        str(found.parent.relative_to(ROOT))
        for found in (ROOT / "manifests").rglob("kustomization.yaml")
        if "kind: Component" not in found.read_text()
    } - {"manifests/base"}  # the folders' common part, not an install
    assert installs == {folder for _, folders in CHOICES.values() for folder in folders}


def test_a_difference_names_the_object_and_the_path() -> None:
    chart = {"spec": {"template": {"spec": {"containers": [{"args": ["run", "--a"]}]}}}}
    kust = {"spec": {"template": {"spec": {"containers": [{"args": ["run", "--b"]}]}}}}
    assert differences(chart, kust) == [
        "spec.template.spec.containers[0].args[1]: chart '--a' != kustomize '--b'"
    ]
    assert differences({"args": ["run"]}, {"args": ["run", "--x"]}) == [
        "args[1:]: only kustomize has ['--x']"
    ]
    assert differences({"a": 1}, {"b": 1}) == [
        "a: only the chart has it: 1",
        "b: only kustomize has it: 1",
    ]


# -- what no kustomize folder shows -------------------------------------------------------


def by_kind(objects: list[Obj], kind: str) -> dict[str, Obj]:
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == kind}


def container(objects: list[Obj]) -> Obj:
    (workload,) = [o for o in objects if o["kind"] in ("Deployment", "StatefulSet")]
    return workload["spec"]["template"]["spec"]["containers"][0]  # type: ignore[no-any-return]


def test_the_image_by_tag_or_digest() -> None:
    assert container(template())["image"] == f"localhost/hoststate/state-controller:{VERSION}"
    repo = "registry.example.org/platform/state-controller"
    tagged = template(f"--set=image.repository={repo}", "--set=image.tag=1.2.3-rc1")
    assert container(tagged)["image"] == f"{repo}:1.2.3-rc1"
    digest = "sha256:" + "0123456789abcdef" * 4
    pinned = template(
        f"--set=image.repository={repo}", "--set=image.tag=x", f"--set=image.digest={digest}"
    )
    assert container(pinned)["image"] == f"{repo}@{digest}"


def test_metrics_without_authentication_are_plain_http_and_grant_nothing_for_it() -> None:
    objects = template("--set=metrics.authentication=false")
    args = container(objects)["args"]
    assert "--metrics-insecure" in args
    assert not {"--metrics-secure", "--metrics-cert-dir"} & set(args)
    roles = by_kind(objects, "ClusterRole")
    assert "hoststate-metrics-reader" not in roles
    assert "hoststate-controller-metrics-auth" not in roles
    (endpoint,) = by_kind(objects, "ServiceMonitor")["hoststate-controller"]["spec"]["endpoints"]
    assert endpoint["scheme"] == "http"
    assert not {"bearerTokenFile", "tlsConfig", "authorization"} & set(endpoint)


def test_the_monitors_are_optional_and_take_labels() -> None:
    off = template(
        "--set=metrics.serviceMonitor.enabled=false", "--set=prometheusRule.enabled=false"
    )
    assert not [o for o in off if o["apiVersion"].startswith("monitoring.coreos.com/")]
    on = template(
        "--set=metrics.serviceMonitor.labels.release=prom",
        "--set=prometheusRule.labels.release=prom",
    )
    assert (
        by_kind(on, "ServiceMonitor")["hoststate-controller"]["metadata"]["labels"]["release"]
        == "prom"
    )
    assert (
        by_kind(on, "PrometheusRule")["hoststate-alerts"]["metadata"]["labels"]["release"] == "prom"
    )


def test_shards_replicas_and_lease_names_go_together() -> None:
    objects = template(f"--values={CI / 'sharded-values.yaml'}", "--set=replicas=5")
    statefulset = by_kind(objects, "StatefulSet")["hoststate-controller"]
    assert statefulset["spec"]["replicas"] == 5
    assert "--shards=5" in container(objects)["args"]
    (_, named_leases, _) = by_kind(objects, "Role")["hoststate-controller-shards"]["rules"]
    assert named_leases["resourceNames"] == [
        "hoststate-sharder",
        *(f"hoststate-shard-hoststate-controller-{i}" for i in range(5)),
    ]


def test_driving_several_namespaces_grants_each() -> None:
    objects = template("--set=namespaces={metal,metal-b}")
    args = container(objects)["args"]
    assert args[1:3] == ["--namespace", "metal,metal-b"]
    roles = {
        (o["metadata"]["namespace"], o["metadata"]["name"]) for o in objects if o["kind"] == "Role"
    }
    assert {("metal", "hoststate-controller"), ("metal-b", "hoststate-controller")} <= roles


def test_without_nodes_nothing_of_theirs_is_watched_or_granted() -> None:
    objects = template("--set=nodes=false")
    assert "--no-nodes" in container(objects)["args"]
    assert "hoststate-controller-nodes" not in by_kind(objects, "ClusterRole")
    assert "hoststate-controller-nodes" not in by_kind(objects, "ClusterRoleBinding")
    assert "--no-nodes" not in container(template())["args"]


@pytest.mark.parametrize(
    ("flags", "namespace", "says"),
    [
        (["--set=replicas=0"], NS, "at '/replicas': minimum: got 0, want 1"),
        (["--set=sources={drive}"], NS, "at '/sources/0': value must be one of"),
        (["--set=sources=null"], NS, "missing property 'sources'"),
        (["--set=namespaces={Metal_1}"], NS, "at '/namespaces/0': 'Metal_1' does not match"),
        (["--set=image.digest=latest"], NS, "at '/image/digest'"),
        (["--set=ironic.url=ironic:6385"], NS, "at '/ironic/url'"),
        (["--set=metrics.readers[0].kind=Robot"], NS, "at '/metrics/readers/0/kind'"),
        (["--set=typo=1"], NS, "additional properties 'typo' not allowed"),
        (["--set-json=namespaces=[]"], NS, "namespaces: with hosts in sources, name"),
        (["--set=nodes=false", "--set=sources={machineconfignodes}"], NS, "nodes: false stops"),
        (
            ["--set=nodes=false", "--set=servicingDrains.enabled=true"],
            NS,
            "servicingDrains.enabled:",
        ),
        (["--set=nodes=1"], NS, "at '/nodes': got number, want boolean"),
        (["--set=sources={baremetalhosts}", "--set=ironic.enabled=true"], NS, "ironic.enabled:"),
        ([], "default", 'release namespace is "default"'),
    ],
)
def test_bad_values_are_refused_naming_the_field(
    flags: list[str], namespace: str, says: str
) -> None:
    message = template_fails(*flags, namespace=namespace)
    assert says in message, message


# -- Helm itself ---------------------------------------------------------------------------


def test_helm_is_the_pinned_release_and_assumes_a_recent_kubernetes_offline() -> None:
    """Built with Helm's release ldflags, ``helm template`` assumes its client-go's
    Kubernetes (1.37), not the v1.20 of a plain ``go build``, which the chart's
    kubeVersion (>= 1.30: admissionregistration.k8s.io/v1) would refuse."""
    assert run(helm_argv("version", "--template", "{{.Version}}")).stdout == "v3.22.0"
    assert template()  # offline, the chart's kubeVersion holds
    message = template_fails("--kube-version=1.29.0")
    assert "chart requires kubeVersion: >=1.30.0-0" in message, message


# -- helm lint ----------------------------------------------------------------------------


def test_helm_lint_strict_passes_with_every_value_set_and_names_a_broken_template(
    tmp_path: Path,
) -> None:
    value_sets = sorted({files for files, _ in CHOICES.values()})
    assert {f.name for f in CI.iterdir()} == {name for files in value_sets for name in files}
    for files in value_sets:
        done = run(
            helm_argv("lint", "--strict", str(CHART), "--namespace", NS, *values_flags(files)),
            check=False,
        )
        assert done.returncode == 0, f"{files}:\n{done.stdout}{done.stderr}"
    broken = shutil.copytree(CHART, tmp_path / "hoststate")
    (broken / "templates" / "service.yaml").write_text("kind: Service\nmetadata: {name: [\n")
    done = run(helm_argv("lint", "--strict", str(broken), "--namespace", NS), check=False)
    assert done.returncode != 0 and "templates/service.yaml" in done.stdout, done.stdout


# -- Helm on the real kube-apiserver ------------------------------------------------------------


MONITORING_CRDS = ("servicemonitors.monitoring.coreos.com", "prometheusrules.monitoring.coreos.com")


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """A bare kube-apiserver (no controller manager: nothing runs, nothing is collected)
    with prometheus-operator's CRDs, for the ServiceMonitor and the PrometheusRule."""
    with ControlPlane(
        k8s_bin_dir(), tmp_path_factory.mktemp("chart"), controller_manager=False
    ) as cp:
        run(cp.kubectl_argv("apply", "--server-side", f"--filename={prometheus_operator_crds()}"))
        cp.wait_established(*MONITORING_CRDS)
        yield cp


def resource(k: Key) -> str:
    group = k[0].rpartition("/")[0]
    return f"{k[1].lower()}.{group}/{k[3]}" if group else f"{k[1].lower()}/{k[3]}"


def on_server(plane: ControlPlane, keys: list[Key]) -> set[Key]:
    """Which of these objects the API server has: one ``kubectl get`` per namespace."""
    found: set[Key] = set()
    for namespace in sorted({k[2] for k in keys}):
        wanted = [resource(k) for k in keys if k[2] == namespace]
        scope = ["--namespace", namespace] if namespace else []
        argv = plane.kubectl_argv("get", *wanted, *scope, "--ignore-not-found", "-o", "json")
        listed = json.loads(run(argv).stdout or '{"items": []}')
        found |= {key(obj) for obj in listed.get("items", [listed])}  # one object: itself
    return found


def present(plane: ControlPlane, keys: list[Key]) -> list[str]:
    found = on_server(plane, keys)
    return [named(k) for k in keys if k in found]


def absent(plane: ControlPlane, keys: list[Key]) -> list[str]:
    found = on_server(plane, keys)
    return [named(k) for k in keys if k not in found]


def identity(plane: ControlPlane, *what: str) -> tuple[str, str]:
    meta = json.loads(run(plane.kubectl_argv("get", *what, "-o", "json")).stdout)["metadata"]
    return meta["uid"], meta["resourceVersion"]


HOST = {
    "apiVersion": "hoststate.io/v1alpha1",
    "kind": "Host",
    "metadata": {"name": "node-0", "namespace": "metal"},
    "spec": {"online": False},
}


def test_helm_installs_upgrades_and_uninstalls_on_the_apiserver(plane: ControlPlane) -> None:
    env = ["--kubeconfig", str(plane.kubeconfig), "--namespace", NS]
    # The Hosts' namespace and a BMC Secret in it: the user's, before the chart.
    run(plane.kubectl_argv("create", "namespace", "metal"))
    run(plane.kubectl_argv(
        "create", "secret", "generic", "bmc-0", "-n", "metal", "--from-literal=password=x",
    ))  # fmt: skip
    before = (
        identity(plane, "namespace", "metal"),
        identity(plane, "secret", "bmc-0", "-n", "metal"),
    )

    # Another release namespace: refused before any templated object is made (Helm has
    # installed crds/ by then: it does so before it renders the templates).
    elsewhere = [*env[:2], "--namespace", "default"]
    refused = run(helm_argv("install", RELEASE, str(CHART), *elsewhere), check=False)
    assert refused.returncode != 0 and 'release namespace is "default"' in refused.stderr
    assert (
        present(plane, [key(o) for o in template() if o["kind"] != "CustomResourceDefinition"])
        == []
    )
    installed = run(helm_argv("install", RELEASE, str(CHART), *env, "--create-namespace")).stdout
    assert "driving the Hosts of metal with the simulated provisioner" in installed, installed
    rendered = [key(o) for o in template()]
    assert not absent(plane, rendered), "installed but not on the server"
    release = json.loads(run(helm_argv("list", *env, "--output", "json")).stdout)
    assert [(r["name"], r["status"], r["app_version"]) for r in release] == [
        (RELEASE, "deployed", VERSION)
    ]
    # The CRDs work: a Host is admitted (the admission policies run on it).
    done = subprocess.run(
        plane.kubectl_argv("create", "-f", "-"), input=json.dumps(HOST),
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr

    # Another choice is an upgrade with its values: sharded makes a StatefulSet of the
    # Deployment (Helm deletes the one and creates the other) and adds the shards' Role.
    run(helm_argv("upgrade", RELEASE, str(CHART), *env, f"--values={CI / 'sharded-values.yaml'}"))
    sharded = [key(o) for o in template(f"--values={CI / 'sharded-values.yaml'}")]
    assert not absent(plane, sharded)
    assert present(plane, sorted(set(rendered) - set(sharded))) == []

    run(helm_argv("uninstall", RELEASE, *env, "--wait", "--timeout=60s"))
    crds = [k for k in sharded if k[1] == "CustomResourceDefinition"]
    templated = [k for k in sharded if k[1] != "CustomResourceDefinition"]
    assert present(plane, templated) == [], "helm uninstall left these"
    assert not absent(plane, crds), "crds/ is never deleted by Helm"
    assert not absent(plane, [("hoststate.io/v1alpha1", "Host", "metal", "node-0")])
    after = (
        identity(plane, "namespace", "metal"),
        identity(plane, "secret", "bmc-0", "-n", "metal"),
    )
    assert after == before, "the Hosts' namespace or its Secret changed"
    # The release namespace is Helm's --create-namespace, not the chart's: it stays.
    assert run(plane.kubectl_argv("get", "namespace", NS), check=False).returncode == 0
    assert json.loads(run(helm_argv("list", *env, "--all", "--output", "json")).stdout) == []
