#!/usr/bin/env bash
# Build (once) and cache Prometheus' Alertmanager, for the test of the inhibition
# docs/alerts.md gives (tests/monitoring/test_mco_inhibition.py): the sample is loaded
# into a real Alertmanager on loopback and alerts are posted to it.
#
# Usage:  BIN="$(tools/alertmanager/build.sh)"   # the alertmanager binary; amtool beside it
#
#   - Built with `go install <module>/cmd/...@VERSION` from the Go module proxy, the
#     module's own go.sum checked against the checksum database (no go.mod here: the
#     version below is the pin). Debian's prometheus-alertmanager is no use unpacked
#     without root: it reads its templates from /usr/share/prometheus/alertmanager.
#   - Cached in $HOSTSTATE_CACHE/alertmanager/<key>/bin (default
#     HOSTSTATE_CACHE=~/.cache/hoststate); <key> hashes the version, the Go version,
#     the platform and RECIPE. Concurrent runs are serialised (tools/go-tool.sh).
#   - Measured cold on 2 cores: about 1m45s; progress goes to stderr, the binary's
#     path is the last (only) line on stdout.
set -euo pipefail

VERSION=v0.28.1
MODULE=github.com/prometheus/alertmanager
# Bump when the way the binaries are built changes (flags, ldflags, ...).
RECIPE=1

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "${here}/../go-tool.sh"
go_tool_env alertmanager
export GOFLAGS="-modcacherw"  # no main module: the module's own go.sum decides

key="$(echo "recipe=${RECIPE} version=${VERSION} go=${goversion} platform=${platform}" \
  | sha256sum | cut -c1-16)"
go_tool_cached bin alertmanager amtool

log "cache miss: building alertmanager ${VERSION} into ${out} (${goversion}, ${platform})"
GOBIN="${tmp}/bin" go install -trimpath -ldflags "-s -w" \
  "${MODULE}/cmd/alertmanager@${VERSION}" "${MODULE}/cmd/amtool@${VERSION}" \
  || die "building alertmanager ${VERSION} failed"
"${tmp}/bin/amtool" --version >/dev/null 2>&1 || die "amtool was built but does not run"
go_tool_publish
log "built"
echo "${bin}"
