"""manifests/ applies to a real kube-apiserver, and its RBAC is least privilege.

One control plane (etcd + kube-apiserver, testbed/control_plane.py) for
the module: the stand-in monitoring CRDs are installed, then
``kubectl apply -k manifests/ --server-side``; the tests read the objects back
and ask the API server's RBAC authorizer (``kubectl auth can-i --as`` the
controller's ServiceAccount) what the controller may and may not do.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from state_controller.runtime.machinery.leader_election import (
    DEFAULT_LEASE,
    LeaderElectionConfig,
    campaign,
)
from state_controller.runtime.shards.sharder import SHARDER_LEASE
from state_controller.sharding.leases import LEASE_PREFIX
from state_controller.sharding.members import Members, shard_names
from state_controller.sharding.service_claims import LEDGER_LEASE
from testbed.control_plane import ControlPlane
from testbed.kube import as_service_account, deployment_config
from testbed.secret_volume import write_secret_volume

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "manifests"
MONITORING_CRDS = ROOT / "testbed" / "monitoring-crds.yaml"
BUILD = ROOT / "tools" / "k8s" / "build.sh"
METRICS_CERT_DIR = "/etc/hoststate/metrics-cert"  # where the metrics Secret is mounted
BUILD_TIMEOUT = 120.0  # a cached build.sh answers at once; a cold build takes ~10 min

CONTROLLER_NS = "hoststate-system"
HOSTS_NS = "metal"
SA = "hoststate-controller"
AS_CONTROLLER = f"--as=system:serviceaccount:{CONTROLLER_NS}:{SA}"
PART_OF = "app.kubernetes.io/part-of=hoststate"
# the controller's own RBAC (the metrics reader's role is for Prometheus, not for it)
OWN = f"{PART_OF},app.kubernetes.io/component!=metrics-reader"

HOSTS = "hosts.hoststate.io"
HOSTSTATES = "hoststates.hoststate.io"
NODEPOOLS = "nodepools.hoststate.io"
CONTROLLERS = "hoststatecontrollers.hoststate.io"
LEASES = "leases.coordination.k8s.io"
OUR_LEASE = f"{LEASES}/{DEFAULT_LEASE}"  # the one Lease read and written: leader election

# Everything the controller is granted: (apiGroup, resource, namespace or None
# for cluster-wide) -> verbs. A new permission must be added here on purpose.
GRANTED: dict[tuple[str, str, str | None], set[str]] = {
    ("hoststate.io", "hosts", HOSTS_NS): {"get", "list", "watch", "patch"},
    ("hoststate.io", "hosts/status", HOSTS_NS): {"update"},
    ("hoststate.io", "hoststates", HOSTS_NS): {"get", "list", "watch", "create", "patch"},
    ("hoststate.io", "hoststates/status", HOSTS_NS): {"update"},
    ("", "secrets", HOSTS_NS): {"get", "list", "watch"},
    ("", "events", HOSTS_NS): {"create", "patch"},
    ("coordination.k8s.io", "leases", CONTROLLER_NS): {"get", "create", "update"},
    # node-only HostStates, in the controller's namespace
    ("hoststate.io", "hoststates", CONTROLLER_NS): {"get", "list", "watch", "create", "delete"},
    ("hoststate.io", "hoststates/status", CONTROLLER_NS): {"update"},
    ("", "events", CONTROLLER_NS): {"create", "patch"},
    # cluster-wide reads: Nodes, the pods of cordoned Nodes, disruption budgets
    ("", "nodes", None): {"get", "list", "watch"},
    ("", "pods", None): {"list", "watch"},
    ("policy", "poddisruptionbudgets", None): {"list", "watch"},
    # Cluster API's Machines, where installed: their in-place updates, read only
    ("cluster.x-k8s.io", "machines", None): {"get", "list", "watch"},
    ("hoststate.io", "nodepools", None): {"get", "list", "watch", "create", "delete"},
    ("hoststate.io", "nodepools/status", None): {"update"},
    # the controller's own status (one HostStateController)
    ("hoststate.io", "hoststatecontrollers", None): {"get", "list", "watch", "create"},
    ("hoststate.io", "hoststatecontrollers/status", None): {"update"},
    # who may read /metrics: the API server reviews each scraper's token
    ("authentication.k8s.io", "tokenreviews", None): {"create"},
    ("authorization.k8s.io", "subjectaccessreviews", None): {"create"},
}


# What drives Hosts in the base install: every observe-only install (manifests/observe/,
# manifests/observe-namespaces/, manifests/openshift/) leaves out exactly these, through
# manifests/components/observe-only/.
DRIVING = sorted(
    [
        ("CustomResourceDefinition", HOSTS),
        ("Role", SA),  # Hosts, hosts/status, their Secrets, HostStates and Events in `metal`
        ("RoleBinding", SA),
        *(
            (kind, policy)
            for kind in ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")
            for policy in (
                "hoststate-bmc-credentials-readable",
                "hoststate-host-data-readable",
                "hoststate-secret-destinations",
                "hoststate-controller-marks",
            )
        ),
    ]
)
OBSERVE_ONLY = ("observe", "observe-namespaces", "openshift")

# -- fixtures ------------------------------------------------------------------


@pytest.fixture(scope="module")
def cp(control_plane: ControlPlane) -> ControlPlane:
    """The session's control plane (testbed/kube.py), monitoring CRDs included."""
    return control_plane


@pytest.fixture(scope="module")
def applied(manifests: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    return manifests


# -- helpers -------------------------------------------------------------------


def _run(cp: ControlPlane, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cp.kubectl_argv(*args), capture_output=True, text=True, timeout=60, cwd=ROOT
    )


def _kubectl(cp: ControlPlane, *args: str) -> subprocess.CompletedProcess[str]:
    result = _run(cp, *args)
    assert result.returncode == 0, (
        f"kubectl {' '.join(args)} failed ({result.returncode}):\n"
        f"{result.stdout}\n{result.stderr}\napiserver log:\n{cp.apiserver_log_tail(20)}"
    )
    return result


def _establish(cp: ControlPlane, crd: str) -> None:
    cp.wait_established(crd, timeout=30)


def _get(cp: ControlPlane, *args: str) -> Any:
    return json.loads(_kubectl(cp, "get", *args, "-o", "json").stdout)


def _rendered(cp: ControlPlane, folder: Path = MANIFESTS) -> list[dict[str, Any]]:
    """``kubectl kustomize manifests/`` (or an overlay), parsed (no server involved)."""
    out = subprocess.run(
        [str(cp.kubectl), "kustomize", str(folder)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


def _rbac_rules(cp: ControlPlane) -> list[tuple[str, str | None, dict[str, Any]]]:
    """(kind, namespace, rule) for every rule in our Roles and ClusterRoles."""
    found = []
    roles = _get(cp, "roles", "-A", "-l", OWN)["items"]
    cluster_roles = _get(cp, "clusterroles", "-l", OWN)["items"]
    for role in [*roles, *cluster_roles]:
        for rule in role.get("rules") or []:
            found.append((role["kind"], role["metadata"].get("namespace"), rule))
    return found


def _container(cp: ControlPlane) -> dict[str, Any]:
    deploy = _get(cp, "deployment", SA, "-n", CONTROLLER_NS)
    (container,) = deploy["spec"]["template"]["spec"]["containers"]
    return container  # type: ignore[no-any-return]


def _flag(args: list[str], name: str) -> str:
    return args[args.index(name) + 1]


# -- (a) it applies --------------------------------------------------------------


def test_apply_succeeds_and_crds_are_established(
    cp: ControlPlane, applied: subprocess.CompletedProcess[str]
) -> None:
    assert "deployment.apps/hoststate-controller serverside-applied" in applied.stdout
    for crd in (HOSTS, HOSTSTATES, NODEPOOLS):
        _establish(cp, crd)
    # Applying again is a no-op, not a conflict.
    _kubectl(cp, "apply", "-k", str(MANIFESTS), "--server-side")
    # The API is served: the controller's resources can be listed.
    _kubectl(cp, "get", f"{HOSTS},{HOSTSTATES}", "-n", HOSTS_NS)


def test_the_crd_folder_applies_as_a_plain_folder(
    cp: ControlPlane, applied: subprocess.CompletedProcess[str]
) -> None:
    """`kubectl apply -f api/v1alpha1/` applies every CRD and exits 0: the folder holds
    nothing but CRDs (its kustomization lives in api/, for manifests/ to include)."""
    result = _kubectl(cp, "apply", "-f", str(ROOT / "api" / "v1alpha1"))
    applied_crds = sorted(line.split()[0] for line in result.stdout.splitlines())
    assert applied_crds == sorted(
        f"customresourcedefinition.apiextensions.k8s.io/{crd}"
        for crd in (HOSTS, HOSTSTATES, NODEPOOLS, CONTROLLERS)
    ), result.stdout
    assert "error" not in result.stderr.lower(), result.stderr
    # and manifests/ still takes the CRDs through api/kustomization.yaml
    kinds = [(d["kind"], d["metadata"]["name"]) for d in _rendered(cp)]
    assert ("CustomResourceDefinition", HOSTS) in kinds
    assert ("CustomResourceDefinition", HOSTSTATES) in kinds
    assert ("CustomResourceDefinition", NODEPOOLS) in kinds
    assert ("CustomResourceDefinition", CONTROLLERS) in kinds
    _kubectl(cp, "apply", "-k", str(MANIFESTS), "--server-side")


def test_every_rendered_object_exists(cp: ControlPlane, applied: object) -> None:
    for obj in _rendered(cp):
        meta = obj["metadata"]
        kind = f"{obj['kind']}.{obj['apiVersion'].split('/')[0]}"
        if "/" not in obj["apiVersion"]:  # core group
            kind = obj["kind"]
        ns = ["-n", meta["namespace"]] if "namespace" in meta else []
        got = _get(cp, kind, meta["name"], *ns)
        assert got["metadata"]["labels"]["app.kubernetes.io/name"] == "hoststate", kind


def test_no_install_declares_a_namespace_it_does_not_own(cp: ControlPlane, applied: object) -> None:
    """`kubectl delete -k` deletes every Namespace an install declares, and with it every
    object in it: the Hosts, the BareMetalHosts (which baremetal-operator would then
    deprovision) and their Secrets. Only the controller's own namespace is declared, by
    every install that runs the controller; the machines' namespaces are the user's."""
    folders = [
        k.parent
        for k in sorted(MANIFESTS.glob("*/kustomization.yaml"))
        if yaml.safe_load(k.read_text())["kind"] == "Kustomization"
    ]
    assert {f.name for f in folders} >= {"base", "metal3", *OBSERVE_ONLY}
    for folder in [MANIFESTS, *folders]:
        rendered = _rendered(cp, folder)
        declared = {d["metadata"]["name"] for d in rendered if d["kind"] == "Namespace"}
        runs = any(d["kind"] in ("Deployment", "StatefulSet") for d in rendered)
        assert declared == ({CONTROLLER_NS} if runs else set()), folder


def test_observe_only_installs_drive_nothing(cp: ControlPlane, applied: object) -> None:
    """manifests/observe/, observe-namespaces/ and openshift/ are the base without what
    drives Hosts (DRIVING): no Host CRD, no rule on Hosts or Secrets, no admission policy on
    Hosts, no `hosts` in --sources; what they read of metal3's or the Machine Config
    Operator's, they read only; observe-namespaces/ binds the namespaces it names."""
    from state_controller.cli import build_parser
    from state_controller.commands.run import chosen_sources, watched_namespaces

    base = {(d["kind"], d["metadata"]["name"]) for d in _rendered(cp)}
    for folder in OBSERVE_ONLY:
        rendered = _rendered(cp, MANIFESTS / folder)
        objects = {(d["kind"], d["metadata"]["name"]): d for d in rendered}
        assert sorted(base - set(objects)) == DRIVING, folder
        roles = [d for d in rendered if d["kind"] in ("Role", "ClusterRole")]
        for rule in [r for role in roles for r in role.get("rules") or []]:
            assert not {"hosts", "hosts/status", "secrets"} & set(rule.get("resources", []))
            if {"metal3.io", "machineconfiguration.openshift.io"} & set(rule.get("apiGroups", [])):
                assert set(rule["verbs"]) <= {"get", "list", "watch"}, (folder, rule)
        policies = {n for k, n in objects if k == "ValidatingAdmissionPolicy"}
        assert policies == {"hoststate-node-links"}, folder  # a Node's link: not the kubelet's
        (container,) = objects[("Deployment", SA)]["spec"]["template"]["spec"]["containers"]
        args = build_parser().parse_args(container["args"])
        assert "hosts" not in chosen_sources(args) and args.provisioner is None, folder
        bindings = {
            d["metadata"].get("namespace")
            for d in rendered
            if d["kind"] in ("RoleBinding", "ClusterRoleBinding")
            and d["roleRef"]["name"] == "hoststate-controller-observe"
        }
        if folder == "observe":  # every namespace, through one ClusterRoleBinding
            assert watched_namespaces(args) is None and bindings == {None}
        if folder == "observe-namespaces":  # the ones named, each bound, and no other
            assert set(watched_namespaces(args) or ()) == bindings
            assert bindings == {"metal3", "baremetal-operator-system"}


# -- (b) content -----------------------------------------------------------------


def test_deployment(cp: ControlPlane, applied: object) -> None:
    deploy = _get(cp, "deployment", SA, "-n", CONTROLLER_NS)
    spec = deploy["spec"]
    pod = spec["template"]["spec"]
    container = _container(cp)
    assert spec["replicas"] == 2
    assert pod["serviceAccountName"] == SA
    assert container["image"] == "localhost/hoststate/state-controller:0.1.0"
    assert [*container["command"], *container["args"]] == [
        *("state-controller", "run", "--namespace", HOSTS_NS, "--leader-elect"),
        *("--leader-election-namespace", CONTROLLER_NS),
        *("--metrics-bind-address", ":8443", "--metrics-secure"),
        *("--metrics-cert-dir", METRICS_CERT_DIR),
        *("--health-probe-bind-address", ":8081"),
    ]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"metrics": 8443, "health": 8081}
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        get = container[probe]["httpGet"]
        assert (get["path"], ports[get["port"]]) == (path, 8081), probe
    resources = container["resources"]
    assert resources["requests"] == {"cpu": "100m", "memory": "256Mi"}
    assert resources["limits"]["memory"] == "512Mi"
    sc = container["securityContext"]
    assert sc["runAsNonRoot"] is True
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"]["drop"] == ["ALL"]
    assert "add" not in sc["capabilities"]
    assert sc["seccompProfile"]["type"] == "RuntimeDefault"
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
    # The selector picks the pod template.
    labels = spec["template"]["metadata"]["labels"]
    assert spec["selector"]["matchLabels"].items() <= labels.items()


def test_service_and_monitors(cp: ControlPlane, applied: object) -> None:
    deploy = _get(cp, "deployment", SA, "-n", CONTROLLER_NS)
    pod_labels = deploy["spec"]["template"]["metadata"]["labels"]
    svc = _get(cp, "service", "hoststate-controller-metrics", "-n", CONTROLLER_NS)
    (port,) = svc["spec"]["ports"]
    assert (port["name"], port["port"], port["targetPort"]) == ("metrics", 8443, "metrics")
    assert svc["spec"]["selector"].items() <= pod_labels.items()

    (monitor,) = _get(cp, "servicemonitors.monitoring.coreos.com", "-n", CONTROLLER_NS)["items"]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= svc["metadata"]["labels"].items()
    assert CONTROLLER_NS in monitor["spec"]["namespaceSelector"]["matchNames"]
    [endpoint] = monitor["spec"]["endpoints"]
    assert endpoint["port"] == "metrics" and endpoint["scheme"] == "https"
    assert endpoint["bearerTokenFile"] == "/var/run/secrets/kubernetes.io/serviceaccount/token"

    rule = _get(
        cp, "prometheusrules.monitoring.coreos.com", "hoststate-alerts", "-n", CONTROLLER_NS
    )
    plain = yaml.safe_load((ROOT / "manifests" / "prometheus" / "hoststate.rules.yaml").read_text())
    assert rule["spec"]["groups"] == plain["groups"]  # the same alerts for both kinds of Prometheus
    assert sum(len(g["rules"]) for g in plain["groups"]) >= 11


def test_prometheus_verifies_the_controllers_certificate(cp: ControlPlane, applied: object) -> None:
    """No insecureSkipVerify anywhere: the ServiceMonitor checks the certificate against
    ca.crt of the Secret the controller's certificate is mounted from, for the metrics
    Service's name, which the docs' cert-manager Certificate is made for."""
    from state_controller.cli import build_parser

    for folder in (MANIFESTS, MANIFESTS / "ironic"):
        rendered = yaml.safe_dump_all(_rendered(cp, folder))
        assert "insecureSkipVerify" not in rendered, folder
    (monitor,) = _get(cp, "servicemonitors.monitoring.coreos.com", "-n", CONTROLLER_NS)["items"]
    [endpoint] = monitor["spec"]["endpoints"]
    tls = endpoint["tlsConfig"]
    service = f"hoststate-controller-metrics.{CONTROLLER_NS}.svc"
    assert tls["serverName"] == service
    assert tls["ca"]["secret"]["key"] == "ca.crt"

    pod = _get(cp, "deployment", SA, "-n", CONTROLLER_NS)["spec"]["template"]["spec"]
    container = _container(cp)
    (volume,) = [v for v in pod["volumes"] if v["name"] == "metrics-cert"]
    (mount,) = [m for m in container["volumeMounts"] if m["name"] == "metrics-cert"]
    assert volume["secret"]["secretName"] == tls["ca"]["secret"]["name"]
    assert volume["secret"]["optional"] is True  # the controller starts self-signed without it
    assert volume["secret"]["defaultMode"] == 0o440
    assert pod["securityContext"]["fsGroup"] == pod["securityContext"]["runAsGroup"]
    assert mount["readOnly"] is True
    assert build_parser().parse_args(container["args"]).metrics_cert_dir == mount["mountPath"]

    docs = (ROOT / "docs" / "cluster.md").read_text()
    blocks = [b.split("\n", 1)[1] for b in docs.split("```")[1::2] if b.startswith("yaml")]
    objects = [o for b in blocks for o in yaml.safe_load_all(b) if o]
    (serving,) = [o for o in objects if o["kind"] == "Certificate" and not o["spec"].get("isCA")]
    assert serving["metadata"]["namespace"] == CONTROLLER_NS
    assert serving["spec"]["secretName"] == volume["secret"]["secretName"]
    assert service in serving["spec"]["dnsNames"]


def test_the_controller_may_talk_only_to_what_it_needs(cp: ControlPlane, applied: object) -> None:
    """The NetworkPolicy selects the controller's pods, lets in only the ports they serve
    (metrics, probes), and lets out only the API server, Ironic (the port the Ironic
    overlay's --ironic-url names) and DNS."""
    from urllib.parse import urlsplit

    from state_controller.cli import build_parser

    policy = _get(cp, "networkpolicy", "hoststate-controller", "-n", CONTROLLER_NS)["spec"]
    template = _get(cp, "deployment", SA, "-n", CONTROLLER_NS)["spec"]["template"]
    assert policy["podSelector"]["matchLabels"].items() <= template["metadata"]["labels"].items()
    assert sorted(policy["policyTypes"]) == ["Egress", "Ingress"]
    served = {p["containerPort"] for p in _container(cp)["ports"]}
    let_in = {p["port"] for rule in policy["ingress"] for p in rule["ports"]}
    assert let_in == served
    let_out = {(p["protocol"], p["port"]) for rule in policy["egress"] for p in rule["ports"]}
    overlay = _rendered(cp, MANIFESTS / "ironic")
    (deployment,) = [d for d in overlay if d["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    ironic = urlsplit(build_parser().parse_args(container["args"]).ironic_url).port
    assert let_out == {
        ("TCP", 443), ("TCP", 6443), ("TCP", ironic), ("UDP", 53), ("TCP", 53)
    }  # fmt: skip


def test_no_wildcards_anywhere(cp: ControlPlane, applied: object) -> None:
    rendered = [
        (doc["kind"], rule)
        for doc in _rendered(cp)
        if doc["kind"] in ("Role", "ClusterRole")
        for rule in doc.get("rules") or []
    ]
    served = [(kind, rule) for kind, _, rule in _rbac_rules(cp)]
    assert rendered and served
    for kind, rule in [*rendered, *served]:
        for field in ("verbs", "resources", "apiGroups", "nonResourceURLs"):
            assert "*" not in rule.get(field, []), f"{kind} rule {rule} has '*' in {field}"
        # the one non-resource URL granted: /metrics, read by Prometheus (metrics-reader.yaml)
        if "nonResourceURLs" in rule:
            assert rule == {"nonResourceURLs": ["/metrics"], "verbs": ["get"]}, rule


def test_rules_are_exactly_the_granted_table(cp: ControlPlane, applied: object) -> None:
    """The Roles grant what GRANTED lists, no more; Roles sit where the flags point."""
    args = _container(cp)["args"]
    assert _flag(args, "--namespace") == HOSTS_NS
    assert _flag(args, "--leader-election-namespace") == CONTROLLER_NS

    granted: dict[tuple[str, str, str | None], set[str]] = {}
    for kind, ns, rule in _rbac_rules(cp):
        scope = None if kind == "ClusterRole" else ns
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                granted.setdefault((group, resource, scope), set()).update(rule["verbs"])
    assert granted == GRANTED

    # Every Role is bound to the controller's ServiceAccount, and nothing else.
    bindings = [
        *_get(cp, "rolebindings", "-A", "-l", OWN)["items"],
        *_get(cp, "clusterrolebindings", "-l", OWN)["items"],
    ]
    roles = {
        (r["kind"], r["metadata"].get("namespace"), r["metadata"]["name"])
        for r in [
            *_get(cp, "roles", "-A", "-l", OWN)["items"],
            *_get(cp, "clusterroles", "-l", OWN)["items"],
        ]
    }
    bound = set()
    for b in bindings:
        assert b["subjects"] == [{"kind": "ServiceAccount", "name": SA, "namespace": CONTROLLER_NS}]
        ns = b["metadata"].get("namespace") if b["roleRef"]["kind"] == "Role" else None
        bound.add((b["roleRef"]["kind"], ns, b["roleRef"]["name"]))
    assert bound == roles


# -- (c) what the API server lets the controller do ------------------------------------


def _can_i(cp: ControlPlane, verb: str, resource: str, *scope: str) -> bool:
    args = ["auth", "can-i", verb, resource, *scope, AS_CONTROLLER]
    if resource.endswith("/status"):
        args[3:4] = [resource.removesuffix("/status"), "--subresource=status"]
    result = _run(cp, *args)
    answer = result.stdout.strip()
    assert result.returncode in (0, 1), f"kubectl {' '.join(args)}: {result.stderr}"
    assert answer.startswith("yes" if result.returncode == 0 else "no"), answer
    return result.returncode == 0


ALLOWED = [
    # what the controller does, and where
    ("list", HOSTS, "-n", HOSTS_NS),
    ("watch", HOSTS, "-n", HOSTS_NS),
    ("patch", HOSTS, "-n", HOSTS_NS),
    ("update", f"{HOSTS}/status", "-n", HOSTS_NS),
    ("create", HOSTSTATES, "-n", HOSTS_NS),
    ("update", f"{HOSTSTATES}/status", "-n", HOSTS_NS),
    ("get", "secrets", "-n", HOSTS_NS),
    ("watch", "secrets", "-n", HOSTS_NS),
    ("create", "events", "-n", HOSTS_NS),
    ("patch", "events", "-n", HOSTS_NS),
    ("get", OUR_LEASE, "-n", CONTROLLER_NS),
    ("create", LEASES, "-n", CONTROLLER_NS),
    ("update", OUR_LEASE, "-n", CONTROLLER_NS),
    ("patch", HOSTSTATES, "-n", HOSTS_NS),
    ("create", HOSTSTATES, "-n", CONTROLLER_NS),
    ("delete", HOSTSTATES, "-n", CONTROLLER_NS),
    ("watch", "nodes"),
    ("watch", "pods", "--all-namespaces"),
    ("list", "poddisruptionbudgets.policy", "--all-namespaces"),
    ("create", CONTROLLERS),
    ("update", CONTROLLERS, "--subresource=status"),
]

DENIED = [
    # Secrets: only `metal`, never cluster-wide, never written
    ("get", "secrets", "-n", "kube-system"),
    ("get", "secrets", "-n", "default"),
    ("get", "secrets", "-n", CONTROLLER_NS),
    ("list", "secrets", "--all-namespaces"),
    ("create", "secrets", "-n", HOSTS_NS),
    ("update", "secrets", "-n", HOSTS_NS),
    # Hosts belong to the operator; other namespaces are not managed
    ("delete", HOSTS, "-n", HOSTS_NS),
    ("create", HOSTS, "-n", HOSTS_NS),
    ("list", HOSTS, "--all-namespaces"),
    ("get", HOSTS, "-n", "default"),
    ("create", HOSTSTATES, "-n", "default"),
    ("create", "events", "-n", "default"),
    # nothing else in `metal`
    ("create", "pods", "-n", HOSTS_NS),
    # Nodes and Pods are read, never written: updates are reported, not driven
    ("patch", "nodes"),
    ("update", "nodes/status"),
    ("delete", "pods", "-n", HOSTS_NS),
    ("create", "pods/eviction", "-n", HOSTS_NS),
    ("get", "pods", "-n", HOSTS_NS),
    ("get", "configmaps", "-n", HOSTS_NS),
    ("create", "rolebindings.rbac.authorization.k8s.io", "-n", HOSTS_NS),
    # nothing the code does not do yet
    ("update", HOSTS, "-n", HOSTS_NS),
    ("delete", HOSTSTATES, "-n", HOSTS_NS),
    ("update", "events", "-n", HOSTS_NS),
    # Leases: only its own, in its own namespace, never deleted
    ("update", OUR_LEASE, "-n", "default"),
    ("update", OUR_LEASE, "-n", HOSTS_NS),
    ("delete", OUR_LEASE, "-n", CONTROLLER_NS),
    ("patch", OUR_LEASE, "-n", CONTROLLER_NS),
    ("list", LEASES, "--all-namespaces"),
    ("get", LEASES, "-n", CONTROLLER_NS),  # any Lease: no
    ("update", f"{LEASES}/another-controller", "-n", CONTROLLER_NS),
    ("get", f"{LEASES}/another-controller", "-n", CONTROLLER_NS),
    ("*", "*", "--all-namespaces"),
]


@pytest.mark.parametrize("check", ALLOWED, ids=lambda c: " ".join(c))
def test_controller_can(cp: ControlPlane, applied: object, check: tuple[str, ...]) -> None:
    assert _can_i(cp, *check), f"the controller needs: {' '.join(check)}"


@pytest.mark.parametrize("check", DENIED, ids=lambda c: " ".join(c))
def test_controller_cannot(cp: ControlPlane, applied: object, check: tuple[str, ...]) -> None:
    assert not _can_i(cp, *check), f"the controller must not: {' '.join(check)}"


def test_every_granted_verb_is_allowed(cp: ControlPlane, applied: object) -> None:
    """The table and the API server agree, verb by verb."""
    for (group, resource, ns), verbs in GRANTED.items():
        base, _, sub = resource.partition("/")
        qualified = f"{base}.{group}" if group else base
        if sub:
            qualified += f"/{sub}"
        scope = ("-n", ns) if ns else ()
        for verb in sorted(verbs):
            named = qualified == LEASES and verb != "create"  # one Lease, by its name
            resource = f"{qualified}/{DEFAULT_LEASE}" if named else qualified
            assert _can_i(cp, verb, resource, *scope), (verb, resource, ns)


def test_leases_are_the_controllers_own_by_name(cp: ControlPlane, applied: object) -> None:
    """get and update name the one Lease the controller campaigns for (create cannot be
    limited by name: the object does not exist yet); the Deployment keeps its name."""
    assert "--leader-election-id" not in _container(cp)["args"]  # so: DEFAULT_LEASE
    rules = [
        rule
        for kind, ns, rule in _rbac_rules(cp)
        if "leases" in rule["resources"] and ns == CONTROLLER_NS
    ]
    assert sorted((sorted(r["verbs"]), r.get("resourceNames")) for r in rules) == [
        (["create"], None),
        (["get", "update"], [DEFAULT_LEASE]),
    ]


def _try_to_lead(api: client.ApiClient, lease: str) -> bool:
    """One try of the controller's leader election (runtime/machinery/leader_election.py)
    for ``lease``."""
    cfg = LeaderElectionConfig(CONTROLLER_NS, lease, identity="replica-under-test")
    election = campaign(api, cfg, on_started=lambda: None, on_stopped=lambda: None)
    return bool(election.try_acquire_or_renew())  # type: ignore[no-untyped-call]


def test_leader_election_works_as_the_controller_on_its_lease_only(
    cp: ControlPlane, applied: object
) -> None:
    """As the controller's ServiceAccount: its Lease is created, then renewed; another
    Lease in the same namespace cannot even be read."""
    configuration = as_service_account(cp, SA, CONTROLLER_NS)
    leases = (DEFAULT_LEASE, "another-controller")
    for lease in leases:
        _kubectl(cp, "delete", "lease", lease, "-n", CONTROLLER_NS, "--ignore-not-found")
    try:
        with client.ApiClient(configuration) as api:
            assert _try_to_lead(api, DEFAULT_LEASE)  # get (404), create
            assert _try_to_lead(api, DEFAULT_LEASE)  # get, update
            lease = _get(cp, "lease", DEFAULT_LEASE, "-n", CONTROLLER_NS)
            assert lease["spec"]["holderIdentity"] == "replica-under-test"
            assert not _try_to_lead(api, "another-controller")  # get: 403
        assert _run(cp, "get", "lease", "another-controller", "-n", CONTROLLER_NS).returncode
    finally:
        for lease in leases:
            _kubectl(cp, "delete", "lease", lease, "-n", CONTROLLER_NS, "--ignore-not-found")


# -- (d) the Ironic overlay ----------------------------------------------------------


def test_ironic_overlay_changes_only_the_deployment_and_its_flags_parse(
    cp: ControlPlane, applied: object, tmp_path: Path
) -> None:
    from state_controller.cli import build_parser
    from state_controller.commands.flags import ironic_settings

    base = {(d["kind"], d["metadata"]["name"]): d for d in _rendered(cp)}
    overlay = {(d["kind"], d["metadata"]["name"]): d for d in _rendered(cp, MANIFESTS / "ironic")}
    assert overlay.keys() == base.keys()
    changed = [key for key in base if base[key] != overlay[key]]
    assert changed == [("Deployment", SA)]

    pod = overlay[("Deployment", SA)]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    (mount,) = [m for m in container["volumeMounts"] if m["name"] == "ironic-credentials"]
    (volume,) = [v for v in pod["volumes"] if v["name"] == "ironic-credentials"]
    assert mount["readOnly"] is True
    assert volume["secret"]["defaultMode"] == 0o440
    assert pod["securityContext"]["fsGroup"] == pod["securityContext"]["runAsGroup"]

    # The rendered arguments are ones `state-controller run` accepts, and the credentials
    # folder they name reads as the kubelet lays out the Secret.
    args = build_parser().parse_args(container["args"])
    assert args.provisioner == "ironic"
    assert args.ironic_credentials_dir == mount["mountPath"]
    assert args.ironic_url.startswith("https://") and not args.ironic_allow_http
    (ca_mount,) = [m for m in container["volumeMounts"] if m["name"] == "ironic-ca"]
    assert args.ironic_ca_file.startswith(ca_mount["mountPath"] + "/")
    secret = write_secret_volume(tmp_path / "ironic", {"username": "u", "password": "p\n"})
    args.ironic_credentials_dir = str(secret)
    ca = write_secret_volume(tmp_path / "ironic-ca", {"ca.crt": "-----BEGIN CERTIFICATE-----"})
    args.ironic_ca_file = str(ca / "ca.crt")
    settings = ironic_settings(args)
    assert settings is not None
    assert (settings.url, settings.username, settings.password) == (
        args.ironic_url,
        "u",
        "p",
    )

    # The API server takes the overlay as it is.
    _kubectl(cp, "apply", "-k", str(MANIFESTS / "ironic"), "--server-side", "--dry-run=server")


# -- (d2) the sharded overlay ---------------------------------------------------------


def test_sharded_overlay_runs_shards_as_a_statefulset_that_may_use_its_namespaces_leases(
    cp: ControlPlane, applied: object
) -> None:
    """The Deployment becomes a StatefulSet of three (stable pod names: stable shards)
    whose replicas run --shard with their pod's name, never --leader-elect, and --shards
    with the replica count; one Role adds reading the Leases of the controller's namespace
    and writing only those replicas' and the sharder's, nothing anywhere else; a tenant
    may write none."""
    from state_controller.cli import build_parser
    from state_controller.commands.run import shard_problem

    base = {(d["kind"], d["metadata"]["name"]): d for d in _rendered(cp)}
    overlay = {(d["kind"], d["metadata"]["name"]): d for d in _rendered(cp, MANIFESTS / "sharded")}
    assert sorted(set(overlay) - set(base)) == [
        ("Role", "hoststate-controller-shards"),
        ("RoleBinding", "hoststate-controller-shards"),
        ("StatefulSet", SA),
    ]
    assert sorted(set(base) - set(overlay)) == [("Deployment", SA)]
    shards = overlay[("StatefulSet", SA)]["spec"]
    assert shards["replicas"] == 3 and shards["podManagementPolicy"] == "Parallel"
    (container,) = shards["template"]["spec"]["containers"]
    env = {e["name"]: e.get("valueFrom", {}).get("fieldRef", {}) for e in container["env"]}
    assert env["POD_NAME"] == {"fieldPath": "metadata.name"}
    # the args as the kubelet expands them for the first pod
    expanded = [a.replace("$(POD_NAME)", f"{SA}-0") for a in container["args"]]
    args = build_parser().parse_args(expanded)
    assert args.shard == f"{SA}-0" and not args.leader_elect
    sources = set(args.sources.split(","))
    assert shard_problem(args.shard, leader_elect=args.leader_elect, sources=sources) == ""

    # --shards is the replica count, and the Role writes exactly those replicas' Leases
    assert args.shards == str(shards["replicas"])
    members = Members(shard_names(args.shards, args.shard), args.lease_duration)
    ours = sorted([SHARDER_LEASE, *(LEASE_PREFIX + m for m in members.names)])
    role = overlay[("Role", "hoststate-controller-shards")]
    named = sorted(n for r in role["rules"] for n in r.get("resourceNames") or ())
    assert named == sorted([*ours, LEDGER_LEASE])

    _kubectl(cp, "apply", "-k", str(MANIFESTS / "sharded"), "--server-side", "--dry-run=server")
    rbac = str(MANIFESTS / "sharded" / "rbac-sharded.yaml")
    _kubectl(cp, "apply", "-f", rbac, "--server-side")
    try:
        for verb in ("get", "list", "watch", "create"):
            assert _can_i(cp, verb, LEASES, "-n", CONTROLLER_NS), verb
        for verb in ("update", "patch", "delete"):
            for lease in ours:
                assert _can_i(cp, verb, f"{LEASES}/{lease}", "-n", CONTROLLER_NS), (verb, lease)
            for lease in (f"{LEASE_PREFIX}{SA}-3", DEFAULT_LEASE + "-other", ""):
                resource = f"{LEASES}/{lease}" if lease else LEASES
                assert not _can_i(cp, verb, resource, "-n", CONTROLLER_NS), (verb, lease)
            # the servicing ledger: every replica writes its claims; nobody deletes it
            ledger = f"{LEASES}/{LEDGER_LEASE}"
            assert _can_i(cp, verb, ledger, "-n", CONTROLLER_NS) is (verb != "delete"), verb
        for verb, where in (("list", HOSTS_NS), ("update", "kube-system")):
            assert not _can_i(cp, verb, LEASES, "-n", where), (verb, where)
        tenant = f"--as=system:serviceaccount:{HOSTS_NS}:default"
        for verb in ("create", "update", "patch"):
            asked = _run(cp, "auth", "can-i", verb, LEASES, "-n", CONTROLLER_NS, tenant)
            assert asked.stdout.strip() == "no", (verb, asked.stdout)
        _the_sharders_lease_is_taken_from_a_holder_no_replica_could_be(cp, members)
    finally:
        _kubectl(cp, "delete", "-f", rbac)


def _the_sharders_lease_is_taken_from_a_holder_no_replica_could_be(
    cp: ControlPlane, members: Members
) -> None:
    """As the controller's ServiceAccount, with the sharded Role: a hoststate-sharder Lease
    someone else took first (held for 68 years by its word) is taken over at the first
    try, not waited out; one a configured replica holds is left alone."""
    configuration = as_service_account(cp, SA, CONTROLLER_NS)
    me = f"{SA}-0_0123abcd"
    cfg = LeaderElectionConfig(CONTROLLER_NS, SHARDER_LEASE, me, may_hold=members.may_hold_sharder)
    try:
        with client.ApiClient(configuration) as api:
            for holder, taken in (("mallory", True), (f"{SA}-1_0123abcd", False)):
                _held(cp, SHARDER_LEASE, holder)
                election = campaign(api, cfg, on_started=lambda: None, on_stopped=lambda: None)
                assert election.try_acquire_or_renew() is taken, holder  # type: ignore[no-untyped-call]
                lease = _get(cp, "lease", SHARDER_LEASE, "-n", CONTROLLER_NS)
                assert lease["spec"]["holderIdentity"] == (me if taken else holder)
    finally:
        _kubectl(cp, "delete", "lease", SHARDER_LEASE, "-n", CONTROLLER_NS, "--ignore-not-found")


def _held(cp: ControlPlane, lease: str, holder: str) -> None:
    """``lease`` held by ``holder``, renewed now, for as long as a Lease may say."""
    now = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
    body = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": lease, "namespace": CONTROLLER_NS},
        "spec": {
            "holderIdentity": holder,
            "leaseDurationSeconds": 2_147_483_647,
            "acquireTime": now,
            "renewTime": now,
        },
    }
    subprocess.run(
        cp.kubectl_argv("apply", "--server-side", "--force-conflicts", "-f", "-"),
        input=json.dumps(body),
        text=True,
        check=True,
        capture_output=True,
        timeout=60,
    )


# -- (e) the metal3 overlay: observing BareMetalHosts, never writing them -----------


def test_metal3_overlay_reads_baremetalhosts_and_may_write_nothing_of_metal3(
    cp: ControlPlane, applied: object
) -> None:
    """The overlay adds one read-only Role and the --sources flag; applied to the real
    API server (where baremetal-operator's own CRD is installed), the controller's
    ServiceAccount may read BareMetalHosts and is refused every write, status included."""
    from state_controller.cli import build_parser

    base = {(d["kind"], d["metadata"]["name"]): d for d in _rendered(cp)}
    overlay = {(d["kind"], d["metadata"]["name"]): d for d in _rendered(cp, MANIFESTS / "metal3")}
    added = sorted(set(overlay) - set(base))
    assert added == [("Role", "hoststate-controller-metal3"),
                     ("RoleBinding", "hoststate-controller-metal3")]  # fmt: skip
    assert [key for key in base if base[key] != overlay[key]] == [("Deployment", SA)]
    (container,) = overlay[("Deployment", SA)]["spec"]["template"]["spec"]["containers"]
    assert build_parser().parse_args(container["args"]).sources == "hosts,baremetalhosts"
    (rule,) = overlay[("Role", "hoststate-controller-metal3")]["rules"]
    assert rule == {
        "apiGroups": ["metal3.io"],
        "resources": ["baremetalhosts"],
        "verbs": ["get", "list", "watch"],
    }

    _kubectl(cp, "apply", "-k", str(MANIFESTS / "metal3"), "--server-side")
    try:
        bmh = ["-n", HOSTS_NS, AS_CONTROLLER]
        for verb in ("get", "list", "watch"):
            assert _run(cp, "auth", "can-i", verb, "baremetalhosts.metal3.io", *bmh).returncode == 0
        for verb, resource in (
            ("create", "baremetalhosts.metal3.io"),
            ("update", "baremetalhosts.metal3.io"),
            ("patch", "baremetalhosts.metal3.io"),
            ("delete", "baremetalhosts.metal3.io"),
            ("update", "baremetalhosts.metal3.io/status"),
            ("patch", "baremetalhosts.metal3.io/status"),
            ("update", "hostfirmwaresettings.metal3.io"),
        ):
            refused = _run(cp, "auth", "can-i", verb, resource, *bmh)
            assert refused.returncode != 0 and refused.stdout.strip() == "no", (verb, resource)
    finally:  # the base as the other tests know it: its own apply drops the flag again
        for kind in ("rolebinding", "role"):
            _kubectl(cp, "delete", kind, "hoststate-controller-metal3", "-n", HOSTS_NS)
        _kubectl(cp, "apply", "-k", str(MANIFESTS), "--server-side")
    assert "--sources=hosts,baremetalhosts" not in _container(cp)["args"]


# -- (f) the OpenShift overlay: reading MachineConfigNodes and -Pools, never writing them


def test_openshift_overlay_reads_machineconfignodes_and_pools_and_may_write_none(
    cp: ControlPlane, applied: object
) -> None:
    """Observe-only: the base without what drives Hosts, plus one read-only ClusterRole,
    and the controller told to read MachineConfigNodes beside the Nodes, nothing else."""
    from state_controller.cli import build_parser
    from state_controller.commands.run import chosen_sources, watched_namespaces

    base = {(d["kind"], d["metadata"]["name"]) for d in _rendered(cp)}
    overlay = {
        (d["kind"], d["metadata"]["name"]): d for d in _rendered(cp, MANIFESTS / "openshift")
    }
    added = sorted(set(overlay) - base)
    assert added == [("ClusterRole", "hoststate-controller-openshift"),
                     ("ClusterRoleBinding", "hoststate-controller-openshift"),
                     # user-workload monitoring's token and service-ca's CA bundle
                     # (tests/cluster/test_openshift_install.py)
                     ("ConfigMap", "hoststate-metrics-ca"),
                     ("Secret", "hoststate-metrics-reader-token"),
                     ("ServiceAccount", "hoststate-metrics-reader")]  # fmt: skip
    assert sorted(base - set(overlay)) == DRIVING
    (container,) = overlay[("Deployment", SA)]["spec"]["template"]["spec"]["containers"]
    args = build_parser().parse_args(container["args"])
    assert chosen_sources(args) == {"machineconfignodes"}
    assert watched_namespaces(args) is None  # Nodes and MachineConfigNodes: cluster-scoped

    _kubectl(cp, "apply", "-k", str(MANIFESTS / "openshift"), "--server-side")
    try:
        group = "machineconfiguration.openshift.io"
        for kind in (f"machineconfignodes.{group}", f"machineconfigpools.{group}"):
            for verb in ("get", "list", "watch"):
                assert _run(cp, "auth", "can-i", verb, kind, AS_CONTROLLER).returncode == 0
            for verb, resource in (
                ("create", kind),
                ("update", kind),
                ("patch", kind),
                ("delete", kind),
                ("update", f"{kind}/status"),
                ("patch", f"{kind}/status"),
            ):
                refused = _run(cp, "auth", "can-i", verb, resource, AS_CONTROLLER)
                assert refused.returncode != 0 and refused.stdout.strip() == "no", (verb, resource)
        for verb in ("get", "list"):  # nothing else of the group (MachineConfigs hold secrets)
            refused = _run(cp, "auth", "can-i", verb, f"machineconfigs.{group}", AS_CONTROLLER)
            assert refused.returncode != 0, verb
        _follows_a_node_as_its_service_account(cp, container)
    finally:  # the base as the other tests know it
        for kind in ("clusterrolebinding", "clusterrole"):
            _kubectl(cp, "delete", kind, "hoststate-controller-openshift")
        for kind, name in added[2:]:
            _kubectl(cp, "delete", kind.lower(), name, "-n", CONTROLLER_NS)
        _kubectl(cp, "apply", "-k", str(MANIFESTS), "--server-side")
    assert "--sources=machineconfignodes" not in _container(cp)["args"]


def _follows_a_node_as_its_service_account(cp: ControlPlane, container: Any) -> None:
    """The controller, as the ServiceAccount and with the arguments of the Deployment's
    ``container``: every cache fills (each list and watch it makes is granted) and a Node
    gets its HostState in the controller's namespace, which goes with the Node."""
    from state_controller.cluster.interface import HOSTSTATES as HOSTSTATE_KIND
    from state_controller.cluster.kube import KubeCluster
    from state_controller.provisioning.simulated import SimulatedProvisioner
    from state_controller.runtime.controller import HostController
    from state_controller.simulation.nodes import SimulatedNode
    from tests.conftest import remove_nodes, wait_for

    configuration = as_service_account(cp, SA, CONTROLLER_NS)
    identity = KubeCluster(client.ApiClient(configuration))
    admin = KubeCluster.from_kubeconfig(str(cp.kubeconfig))
    config = deployment_config(container, workers=2)
    controller = HostController(identity, SimulatedProvisioner(), config=config)
    try:
        controller.start(sync_timeout=20)
        node = SimulatedNode(admin, "mco-worker-1")
        node.register()
        wait_for(
            lambda: admin.get(HOSTSTATE_KIND, CONTROLLER_NS, "mco-worker-1"),
            what="the Node's HostState",
        )
        node.delete()
        wait_for(
            lambda: (
                "mco-worker-1"
                not in {s["metadata"]["name"] for s in admin.list(HOSTSTATE_KIND, CONTROLLER_NS)[0]}
            ),
            what="the Node's HostState gone with it",
        )
    finally:
        controller.stop()
        remove_nodes(admin)
        admin.close()
        identity.close()
