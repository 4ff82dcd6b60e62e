#!/usr/bin/env bash
# Cluster API's Cluster and Machine CRDs, from the module tools/clusterctl/go.mod pins:
# the Cluster CRD for the test of `clusterctl move` (clusterctl refuses a cluster without
# clusters.cluster.x-k8s.io at the contract it was built for:
# cmd/clusterctl/client/cluster/inventory.go, CheckCAPIContract, whether or not any
# Cluster exists); the Machine CRD for the tests that read a Machine's in-place update
# (its Updating and UpToDate conditions) as hoststate's fourth update source.
#
# Usage:  CRDS_DIR="$(tools/clusterctl/crds.sh)"
#
#   - The module comes through the Go module proxy into the Go module cache that
#     tools/clusterctl/build.sh uses ($HOSTSTATE_CACHE/clusterctl/go/mod), checked
#     against go.sum; core/config/crd/bases/cluster.x-k8s.io_{clusters,machines}.yaml
#     are kept in $HOSTSTATE_CACHE/clusterctl/crds-<version>/. A second run returns at once.
#   - Progress goes to stderr; the directory is the last line on stdout.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "${here}/../go-tool.sh"
go_tool_env clusterctl

version="$(cd "${here}" && go list -m -f '{{.Version}}' sigs.k8s.io/cluster-api)"
out="${cache_root}/crds-${version}"
kept=(cluster.x-k8s.io_clusters.yaml cluster.x-k8s.io_machines.yaml)
missing=0
for crd in "${kept[@]}"; do [[ -s "${out}/${crd}" ]] || missing=1; done
if (( missing )); then
  log "downloading sigs.k8s.io/cluster-api ${version}"
  dir="$(cd "${here}" && go mod download -json sigs.k8s.io/cluster-api \
    | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' | head -1)"
  [[ -n "${dir}" && -d "${dir}" ]] || die "go mod download gave no directory for sigs.k8s.io/cluster-api"
  mkdir -p "${out}.new"
  for crd in "${kept[@]}"; do cp "${dir}/core/config/crd/bases/${crd}" "${out}.new/"; done
  rm -rf "${out}"
  mv "${out}.new" "${out}"
  log "kept the Cluster and Machine CRDs in ${out}"
fi
printf '%s\n' "${out}"
