#!/usr/bin/env bash
# Install Debian's prometheus package (the server and promtool) into a cache,
# without root: the .deb is downloaded with `apt-get download` and unpacked.
#
#   DIR="$(tools/prometheus/install.sh)"
#   "$DIR/usr/bin/promtool" check rules alerts/hoststate.rules.yaml
#
# The files live at ${HOSTSTATE_CACHE:-~/.cache/hoststate}/prometheus-<version>/.
# They are unpacked only if missing: into a temporary directory next to it,
# then moved into place, so an interrupted or concurrent run never leaves a
# half-unpacked tree at the final path. Progress goes to stderr; the directory
# is the last (and only) line on stdout.
#
# Environment: HOSTSTATE_CACHE (cache root), PROMETHEUS_DEB_VERSION (the
# package version, default: the one apt offers).
set -euo pipefail

cache="${HOSTSTATE_CACHE:-$HOME/.cache/hoststate}"
log() { printf 'prometheus-install: %s\n' "$*" >&2; }

version="${PROMETHEUS_DEB_VERSION:-$(apt-cache policy prometheus 2>/dev/null | awk '/Candidate:/ {print $2}')}"
if [[ -z "$version" || "$version" == "(none)" ]]; then
    log "error: apt offers no 'prometheus' package; run 'apt-get update' or set PROMETHEUS_DEB_VERSION"
    exit 1
fi
dir="$cache/prometheus-${version//[^A-Za-z0-9.+-]/_}"

if [[ -f "$dir/.hoststate-complete" && -x "$dir/usr/bin/prometheus" ]]; then
    log "cached $dir"
    printf '%s\n' "$dir"
    exit 0
fi

mkdir -p "$cache"
tmp="$(mktemp -d "$cache/.prometheus.tmp.XXXXXX")"
chmod 755 "$tmp"
cleanup() { rm -rf "$tmp"; }
trap cleanup EXIT

log "downloading Debian's prometheus $version"
(cd "$tmp" && apt-get download -q "prometheus=$version" >&2 2>/dev/null) || {
    log "error: 'apt-get download prometheus=$version' failed"
    exit 1
}
log "unpacking"
dpkg-deb -x "$tmp"/prometheus_*.deb "$tmp/root"
"$tmp/root/usr/bin/promtool" --version >&2
touch "$tmp/root/.hoststate-complete"
rm -rf "$dir"
mv "$tmp/root" "$dir"
printf '%s\n' "$dir"
