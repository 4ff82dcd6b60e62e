#!/usr/bin/env bash
# Build (once) and cache clusterctl (sigs.k8s.io/cluster-api/cmd/clusterctl) for the
# test of what `clusterctl move` carries of hoststate's objects
# (tests/install/test_clusterctl_move.py). Compiled from the Go module pinned in
# tools/clusterctl/go.mod, with the version string Cluster API's Makefile stamps
# (sigs.k8s.io/cluster-api/version.gitVersion), so `clusterctl version` names it.
#
# Usage:  CLUSTERCTL="$(tools/clusterctl/build.sh)"
#
#   - Run it with CLUSTERCTL_DISABLE_VERSIONCHECK=true: otherwise clusterctl asks
#     GitHub for its newest release on every start.
#   - Progress goes to stderr; the binary's path is the last (only) line on stdout.
#   - Cached in $HOSTSTATE_CACHE/clusterctl/<key>/bin/clusterctl (default
#     HOSTSTATE_CACHE=~/.cache/hoststate). <key> is a hash of go.mod/go.sum (minus
#     comment lines), the Go version, the platform and RECIPE: a second run returns at
#     once, a pin change gives a fresh build. Concurrent runs are serialised with flock;
#     a build lands in a temporary directory first.
#   - Go module and build caches live in $HOSTSTATE_CACHE/clusterctl/go (delete it to
#     reclaim the space; only the bin dir is needed afterwards).
#   - Measured cold (empty caches, modules from the Go module proxy) on this 2-core
#     machine, shared with other builds and tests: 16 min 18 s; the binary is 34 MiB
#     (stripped).
#   - The module sigs.k8s.io/cluster-api requires sigs.k8s.io/cluster-api/api at
#     v0.0.0 with a replace to its own folder, which a dependency's replace cannot
#     give: go.mod requires the api module at the same version instead.
set -euo pipefail

# Bump when the way the binary is built changes (flags, ldflags, ...).
RECIPE=1

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "${here}/../go-tool.sh"
go_tool_env clusterctl

key="$(
  {
    echo "recipe=${RECIPE} go=${goversion} platform=${platform}"
    go_pinned go.mod go.sum
  } | sha256sum | cut -c1-16
)"
go_tool_cached bin clusterctl

capi_version="$(cd "${here}" && go list -m -f '{{.Version}}' sigs.k8s.io/cluster-api)"
log "cache miss: building clusterctl ${capi_version} into ${out} (${goversion}, ${platform})"
log "downloading modules…"
(cd "${here}" && go mod download) || die "go mod download failed in ${here}"

ldflags="-s -w -X sigs.k8s.io/cluster-api/version.gitVersion=${capi_version}"
ldflags+=" -X sigs.k8s.io/cluster-api/version.gitTreeState=clean"
log "building clusterctl ${capi_version}…"
(cd "${here}" && go build -p 2 -trimpath -buildvcs=false -ldflags "${ldflags}" \
    -o "${tmp}/bin/clusterctl" sigs.k8s.io/cluster-api/cmd/clusterctl) \
  || die "building clusterctl failed"

got="$(CLUSTERCTL_DISABLE_VERSIONCHECK=true "${tmp}/bin/clusterctl" version -o short)" \
  || die "clusterctl was built but does not run"
[[ "${got}" == "${capi_version}" ]] || die "clusterctl reports version '${got}', not ${capi_version}"
cat >"${tmp}/VERSIONS" <<VERSIONS
clusterctl ${capi_version}
go ${goversion} ${platform}
VERSIONS

go_tool_publish
log "done: $(du -h "${bin}" | cut -f1) in ${bin}"
echo "${bin}"
