#!/usr/bin/env bash
# Install Debian's genisoimage package into a cache, without root: the .deb is
# downloaded with `apt-get download` and unpacked.
#
#   DIR="$(tools/genisoimage/install.sh)"
#   PATH="$DIR/usr/bin:$PATH" ironic --config-file ironic.conf
#
# Why: Ironic builds a config drive given as JSON into an ISO 9660 image with
# genisoimage, mkisofs or xorrisofs found on PATH (openstacksdk's
# baremetal/configdrive.py); the redfish virtual-media boot of a ramdisk deploy
# attaches that image. Without one of them the deploy ends "deploy failed",
# measured: 'Error generating the configdrive. Make sure the "genisoimage",
# "mkisofs" or "xorrisofs" tool is installed'. fake-hardware keeps the drive as
# JSON and needs none.
#
# The files live at ${HOSTSTATE_CACHE:-~/.cache/hoststate}/genisoimage-<version>/.
# They are unpacked only if missing: into a temporary directory next to it,
# then moved into place, so an interrupted or concurrent run never leaves a
# half-unpacked tree at the final path. Progress goes to stderr; the directory
# is the last (and only) line on stdout.
#
# Environment: HOSTSTATE_CACHE (cache root), GENISOIMAGE_DEB_VERSION (the
# package version, default: the one apt offers).
set -euo pipefail

cache="${HOSTSTATE_CACHE:-$HOME/.cache/hoststate}"
log() { printf 'genisoimage-install: %s\n' "$*" >&2; }

version="${GENISOIMAGE_DEB_VERSION:-$(apt-cache policy genisoimage 2>/dev/null | awk '/Candidate:/ {print $2}')}"
if [[ -z "$version" || "$version" == "(none)" ]]; then
    log "error: apt offers no 'genisoimage' package; run 'apt-get update' or set GENISOIMAGE_DEB_VERSION"
    exit 1
fi
dir="$cache/genisoimage-${version//[^A-Za-z0-9.+-]/_}"

if [[ -f "$dir/.hoststate-complete" && -x "$dir/usr/bin/genisoimage" ]]; then
    log "cached $dir"
    printf '%s\n' "$dir"
    exit 0
fi

mkdir -p "$cache"
tmp="$(mktemp -d "$cache/.genisoimage.tmp.XXXXXX")"
chmod 755 "$tmp"
cleanup() { rm -rf "$tmp"; }
trap cleanup EXIT

log "downloading Debian's genisoimage $version"
(cd "$tmp" && apt-get download -q "genisoimage=$version" >&2 2>/dev/null) || {
    log "error: 'apt-get download genisoimage=$version' failed"
    exit 1
}
log "unpacking"
dpkg-deb -x "$tmp"/genisoimage_*.deb "$tmp/root"
"$tmp/root/usr/bin/genisoimage" --version >&2
touch "$tmp/root/.hoststate-complete"
rm -rf "$dir"
mv "$tmp/root" "$dir"
printf '%s\n' "$dir"
