#!/usr/bin/env bash
# prometheus-operator's own ServiceMonitor and PrometheusRule CRDs
# (monitoring.coreos.com/v1, with their full OpenAPI schema), from its Go module,
# for the tests that check hoststate's ServiceMonitor and PrometheusRule against
# the schema prometheus-operator enforces. v0.85.0 is what OpenShift 4.20's
# cluster-monitoring-operator ships (its CRD annotation operator.prometheus.io/version),
# and the one version of the root module the Go module proxy serves here.
#
# (testbed/monitoring-crds.yaml, which the cluster tests install, is a schemaless
# stand-in for the same two CRDs: it accepts any object.)
#
# Usage:  CRDS_DIR="$(tools/prometheus-operator/crds.sh)"
#         # $CRDS_DIR/monitoring.coreos.com_servicemonitors.yaml
#         # $CRDS_DIR/monitoring.coreos.com_prometheusrules.yaml
#
#   - The module is downloaded once through the Go module proxy (`go mod
#     download -json`), checked against the pinned go.sum hash below, and the two
#     CRDs of its example/prometheus-operator-crd/ kept in
#     $HOSTSTATE_CACHE/prometheus-operator/<key>/ (default
#     HOSTSTATE_CACHE=~/.cache/hoststate; <key> hashes the version, hash, file
#     list and RECIPE); a second run returns at once. The module itself (a 4 MB
#     zip) is not kept. Concurrent runs are serialised with flock.
#   - Measured cold on 2 cores: 3 s (the download); the two CRDs are 79 kB.
#   - Progress goes to stderr; the directory is the last line on stdout.
set -euo pipefail

# Bump when what is kept, or how, changes.
RECIPE=1
VERSION=v0.85.0
MODULE=github.com/prometheus-operator/prometheus-operator
SUM="h1:M5xLCLEoaW2IJfnuCwFzzpL+jSVQu3KGT84Pye+fW8s="  # go.sum's hash of the module zip
FILES=(monitoring.coreos.com_servicemonitors.yaml monitoring.coreos.com_prometheusrules.yaml)
FROM=example/prometheus-operator-crd

cache_root="${HOSTSTATE_CACHE:-${HOME}/.cache/hoststate}/prometheus-operator"
key="$(printf '%s\n' "recipe=${RECIPE}" "${MODULE}@${VERSION}" "${SUM}" "${FROM}" "${FILES[@]}" \
  | sha256sum | cut -c1-16)"
out="${cache_root}/${key}"
log() { printf '[prometheus-operator] %s\n' "$*" >&2; }
die() { printf '[prometheus-operator] ERROR: %s\n' "$*" >&2; exit 1; }

complete() {
  local f
  for f in "${FILES[@]}"; do
    [[ -s "${out}/${f}" ]] || return 1
  done
}

if complete; then
  printf '%s\n' "${out}"
  exit 0
fi
command -v go >/dev/null || die "go is not installed (tools/k8s/build.sh needs it too)"
mkdir -p "${cache_root}"
exec 9>"${cache_root}/.lock"
flock 9
if complete; then
  printf '%s\n' "${out}"
  exit 0
fi

start=${SECONDS}
rm -rf "${cache_root}"/.tmp.*   # left by killed runs; we hold the lock
tmp="$(mktemp -d "${cache_root}/.tmp.${key}.XXXXXX")"
trap 'rm -rf "${tmp}"' EXIT
export GOMODCACHE="${tmp}/mod" GOFLAGS=-modcacherw GOTOOLCHAIN=local GOWORK=off
log "downloading ${MODULE}@${VERSION} from the Go module proxy"
info="$(cd "${tmp}" && go mod download -json "${MODULE}@${VERSION}")" \
  || die "go mod download ${MODULE}@${VERSION} failed: ${info:-}"
field() { printf '%s\n' "${info}" | sed -n "s/^[[:space:]]*\"$1\": \"\(.*\)\",\{0,1\}$/\1/p" | head -1; }
[[ "$(field Sum)" == "${SUM}" ]] || die "${MODULE}@${VERSION} has hash $(field Sum), not ${SUM}"
mkdir -p "${tmp}/crds"
for f in "${FILES[@]}"; do
  cp "$(field Dir)/${FROM}/${f}" "${tmp}/crds/" || die "${FROM}/${f} is not in ${MODULE}@${VERSION}"
done
chmod 755 "${tmp}/crds"; chmod 644 "${tmp}/crds"/*
rm -rf "${out}"
mv -T "${tmp}/crds" "${out}"
log "kept ${#FILES[@]} CRDs in ${out} in $((SECONDS - start)) s"
printf '%s\n' "${out}"
