#!/usr/bin/env bash
# Build (once) and cache kubectl-validate (sigs.k8s.io/kubectl-validate), which
# validates manifests offline against the CRDs in api/v1alpha1/ with the API
# server's own validation code (OpenAPI, CEL rules, unknown fields).
#
#   BIN="$(tools/kubectl-validate/install.sh)"
#   "$BIN" --local-crds api/v1alpha1 --version 1.30 host.yaml
#
# `go install` from the Go module proxy at the pinned VERSION (checked against
# the checksum database), into ${HOSTSTATE_CACHE:-~/.cache/hoststate}/
# kubectl-validate/<key>/bin, <key> hashing the version, the Go version and the
# platform. About 90 s the first time on 2 cores (downloads included), instant
# afterwards. Concurrent runs are serialised with flock; a build lands in a
# temporary directory first, so an interrupted run leaves nothing at the final
# path. Progress goes to stderr; the binary's path is the last line on stdout.
set -euo pipefail

VERSION=v0.0.4

cache_root="${HOSTSTATE_CACHE:-$HOME/.cache/hoststate}/kubectl-validate"
log() { printf '[kubectl-validate] %s\n' "$*" >&2; }
command -v go >/dev/null || { log "ERROR: go is not installed"; exit 1; }

export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-modcacherw
export GOMODCACHE="${cache_root}/go/mod" GOCACHE="${cache_root}/go/build"
unset GOOS GOARCH
key="$(printf '%s %s %s/%s' "$VERSION" "$(go env GOVERSION)" "$(go env GOOS)" "$(go env GOARCH)" \
  | sha256sum | cut -c1-16)"
bin="${cache_root}/${key}/bin/kubectl-validate"

if [[ -x "${bin}" ]]; then
  echo "${bin}"
  exit 0
fi
mkdir -p "${cache_root}"
exec 9>"${cache_root}/.build.lock"
flock 9
if [[ -x "${bin}" ]]; then
  echo "${bin}"
  exit 0
fi
tmp="$(mktemp -d "${cache_root}/.tmp.${key}.XXXXXX")"
trap 'rm -rf "${tmp}"' EXIT
log "building sigs.k8s.io/kubectl-validate@${VERSION} (about 90 s the first time)"
start=${SECONDS}
GOBIN="${tmp}/bin" go install -trimpath "sigs.k8s.io/kubectl-validate@${VERSION}" >&2
"${tmp}/bin/kubectl-validate" --help >/dev/null
rm -rf "${cache_root:?}/${key}"
mv -T "${tmp}" "${cache_root}/${key}"
trap - EXIT
log "built in $((SECONDS - start)) s"
echo "${bin}"
