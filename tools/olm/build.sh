#!/usr/bin/env bash
# Build (once) and cache hoststate's OLM bundle validator (tools/olm/validate),
# which checks a bundle directory (manifests/ + metadata/) with the
# operator-framework's own code: github.com/operator-framework/api's
# GetBundleFromDir and validators (the default bundle validators, good
# practices, objects, deprecated APIs, OperatorHub's), and
# github.com/operator-framework/operator-registry's bundle format and content
# checks (`opm alpha bundle validate` without the image pull), at the versions
# pinned in tools/olm/go.mod.
#
# Usage:  VALIDATE="$(tools/olm/build.sh)"
#         "$VALIDATE" [-json] [-operatorhub=false] [-k8s-version 1.30] BUNDLE_DIR
#
#   Prints one finding a line ("<error|warning>\t<source>\t<message>", or a JSON
#   array with -json) and exits 1 on any error, 0 when there are only warnings.
#
#   - Progress goes to stderr; the binary's path is the last (only) line on stdout.
#   - Cached in $HOSTSTATE_CACHE/olm/<key>/bin/validate-bundle (default
#     HOSTSTATE_CACHE=~/.cache/hoststate). <key> is a hash of go.mod/go.sum
#     (minus comment lines), the Go sources of validate/, the build tags, the
#     Go version, the platform and RECIPE: a second run returns at once, a
#     change gives a fresh build. Concurrent runs are serialised with flock; a
#     build lands in a temporary directory first.
#   - Go module and build caches live in $HOSTSTATE_CACHE/olm/go (delete it to
#     reclaim the space; only the bin dir is needed afterwards).
#   - Measured cold (empty caches, modules from the Go module proxy) on this
#     2-core machine, shared with other builds (load 5-7): about 5 min 15 s —
#     19 s of downloads, 3 min 58 s for the api module's validators (703
#     packages), 56 s more for operator-registry's checks (873 packages in all);
#     the binary is 38 MiB stripped (36 MiB without operator-registry); the Go
#     caches take 1.7 GiB.
#   - operator-registry is worth its minute: it alone checks
#     metadata/annotations.yaml (present; media type, package, channels) and
#     the kinds a registry+v1 bundle may carry (a Deployment beside the CSV is
#     refused there and nowhere else). Its ValidateBundleContent (v1.73.0)
#     panics on a manifests/ with objects but no CSV; the validator reports that
#     as an error and goes on (validate/registry.go). Build without it by
#     setting TAGS= below.
set -euo pipefail

# Bump when the way the binary is built changes (flags, ldflags, ...).
RECIPE=1
# `registry`: compile operator-registry's checks in (see above; empty: without them).
TAGS=registry

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "${here}/../go-tool.sh"
go_tool_env olm

key="$(
  {
    echo "recipe=${RECIPE} tags=${TAGS} go=${goversion} platform=${platform}"
    go_pinned go.mod go.sum
    for f in "${here}"/validate/*.go; do
      echo "== validate/${f##*/}"
      cat "${f}"
    done
  } | sha256sum | cut -c1-16
)"
go_tool_cached bin validate-bundle

versions="$(cd "${here}" && go list -m -f '{{.Path}} {{.Version}}' \
  github.com/operator-framework/api github.com/operator-framework/operator-registry)"
log "cache miss: building into ${out} (${goversion}, ${platform}, tags '${TAGS}')"
log "downloading modules…"
(cd "${here}" && go mod download) || die "go mod download failed in ${here}"

log "building the validator ($(echo "${versions}" | tr '\n' ' '))…"
(cd "${here}" && go build -p 2 -trimpath -buildvcs=false -tags "${TAGS}" -ldflags "-s -w" \
    -o "${tmp}/bin/validate-bundle" ./validate) || die "building the validator failed"

# Smoke: an empty directory is no bundle, and the validator must say so.
mkdir -p "${tmp}/empty"
if "${tmp}/bin/validate-bundle" "${tmp}/empty" >/dev/null 2>&1; then
  die "the validator accepted an empty directory"
fi
rmdir "${tmp}/empty"
{
  echo "${versions}"
  echo "tags ${TAGS:-none}"
  echo "go ${goversion} ${platform}"
} >"${tmp}/VERSIONS"

go_tool_publish
log "done: $(du -h "${bin}" | cut -f1) in ${bin}"
echo "${bin}"
