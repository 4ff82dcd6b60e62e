"""The tools the install tests stand on do what those tests will rely on (Helm's are in
tests/install/test_chart.py, which renders, lints and installs the project's chart with
it on the real kube-apiserver): the OLM bundle validator passes
a sound bundle and names what is wrong with a broken one; prometheus-operator's own
ServiceMonitor CRD enforces its schema on the real kube-apiserver, where
testbed/monitoring-crds.yaml's stand-in accepts anything.

Each tool is built (or fetched) once from the Go module proxy by its script under tools/
and cached (testbed/tools.py); scripts/test does that before pytest.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from testbed.control_plane import ControlPlane
from testbed.kube import k8s_bin_dir
from testbed.tools import olm_validator, prometheus_operator_crds


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """A bare kube-apiserver (no controller manager) with prometheus-operator's CRDs."""
    with ControlPlane(
        k8s_bin_dir(), tmp_path_factory.mktemp("k8s-tools"), controller_manager=False
    ) as cp:
        crds = prometheus_operator_crds()
        run(cp.kubectl_argv("apply", "--server-side", f"--filename={crds}"))
        cp.wait_established(
            "servicemonitors.monitoring.coreos.com", "prometheusrules.monitoring.coreos.com"
        )
        yield cp


def run(argv: list[str], *, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    if check and done.returncode != 0:
        raise AssertionError(f"{argv[0]} exited {done.returncode}:\n{done.stdout}{done.stderr}")
    return done


# -- prometheus-operator's ServiceMonitor CRD -----------------------------------------------


def service_monitor(endpoint: dict[str, Any]) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "monitoring.coreos.com/v1",
            "kind": "ServiceMonitor",
            "metadata": {"name": "probe", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": "probe"}}, "endpoints": [endpoint]},
        }
    )


def dry_run(plane: ControlPlane, manifest: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        plane.kubectl_argv("create", "--dry-run=server", "--filename=-"),
        input=manifest,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_service_monitor_crd_enforces_prometheus_operators_schema(plane: ControlPlane) -> None:
    # What OpenShift's user-workload monitoring accepts: the token by `authorization`,
    # the CA from a ConfigMap (service-ca's), the server name.
    good = {
        "port": "metrics",
        "scheme": "https",
        "authorization": {"credentials": {"name": "probe-token", "key": "token"}},
        "tlsConfig": {
            "ca": {"configMap": {"name": "probe-ca", "key": "service-ca.crt"}},
            "serverName": "probe.default.svc",
        },
    }
    done = dry_run(plane, service_monitor(good))
    assert done.returncode == 0, done.stderr

    wrong_type = dry_run(plane, service_monitor({"port": "metrics", "bearerTokenFile": 42}))
    assert wrong_type.returncode != 0
    assert "spec.endpoints[0].bearerTokenFile" in wrong_type.stderr, wrong_type.stderr
    assert "string" in wrong_type.stderr, wrong_type.stderr

    bad_scheme = dry_run(plane, service_monitor({"port": "metrics", "scheme": "ftp"}))
    assert bad_scheme.returncode != 0
    assert "spec.endpoints[0].scheme" in bad_scheme.stderr, bad_scheme.stderr


# -- the OLM bundle validator ----------------------------------------------------------------

PACKAGE = "probe-operator"
CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "probes.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"kind": "Probe", "listKind": "ProbeList", "plural": "probes",
                  "singular": "probe"},
        "versions": [{"name": "v1", "served": True, "storage": True,
                      "schema": {"openAPIV3Schema": {"type": "object"}}}],
    },
}  # fmt: skip
CSV: dict[str, Any] = {
    "apiVersion": "operators.coreos.com/v1alpha1",
    "kind": "ClusterServiceVersion",
    "metadata": {
        "name": f"{PACKAGE}.v0.1.0",
        "annotations": {
            "alm-examples": json.dumps(
                [{"apiVersion": "example.com/v1", "kind": "Probe", "metadata": {"name": "a"}}]
            ),
        },
    },
    "spec": {
        "displayName": "Probe",
        "description": "A bundle for the validator's smoke test.",
        "version": "0.1.0",
        "minKubeVersion": "1.30.0",
        "maturity": "alpha",
        "provider": {"name": "hoststate"},
        "maintainers": [{"name": "hoststate", "email": "hoststate@example.com"}],
        "links": [{"name": "Source", "url": "https://example.com/probe"}],
        "installModes": [
            {"type": "OwnNamespace", "supported": True},
            {"type": "SingleNamespace", "supported": True},
            {"type": "MultiNamespace", "supported": False},
            {"type": "AllNamespaces", "supported": True},
        ],
        "customresourcedefinitions": {
            "owned": [{"name": "probes.example.com", "version": "v1", "kind": "Probe",
                       "displayName": "Probe", "description": "A probe."}],
        },
        "install": {
            "strategy": "deployment",
            "spec": {
                "deployments": [{
                    "name": "probe-operator",
                    "spec": {
                        "selector": {"matchLabels": {"app": "probe"}},
                        "template": {
                            "metadata": {"labels": {"app": "probe"}},
                            "spec": {
                                "serviceAccountName": "probe-operator",
                                "containers": [{
                                    "name": "manager",
                                    "image": "quay.io/example/probe@sha256:" + "0" * 64,
                                    "resources": {"requests": {"cpu": "10m",
                                                               "memory": "64Mi"}},
                                }],
                            },
                        },
                    },
                }],
                "permissions": [{
                    "serviceAccountName": "probe-operator",
                    "rules": [{"apiGroups": ["example.com"], "resources": ["probes"],
                               "verbs": ["get", "list", "watch"]}],
                }],
            },
        },
    },
}  # fmt: skip
ANNOTATIONS = {
    "annotations": {
        "operators.operatorframework.io.bundle.mediatype.v1": "registry+v1",
        "operators.operatorframework.io.bundle.manifests.v1": "manifests/",
        "operators.operatorframework.io.bundle.metadata.v1": "metadata/",
        "operators.operatorframework.io.bundle.package.v1": PACKAGE,
        "operators.operatorframework.io.bundle.channels.v1": "alpha",
        "operators.operatorframework.io.bundle.channel.default.v1": "alpha",
    }
}


def write_bundle(root: Path) -> Path:
    (root / "manifests").mkdir(parents=True)
    (root / "metadata").mkdir()
    (root / "manifests" / "probes.example.com.crd.yaml").write_text(yaml.safe_dump(CRD))
    (root / "manifests" / f"{PACKAGE}.clusterserviceversion.yaml").write_text(yaml.safe_dump(CSV))
    (root / "metadata" / "annotations.yaml").write_text(yaml.safe_dump(ANNOTATIONS))
    return root


def validate(bundle: Path, *flags: str) -> tuple[int, list[dict[str, str]]]:
    done = subprocess.run(
        [str(olm_validator()), "-json", *flags, str(bundle)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


def errors(findings: list[dict[str, str]]) -> list[str]:
    return [f"{f['source']}: {f['message']}" for f in findings if f["level"] == "error"]


def test_olm_validator_passes_a_sound_bundle_and_names_what_breaks_one(tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path / "bundle")
    code, found = validate(bundle, "-operatorhub=false")
    assert (code, errors(found)) == (0, []), found

    # A Deployment beside the CSV: registry+v1 carries it inside the CSV only
    # (operator-registry's content check).
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"}}
    (bundle / "manifests" / "deployment.yaml").write_text(yaml.safe_dump(deployment))
    code, found = validate(bundle, "-operatorhub=false")
    assert code == 1
    assert any("Deployment is not supported type for registryV1 bundle" in e
               for e in errors(found)), found  # fmt: skip
    (bundle / "manifests" / "deployment.yaml").unlink()

    # An owned CRD the CSV does not list (the api module's BundleValidator).
    other = {**CRD, "metadata": {"name": "others.example.com"},
             "spec": {**CRD["spec"], "names": {"kind": "Other", "plural": "others"}}}  # fmt: skip
    (bundle / "manifests" / "others.yaml").write_text(yaml.safe_dump(other))
    code, found = validate(bundle, "-operatorhub=false")
    assert code == 1
    assert any("Kind=Other" in e and "not defined in CSV" in e
               for e in errors(found)), found  # fmt: skip
    (bundle / "manifests" / "others.yaml").unlink()

    # No metadata/annotations.yaml: only operator-registry's format check sees it.
    (bundle / "metadata" / "annotations.yaml").unlink()
    code, found = validate(bundle, "-operatorhub=false")
    assert code == 1
    assert errors(found) == ["bundle.ValidateBundleFormat: Could not find annotations file"]
    (bundle / "metadata" / "annotations.yaml").write_text(yaml.safe_dump(ANNOTATIONS))

    # No CSV at all (operator-registry's content check panics on that; the
    # validator reports it and goes on).
    (bundle / "manifests" / f"{PACKAGE}.clusterserviceversion.yaml").unlink()
    code, found = validate(bundle, "-operatorhub=false")
    assert code == 1
    assert any("unable to find a csv" in e for e in errors(found)), found


def test_olm_validator_runs_operatorhubs_validators_by_default(tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path / "bundle")
    csv = bundle / "manifests" / f"{PACKAGE}.clusterserviceversion.yaml"
    unlisted = {**CSV, "spec": {**CSV["spec"], "maintainers": [{"name": "x", "email": "x"}]}}
    csv.write_text(yaml.safe_dump(unlisted))
    assert validate(bundle, "-operatorhub=false")[0] == 0
    code, found = validate(bundle)
    assert code == 1
    assert any("csv.Spec.Maintainers email x is invalid" in e for e in errors(found)), found
