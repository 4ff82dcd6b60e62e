"""manifests/openshift/ as an OpenShift administrator expects it (docs/openshift.md):

- a pod that the restricted-v2 SCC admits as it is: no pinned UID, fsGroup or SELinux
  options (the SCC fills them in from the namespace's block); checked on the real
  kube-apiserver under Pod Security Admission ``restricted``, the nearest upstream rule;
- metrics served with a service-ca certificate, scraped by user-workload monitoring: a
  ServiceMonitor with no file paths (no bearerTokenFile, caFile, certFile, keyFile),
  valid under prometheus-operator's own CRD schema on the real kube-apiserver, and the
  metrics reader bound to the ServiceAccount whose token it sends;
- DNS egress to openshift-dns on 5353 (UDP and TCP) and 53.

The rendered objects come from ``kubectl kustomize`` of the built kubectl; the schema and
admission checks run on a bare kube-apiserver of this module with prometheus-operator's
CRDs (testbed/tools.py).
"""

from __future__ import annotations

import copy
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from testbed.control_plane import ControlPlane
from testbed.kube import k8s_bin_dir
from testbed.tools import prometheus_operator_crds

ROOT = Path(__file__).resolve().parents[2]
OPENSHIFT = ROOT / "manifests" / "openshift"
NS = "hoststate-system"
SERVICE = "hoststate-controller-metrics"
CERT_DIR_FLAG = "--metrics-cert-dir"
# what a ServiceMonitor may not name under user-workload monitoring (prometheus-operator's
# arbitraryFSAccessThroughSMs deny: the whole ServiceMonitor is skipped)
FILE_FIELDS = ("bearerTokenFile", "caFile", "certFile", "keyFile")


def _render(folder: Path) -> list[dict[str, Any]]:
    out = subprocess.run(
        [str(k8s_bin_dir() / "kubectl"), "kustomize", str(folder)],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    return [doc for doc in yaml.safe_load_all(out) if doc]


@pytest.fixture(scope="module")
def rendered() -> dict[tuple[str, str], dict[str, Any]]:
    return {(d["kind"], d["metadata"]["name"]): d for d in _render(OPENSHIFT)}


def _pod_spec(rendered: dict[tuple[str, str], dict[str, Any]]) -> dict[str, Any]:
    return rendered[("Deployment", "hoststate-controller")]["spec"]["template"]["spec"]  # type: ignore[no-any-return]


# -- the pod: restricted-v2 -----------------------------------------------------------


def test_pod_template_pins_no_uid_fsgroup_or_selinux(
    rendered: dict[tuple[str, str], dict[str, Any]],
) -> None:
    """restricted-v2 takes the UID and fsGroup from the namespace's allocated block and
    refuses any other, so none is pinned; what it allows and PSA restricted requires stays."""
    spec = _pod_spec(rendered)
    pinned = ("runAsUser", "runAsGroup", "fsGroup", "seLinuxOptions")
    assert not set(pinned) & set(spec.get("securityContext", {}))
    assert spec["securityContext"] == {
        "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    for container in spec["containers"] + spec.get("initContainers", []):
        context = container["securityContext"]
        assert not set(pinned) & set(context), container["name"]
        assert context["allowPrivilegeEscalation"] is False
        assert context["capabilities"] == {"drop": ["ALL"]}
        assert context["readOnlyRootFilesystem"] is True
        assert context["seccompProfile"] == {"type": "RuntimeDefault"}
    allowed = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "image",
               "persistentVolumeClaim", "projected", "secret"}  # fmt: skip
    for volume in spec.get("volumes", []):
        assert set(volume) - {"name"} <= allowed, volume  # restricted-v2's volume types


# -- metrics: service-ca and user-workload monitoring ----------------------------------


def test_metrics_certificate_comes_from_service_ca_where_the_controller_reads_it(
    rendered: dict[tuple[str, str], dict[str, Any]],
) -> None:
    service = rendered[("Service", SERVICE)]
    secret = service["metadata"]["annotations"][
        "service.beta.openshift.io/serving-cert-secret-name"
    ]
    spec = _pod_spec(rendered)
    (container,) = spec["containers"]
    cert_dir = container["args"][container["args"].index(CERT_DIR_FLAG) + 1]
    (mount,) = [m for m in container["volumeMounts"] if m["mountPath"] == cert_dir]
    (volume,) = [v for v in spec["volumes"] if v["name"] == mount["name"]]
    assert volume["secret"]["secretName"] == secret  # tls.crt and tls.key, in --metrics-cert-dir
    assert "--metrics-secure" in container["args"] and "--metrics-insecure" not in container["args"]


def test_servicemonitor_is_in_the_form_user_workload_monitoring_accepts(
    rendered: dict[tuple[str, str], dict[str, Any]],
) -> None:
    """No file paths; the CA from a service-ca-injected ConfigMap, the server name the
    service-ca certificate carries, the token from a Secret in the namespace whose
    ServiceAccount the metrics reader's ClusterRoleBinding names."""
    monitors = [d for d in rendered.values() if d["kind"] == "ServiceMonitor"]
    assert monitors
    for monitor in monitors:
        text = json.dumps(monitor)
        for field in FILE_FIELDS:
            assert f'"{field}"' not in text, (monitor["metadata"]["name"], field)
    (monitor,) = monitors
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["scheme"] == "https"
    tls = endpoint["tlsConfig"]
    assert tls["serverName"] == f"{SERVICE}.{NS}.svc"
    ca = tls["ca"]["configMap"]
    assert ca["key"] == "service-ca.crt"
    configmap = rendered[("ConfigMap", ca["name"])]
    assert (
        configmap["metadata"]["annotations"]["service.beta.openshift.io/inject-cabundle"] == "true"
    )

    auth = endpoint["authorization"]
    assert auth.get("type", "Bearer") == "Bearer" and auth["credentials"]["key"] == "token"
    token = rendered[("Secret", auth["credentials"]["name"])]
    assert token["type"] == "kubernetes.io/service-account-token"
    assert token["metadata"]["namespace"] == NS == monitor["metadata"]["namespace"]
    owner = token["metadata"]["annotations"]["kubernetes.io/service-account.name"]
    assert ("ServiceAccount", owner) in rendered
    binding = rendered[("ClusterRoleBinding", "hoststate-metrics-reader")]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": owner, "namespace": NS}]
    reader = rendered[("ClusterRole", binding["roleRef"]["name"])]
    assert reader["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]


# -- DNS -------------------------------------------------------------------------------


def test_dns_egress_reaches_openshift_dns_on_5353_and_53(
    rendered: dict[tuple[str, str], dict[str, Any]],
) -> None:
    policy = rendered[("NetworkPolicy", "hoststate-controller")]
    assert "Egress" in policy["spec"]["policyTypes"]
    to_dns = [
        rule for rule in policy["spec"]["egress"]
        if {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "openshift-dns"}}}
        in rule.get("to", [])
    ]  # fmt: skip
    ports = {(p["protocol"], p["port"]) for rule in to_dns for p in rule["ports"]}
    assert {("UDP", 5353), ("TCP", 5353), ("UDP", 53), ("TCP", 53)} <= ports


# -- on the real kube-apiserver --------------------------------------------------------


def _run(argv: list[str], *, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    if check and done.returncode != 0:
        raise AssertionError(f"{argv[0]} exited {done.returncode}:\n{done.stdout}{done.stderr}")
    return done


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """A bare kube-apiserver with prometheus-operator's CRDs and the controller's
    namespace under PSA ``restricted`` (enforced on Pods)."""
    with ControlPlane(
        k8s_bin_dir(), tmp_path_factory.mktemp("openshift"), controller_manager=False
    ) as cp:
        _run(cp.kubectl_argv("apply", "--server-side", f"--filename={prometheus_operator_crds()}"))
        cp.wait_established("servicemonitors.monitoring.coreos.com")
        _run(cp.kubectl_argv("create", "namespace", NS))
        _run(cp.kubectl_argv(
            "label", "namespace", NS, "pod-security.kubernetes.io/enforce=restricted",
        ))  # fmt: skip
        # no kube-controller-manager: the ServiceAccounts a Pod names are created by hand
        _run(cp.kubectl_argv("create", "serviceaccount", "default", "-n", NS))
        _run(cp.kubectl_argv("create", "serviceaccount", "hoststate-controller", "-n", NS))
        yield cp


def _create(cp: ControlPlane, obj: dict[str, Any], *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cp.kubectl_argv("create", "-f", "-", *extra),
        input=json.dumps(obj), capture_output=True, text=True, timeout=60,
    )  # fmt: skip


@pytest.mark.slow
def test_pod_from_the_template_is_admitted_under_psa_restricted(
    plane: ControlPlane, rendered: dict[tuple[str, str], dict[str, Any]]
) -> None:
    template = rendered[("Deployment", "hoststate-controller")]["spec"]["template"]
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {**template["metadata"], "name": "as-rendered", "namespace": NS},
           "spec": template["spec"]}  # fmt: skip
    created = _create(plane, pod)
    assert created.returncode == 0, created.stderr
    got = json.loads(
        _run(plane.kubectl_argv("get", "pod", "as-rendered", "-n", NS, "-o", "json")).stdout
    )
    assert "runAsUser" not in got["spec"]["securityContext"]

    # the namespace does enforce: the same pod, escalation allowed, is refused
    loose = copy.deepcopy(pod)
    loose["metadata"]["name"] = "loose"
    del loose["spec"]["containers"][0]["securityContext"]["allowPrivilegeEscalation"]
    refused = _create(plane, loose)
    assert refused.returncode != 0 and "violates PodSecurity" in refused.stderr, refused.stderr
    assert "allowPrivilegeEscalation" in refused.stderr


@pytest.mark.slow
def test_servicemonitor_is_valid_under_prometheus_operators_schema(
    plane: ControlPlane, rendered: dict[tuple[str, str], dict[str, Any]]
) -> None:
    (monitor,) = [d for d in rendered.values() if d["kind"] == "ServiceMonitor"]
    argv = plane.kubectl_argv(
        "apply", "--server-side", "--dry-run=server", "--validate=strict", "-f", "-"
    )
    done = subprocess.run(
        argv, input=json.dumps(monitor), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    # the schema is there and strict: a misspelt field of the same endpoint is refused
    wrong = copy.deepcopy(monitor)
    wrong["spec"]["endpoints"][0]["tlsConfig"]["ca"]["configMapp"] = {"name": "x", "key": "y"}
    done = subprocess.run(argv, input=json.dumps(wrong), capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "configMapp" in done.stderr, done.stderr


@pytest.mark.slow
def test_the_base_pod_passes_psa_restricted_too(plane: ControlPlane) -> None:
    """The non-OpenShift install pins UID 65532 (not 0), which PSA ``restricted`` allows:
    only OpenShift's SCCs need it gone, so the base keeps it."""
    base = {(d["kind"], d["metadata"]["name"]): d for d in _render(ROOT / "manifests")}
    template = base[("Deployment", "hoststate-controller")]["spec"]["template"]
    assert template["spec"]["securityContext"]["runAsUser"] == 65532
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {**template["metadata"], "name": "base", "namespace": NS},
        "spec": template["spec"],
    }
    created = _create(plane, pod)
    assert created.returncode == 0, created.stderr
