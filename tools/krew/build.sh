#!/usr/bin/env bash
# Build (once) and cache krew's own manifest validator, validate-krew-manifest
# (sigs.k8s.io/krew/cmd/validate-krew-manifest, the check krew-index runs on every
# plugin manifest), for the test of plugins/krew/hoststate.yaml. Compiled from the Go
# module pinned in tools/krew/go.mod.
#
# Usage:  VALIDATE="$(tools/krew/build.sh)"
#         "$VALIDATE" -manifest plugins/krew/hoststate.yaml -skip-install
#
#   Exits non-zero and says why when the manifest is invalid (its structure, the
#   plugin's name against the file's, a platform selector matching no or several
#   supported platforms). -skip-install: without it the validator also runs
#   `kubectl krew install` on the archive the manifest's uri names (a download).
#
#   - Progress goes to stderr; the binary's path is the last (only) line on stdout.
#   - Cached in $HOSTSTATE_CACHE/krew/<key>/bin/validate-krew-manifest (default
#     HOSTSTATE_CACHE=~/.cache/hoststate). <key> is a hash of go.mod/go.sum (minus
#     comment lines), the Go version, the platform and RECIPE: a second run returns
#     at once, a pin change gives a fresh build. Concurrent runs are serialised with
#     flock; a build lands in a temporary directory first.
#   - Go module and build caches live in $HOSTSTATE_CACHE/krew/go (delete it to
#     reclaim the space; only the bin dir is needed afterwards).
#   - Measured cold on this 2-core machine, shared with other builds (load 8-9):
#     3 min 47 s (1 min 21 s user CPU) to compile, plus 16 s of module downloads
#     (made by `go mod tidy` just before); the binary is 7.3 MiB stripped; the Go
#     caches take 254 MiB. A cached run answers in 0.2 s.
set -euo pipefail

# Bump when the way the binary is built changes (flags, ldflags, ...).
RECIPE=1

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "${here}/../go-tool.sh"
go_tool_env krew

key="$(
  {
    echo "recipe=${RECIPE} go=${goversion} platform=${platform}"
    go_pinned go.mod go.sum
  } | sha256sum | cut -c1-16
)"
go_tool_cached bin validate-krew-manifest

krew_version="$(cd "${here}" && go list -m -f '{{.Version}}' sigs.k8s.io/krew)"
log "cache miss: building validate-krew-manifest ${krew_version} into ${out} (${goversion}, ${platform})"
log "downloading modules…"
(cd "${here}" && go mod download) || die "go mod download failed in ${here}"

log "building validate-krew-manifest ${krew_version}…"
(cd "${here}" && go build -p 2 -trimpath -buildvcs=false -ldflags "-s -w" \
    -o "${tmp}/bin/validate-krew-manifest" sigs.k8s.io/krew/cmd/validate-krew-manifest) \
  || die "building validate-krew-manifest failed"

# Smoke: with no -manifest it must refuse (klog.Fatal: exit 255).
if "${tmp}/bin/validate-krew-manifest" >/dev/null 2>&1; then
  die "validate-krew-manifest accepted no manifest"
fi
{
  echo "sigs.k8s.io/krew ${krew_version}"
  echo "go ${goversion} ${platform}"
} >"${tmp}/VERSIONS"

go_tool_publish
log "done: $(du -h "${bin}" | cut -f1) in ${bin}"
echo "${bin}"
