#!/usr/bin/env bash
# metal3's baremetal-operator CRDs, from its Go module, for the tests that play
# baremetal-operator against its real schema (BMO itself cannot be built from the Go
# module proxy alone: a module its build needs is not served there).
#
# Usage:  CRDS_DIR="$(tools/metal3/crds.sh)"
#
#   - The module is downloaded once through the Go module proxy, checked against the
#     pinned go.sum hash below, and its config/base/crds/bases/*.yaml kept in
#     $HOSTSTATE_CACHE/metal3/<version>/ (default HOSTSTATE_CACHE=~/.cache/hoststate);
#     a second run returns at once. The module itself is not kept.
#   - Beside the CRDs, its own sample manifests, for the tests that convert them:
#     examples/*.yaml in <dir>/examples/ and the BareMetalHost of config/samples/ in
#     <dir>/samples/. A cache made before they were kept is made again.
#   - Progress goes to stderr; the directory is the last line on stdout.
set -euo pipefail

VERSION=v0.13.2
MODULE=github.com/metal3-io/baremetal-operator
SUM="h1:XSkyBv4l1OvCL66b7T0FEUaGeS0zOjQKhot9V8zeZQc="  # go.sum's hash of the module zip

cache="${HOSTSTATE_CACHE:-${HOME}/.cache/hoststate}/metal3/${VERSION}"
log() { printf '[metal3] %s\n' "$*" >&2; }
die() { printf '[metal3] ERROR: %s\n' "$*" >&2; exit 1; }

SAMPLE=config/samples/metal3.io_v1alpha1_baremetalhost.yaml

if [[ ! -s "${cache}/metal3.io_baremetalhosts.yaml" || ! -s "${cache}/samples/${SAMPLE##*/}" ]]; then
    command -v go >/dev/null || die "go is not installed (tools/k8s/build.sh needs it too)"
    work="$(mktemp -d)"
    trap 'rm -rf "${work}"' EXIT
    export GOMODCACHE="${work}/mod" GOFLAGS=-modcacherw GOTOOLCHAIN=local GOWORK=off
    log "downloading ${MODULE}@${VERSION} from the Go module proxy"
    info="$(go mod download -json "${MODULE}@${VERSION}")"
    field() { printf '%s\n' "${info}" | sed -n "s/^[[:space:]]*\"$1\": \"\(.*\)\",\{0,1\}$/\1/p" | head -1; }
    [[ "$(field Sum)" == "${SUM}" ]] || die "${MODULE}@${VERSION} has hash $(field Sum), not ${SUM}"
    rm -rf "${cache}.new"
    mkdir -p "${cache}.new/examples" "${cache}.new/samples"
    cp "$(field Dir)"/config/base/crds/bases/*.yaml "${cache}.new/"
    cp "$(field Dir)"/examples/*.yaml "${cache}.new/examples/"
    cp "$(field Dir)/${SAMPLE}" "${cache}.new/samples/"
    rm -rf "${cache}"
    mv "${cache}.new" "${cache}"
    log "kept $(ls "${cache}"/*.yaml | wc -l) CRDs and $(ls "${cache}"/examples | wc -l) examples in ${cache}"
fi
printf '%s\n' "${cache}"
