#!/usr/bin/env bash
# Build (once) and cache the Helm CLI (helm.sh/helm/v3/cmd/helm) for the chart
# tests: `helm lint --strict`, `helm template`, and `helm install` on the test
# control plane. Compiled from the Go module pinned in tools/helm/go.mod, with
# Helm's own release ldflags (Makefile): the version string, and the Kubernetes
# version that `helm template`/`helm lint` assume for .Capabilities.KubeVersion
# and deprecated-API checks when no cluster is asked: without it they assume
# v1.20; with it, the minor of Helm's client-go (v0.37 -> v1.37).
#
# Usage:  HELM="$(tools/helm/build.sh)"
#
#   - Progress goes to stderr; the binary's path is the last (only) line on stdout.
#   - Cached in $HOSTSTATE_CACHE/helm/<key>/bin/helm (default
#     HOSTSTATE_CACHE=~/.cache/hoststate). <key> is a hash of go.mod/go.sum
#     (minus comment lines), the Go version, the platform and RECIPE: a second
#     run returns at once, a pin change gives a fresh build. Concurrent runs are
#     serialised with flock; a build lands in a temporary directory first.
#   - Go module and build caches live in $HOSTSTATE_CACHE/helm/go (delete it to
#     reclaim the space; only the bin dir is needed afterwards).
#   - Measured cold (empty caches, modules from the Go module proxy) on this
#     2-core machine, shared with other builds (load 5-8): 5m37s (20 s of
#     downloads, the rest compiling; 5m17s user CPU); the binary is 59 MiB
#     (stripped); the Go caches take 1.1 GiB.
set -euo pipefail

# Bump when the way the binary is built changes (flags, ldflags, ...).
RECIPE=1

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "${here}/../go-tool.sh"
go_tool_env helm

key="$(
  {
    echo "recipe=${RECIPE} go=${goversion} platform=${platform}"
    go_pinned go.mod go.sum
  } | sha256sum | cut -c1-16
)"
go_tool_cached bin helm

helm_version="$(cd "${here}" && go list -m -f '{{.Version}}' helm.sh/helm/v3)"
log "cache miss: building helm ${helm_version} into ${out} (${goversion}, ${platform})"
log "downloading modules…"
(cd "${here}" && go mod download) || die "go mod download failed in ${here}"

# As Helm's Makefile: the Kubernetes version Helm assumes offline is its
# client-go's, v0.X.Y -> 1.X.
client_go="$(cd "${here}" && go list -m -f '{{.Version}}' k8s.io/client-go)"
[[ "${client_go}" =~ ^v0\.([0-9]+)\.[0-9]+ ]] || die "cannot parse client-go version '${client_go}'"
k8s_minor="${BASH_REMATCH[1]}"
ldflags="-s -w"
ldflags+=" -X helm.sh/helm/v3/internal/version.version=${helm_version}"
ldflags+=" -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
  ldflags+=" -X ${pkg}.k8sVersionMajor=1 -X ${pkg}.k8sVersionMinor=${k8s_minor}"
done

log "building helm ${helm_version} (Kubernetes 1.${k8s_minor} assumed offline)…"
(cd "${here}" && go build -p 2 -trimpath -buildvcs=false -ldflags "${ldflags}" \
    -o "${tmp}/bin/helm" helm.sh/helm/v3/cmd/helm) || die "building helm failed"

got="$("${tmp}/bin/helm" version --template '{{.Version}}')" || die "helm was built but does not run"
[[ "${got}" == "${helm_version}" ]] || die "helm reports version '${got}', not ${helm_version}"
cat >"${tmp}/VERSIONS" <<VERSIONS
helm ${helm_version}
kubernetes assumed offline 1.${k8s_minor} (client-go ${client_go})
go ${goversion} ${platform}
VERSIONS

go_tool_publish
log "done: $(du -h "${bin}" | cut -f1) in ${bin}"
echo "${bin}"
