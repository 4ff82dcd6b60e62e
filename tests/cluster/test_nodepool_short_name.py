"""hoststate's NodePool beside HyperShift's, on a real kube-apiserver, as kubectl resolves
their names: ``np`` (and ``nps``) is HyperShift's alone, ``hsnp`` hoststate's, and each full
name (``nodepools.hoststate.io``, ``nodepools.hypershift.openshift.io``) its own kind.

The plural ``nodepools`` is both kinds' and kubectl picks one by the API server's
discovery order (group priority, then the group's name): hoststate.io comes first, so
a HyperShift user types ``np`` or the full name (docs/versioning.md says so).

A control plane of its own: HyperShift's CRD would make ``nodepools`` mean another kind
for the other tests of the session.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from testbed.control_plane import ControlPlane
from testbed.kube import k8s_bin_dir

ROOT = Path(__file__).resolve().parents[2]

# HyperShift's NodePool, as its CRD names it (openshift/hypershift, main of 2026-08-22:
# api/hypershift/v1beta1/nodepool_types.go, `+kubebuilder:resource:path=nodepools,
# shortName=np;nps,scope=Namespaced`, generated into cmd/install/assets/crds/
# hypershift-operator/zz_generated.crd-manifests/nodepools-Default.crd.yaml). Its schema
# is left open here: only its names are what this test is about.
HYPERSHIFT_NODEPOOL = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "nodepools.hypershift.openshift.io"},
    "spec": {
        "group": "hypershift.openshift.io",
        "names": {"kind": "NodePool", "listKind": "NodePoolList", "plural": "nodepools",
                  "singular": "nodepool", "shortNames": ["np", "nps"]},
        "scope": "Namespaced",
        "versions": [{
            "name": "v1beta1", "served": True, "storage": True,
            "schema": {"openAPIV3Schema": {"type": "object",
                                           "x-kubernetes-preserve-unknown-fields": True}},
        }],
    },
}  # fmt: skip


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """A kube-apiserver with both CRDs, a NodePool of each: hoststate's ``worker`` and
    HyperShift's ``clusters/example-us-east-1a`` (HyperShift keeps them in ``clusters``)."""
    workdir = tmp_path_factory.mktemp("nodepools")
    with ControlPlane(k8s_bin_dir(), workdir, controller_manager=False) as cp:
        run(cp, "apply", "--server-side", "-f",
            str(ROOT / "api" / "v1alpha1" / "hoststate.io_nodepools.yaml"))  # fmt: skip
        run(cp, "apply", "--server-side", "-f", "-", stdin=yaml.safe_dump(HYPERSHIFT_NODEPOOL))
        cp.wait_established("nodepools.hoststate.io", "nodepools.hypershift.openshift.io")
        run(cp, "create", "namespace", "clusters")
        pools = [
            {"apiVersion": "hoststate.io/v1alpha1", "kind": "NodePool",
             "metadata": {"name": "worker"}},
            {"apiVersion": "hypershift.openshift.io/v1beta1", "kind": "NodePool",
             "metadata": {"name": "example-us-east-1a", "namespace": "clusters"}},
        ]  # fmt: skip
        run(cp, "apply", "--server-side", "-f", "-", stdin=yaml.safe_dump_all(pools))
        yield cp


def run(cp: ControlPlane, *args: str, stdin: str | None = None) -> str:
    # a cache of its own: a discovery kept from another plane on the same port would lie
    argv = cp.kubectl_argv("--cache-dir", str(cp.workdir / "kubectl-cache"), *args)
    done = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"kubectl {' '.join(args)}:\n{done.stdout}{done.stderr}"
    return done.stdout


def kinds(cp: ControlPlane, name: str) -> set[str]:
    """What ``kubectl get NAME -A`` lists, as group and object name."""
    items = json.loads(run(cp, "get", name, "-A", "-o", "json"))["items"]
    return {f"{i['apiVersion'].split('/')[0]} {i['metadata']['name']}" for i in items}


HOSTSTATE = {"hoststate.io worker"}
HYPERSHIFT = {"hypershift.openshift.io example-us-east-1a"}


def test_short_names_reach_one_kind_each(plane: ControlPlane) -> None:
    assert kinds(plane, "np") == HYPERSHIFT
    assert kinds(plane, "nps") == HYPERSHIFT
    assert kinds(plane, "hsnp") == HOSTSTATE


def test_full_names_reach_their_own_kind_and_the_plural_one_of_them(plane: ControlPlane) -> None:
    assert kinds(plane, "nodepools.hoststate.io") == HOSTSTATE
    assert kinds(plane, "nodepools.hypershift.openshift.io") == HYPERSHIFT
    assert kinds(plane, "nodepools") == HOSTSTATE  # discovery order: hoststate.io first
    # the category names hoststate's kinds only
    assert "hoststate.io worker" in kinds(plane, "hoststate-all")
