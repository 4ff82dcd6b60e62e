#!/usr/bin/env bash
# OpenShift's MachineConfigNode and MachineConfigPool CRDs (machineconfiguration.openshift.io/v1),
# from openshift/api's Go module, for the tests that play the Machine Config Operator against
# the real schema (the operator itself is not run: it needs an OpenShift cluster).
#
# Usage:  CRDS_DIR="$(tools/openshift/crds.sh)"
#
#   - The module is downloaded once through the Go module proxy, checked against the
#     pinned go.sum hash below, and the two CRDs kept in
#     $HOSTSTATE_CACHE/openshift/<version>/ (default HOSTSTATE_CACHE=~/.cache/hoststate);
#     a second run returns at once. The module itself is not kept.
#   - The MachineConfigNode CRD kept is the one of the Default feature set (what a cluster
#     without TechPreviewNoUpgrade serves); its conditions are typed alike in every set.
#   - The Go checksum database does not list this pseudo-version, so it is not asked
#     (GOSUMDB=off): the hash below, taken from a go.sum that pins it, is checked instead.
#   - Progress goes to stderr; the directory is the last line on stdout.
set -euo pipefail

VERSION=v0.0.0-20251015095338-264e80a2b6e7
MODULE=github.com/openshift/api
SUM="h1:Ot2fbEEPmF3WlPQkyEW/bUCV38GMugH/UmZvxpWceNc="  # go.sum's hash of the module zip
MANIFESTS=machineconfiguration/v1/zz_generated.crd-manifests
CRDS=(
    0000_80_machine-config_01_machineconfignodes-Default.crd.yaml
    0000_80_machine-config_01_machineconfigpools.crd.yaml
)

cache="${HOSTSTATE_CACHE:-${HOME}/.cache/hoststate}/openshift/${VERSION}"
log() { printf '[openshift] %s\n' "$*" >&2; }
die() { printf '[openshift] ERROR: %s\n' "$*" >&2; exit 1; }

kept() { for crd in "${CRDS[@]}"; do [[ -s "${cache}/${crd}" ]] || return 1; done; }

if ! kept; then
    command -v go >/dev/null || die "go is not installed (tools/k8s/build.sh needs it too)"
    work="$(mktemp -d)"
    trap 'rm -rf "${work}"' EXIT
    export GOMODCACHE="${work}/mod" GOFLAGS=-modcacherw GOTOOLCHAIN=local GOWORK=off GOSUMDB=off
    log "downloading ${MODULE}@${VERSION} from the Go module proxy"
    info="$(go mod download -json "${MODULE}@${VERSION}")"
    field() { printf '%s\n' "${info}" | sed -n "s/^[[:space:]]*\"$1\": \"\(.*\)\",\{0,1\}$/\1/p" | head -1; }
    [[ "$(field Sum)" == "${SUM}" ]] || die "${MODULE}@${VERSION} has hash $(field Sum), not ${SUM}"
    mkdir -p "${cache}.new"
    for crd in "${CRDS[@]}"; do
        cp "$(field Dir)/${MANIFESTS}/${crd}" "${cache}.new/"
    done
    rm -rf "${cache}"
    mv "${cache}.new" "${cache}"
    log "kept ${#CRDS[@]} CRDs in ${cache}"
fi
printf '%s\n' "${cache}"
