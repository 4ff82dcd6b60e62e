#!/usr/bin/env bash
# Build (once) and cache a real Kubernetes control plane for integration tests:
# etcd, kube-apiserver, kube-controller-manager and kubectl, compiled from the Go sources pinned in
# tools/k8s/go.mod (kubernetes) and tools/k8s/etcd/go.mod (etcd).
#
# Usage:  BIN_DIR="$(tools/k8s/build.sh)"
#
#   - Progress goes to stderr; the bin directory is the last (only) line on
#     stdout.
#   - Binaries are cached in $HOSTSTATE_CACHE/k8s/<key>/bin (default
#     HOSTSTATE_CACHE=~/.cache/hoststate). <key> is a hash of the go.mod/go.sum
#     files (minus comment lines), the Go version, the target platform and
#     this script's RECIPE: a second run returns at once, a pin change gives a
#     fresh build. Concurrent runs are serialised with flock.
#   - Go module and build caches live in $HOSTSTATE_CACHE/k8s/go (delete it to
#     reclaim ~4 GiB; only the bin dirs are needed afterwards).
#   - A cold build needs only the Go module proxy (no GitHub, no dl.k8s.io) and
#     takes ~10-13 minutes on 2 cores (kube-apiserver alone 6-8, then
#     kube-controller-manager ~2 as it reuses most of its packages), peak
#     ~2 GiB RAM.
set -euo pipefail

# Bump when the way binaries are built changes (flags, ldflags, ...).
RECIPE=2

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "${here}/../go-tool.sh"
go_tool_env k8s

key="$(
  {
    echo "recipe=${RECIPE} go=${goversion} platform=${platform}"
    go_pinned go.mod go.sum etcd/go.mod etcd/go.sum
  } | sha256sum | cut -c1-16
)"
binaries=(etcd kube-apiserver kube-controller-manager kubectl)
go_tool_cached dir "" "${binaries[@]}"
bin="${out}/bin"

log "cache miss: building into ${out} (${goversion}, ${platform})"

# Version stamping as done by kubernetes' hack/lib/version.sh; without it
# `kube-apiserver --version` and /version report v0.0.0-master.
kube_version="$(cd "${here}" && go list -m -f '{{.Version}}' k8s.io/kubernetes)"
log "downloading modules for kubernetes ${kube_version}…"
(cd "${here}" && go mod download) || die "go mod download failed in ${here}"
kube_time="$(cd "${here}" && go list -m -f '{{if .Time}}{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}{{end}}' k8s.io/kubernetes)"
[[ -n "${kube_time}" ]] || kube_time="1970-01-01T00:00:00Z"
if [[ "${kube_version}" =~ ^v([0-9]+)\.([0-9]+)\.[0-9]+ ]]; then
  kube_major="${BASH_REMATCH[1]}"
  kube_minor="${BASH_REMATCH[2]}"
else
  die "cannot parse kubernetes version '${kube_version}'"
fi
ldflags="-s -w"
for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
  ldflags+=" -X ${pkg}.gitVersion=${kube_version}"
  ldflags+=" -X ${pkg}.gitMajor=${kube_major}"
  ldflags+=" -X ${pkg}.gitMinor=${kube_minor}"
  ldflags+=" -X ${pkg}.gitTreeState=clean"
  ldflags+=" -X ${pkg}.buildDate=${kube_time}"
done

etcd_version="$(cd "${here}/etcd" && go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)"
log "downloading modules for etcd ${etcd_version}…"
(cd "${here}/etcd" && go mod download) || die "go mod download failed in ${here}/etcd"

build() { # <module dir> <output name> <package> <ldflags>
  local dir="$1" name="$2" pkg="$3" flags="$4" t0=${SECONDS}
  (cd "${dir}" && go build -p 2 -trimpath -buildvcs=false -ldflags "${flags}" \
      -o "${tmp}/bin/${name}" "${pkg}") || die "building ${name} (${pkg}) failed"
  log "built ${name} in $((SECONDS - t0))s"
}

log "building etcd ${etcd_version}…"
build "${here}/etcd" etcd go.etcd.io/etcd/server/v3 "-s -w"
log "building kube-apiserver ${kube_version} (this takes several minutes on 2 cores)…"
build "${here}" kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "${ldflags}"
log "building kube-controller-manager ${kube_version}…"
build "${here}" kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager "${ldflags}"
log "building kubectl ${kube_version}…"
build "${here}" kubectl k8s.io/kubernetes/cmd/kubectl "${ldflags}"

"${tmp}/bin/etcd" --version >/dev/null || die "etcd was built but does not run"
"${tmp}/bin/kube-apiserver" --version >/dev/null || die "kube-apiserver was built but does not run"
"${tmp}/bin/kube-controller-manager" --version >/dev/null \
  || die "kube-controller-manager was built but does not run"
"${tmp}/bin/kubectl" version --client >/dev/null || die "kubectl was built but does not run"
cat >"${tmp}/VERSIONS" <<EOF
kubernetes ${kube_version}
etcd ${etcd_version}
go ${goversion} ${platform}
EOF

go_tool_publish
log "done: $(du -sh "${bin}" | cut -f1) in ${bin}"
echo "${bin}"
