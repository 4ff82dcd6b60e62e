#!/usr/bin/env bash
# Unpack one of Debian's packages into a cache, without root: the .deb is downloaded
# with `apt-get download` and unpacked with dpkg-deb. The shared body of
# tools/prometheus/install.sh and tools/genisoimage/install.sh.
#
#   tools/debian/unpack.sh PACKAGE BINARY VERSION_FLAG
#
# PACKAGE is the Debian package; BINARY the file under usr/bin/ that proves the tree is
# whole, run with VERSION_FLAG once after unpacking. The version is $<PACKAGE>_DEB_VERSION
# (upper case, '-' as '_'), by default the one apt offers. The files live at
# ${HOSTSTATE_CACHE:-~/.cache/hoststate}/<package>-<version>/. They are unpacked only if
# missing: into a temporary directory next to it, then moved into place, so an
# interrupted or concurrent run never leaves a half-unpacked tree at the final path.
# Progress goes to stderr; the directory is the last (and only) line on stdout.
set -euo pipefail

package="$1" binary="$2" version_flag="$3"
cache="${HOSTSTATE_CACHE:-$HOME/.cache/hoststate}"
log() { printf '%s-install: %s\n' "$package" "$*" >&2; }

pinned_var="$(printf '%s_DEB_VERSION' "$package" | tr 'a-z-' 'A-Z_')"
version="${!pinned_var:-$(apt-cache policy "$package" 2>/dev/null | awk '/Candidate:/ {print $2}')}"
if [[ -z "$version" || "$version" == "(none)" ]]; then
    log "error: apt offers no '$package' package; run 'apt-get update' or set $pinned_var"
    exit 1
fi
dir="$cache/$package-${version//[^A-Za-z0-9.+-]/_}"

if [[ -f "$dir/.hoststate-complete" && -x "$dir/usr/bin/$binary" ]]; then
    log "cached $dir"
    printf '%s\n' "$dir"
    exit 0
fi

mkdir -p "$cache"
tmp="$(mktemp -d "$cache/.$package.tmp.XXXXXX")"
chmod 755 "$tmp"
cleanup() { rm -rf "$tmp"; }
trap cleanup EXIT

log "downloading Debian's $package $version"
(cd "$tmp" && apt-get download -q "$package=$version" >&2 2>/dev/null) || {
    log "error: 'apt-get download $package=$version' failed"
    exit 1
}
log "unpacking"
dpkg-deb -x "$tmp"/"$package"_*.deb "$tmp/root"
"$tmp/root/usr/bin/$binary" "$version_flag" >&2
touch "$tmp/root/.hoststate-complete"
rm -rf "$dir"
mv "$tmp/root" "$dir"
printf '%s\n' "$dir"
