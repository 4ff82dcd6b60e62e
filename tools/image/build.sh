#!/usr/bin/env bash
# Build the controller's image from Containerfile with buildah, without a Docker engine
# and without an image registry:
#
#   tools/image/build.sh [TAG]      (default localhost/hoststate/state-controller:dev)
#
# The bases are Debian bookworm made by mmdebstrap from Debian's mirror, with the
# security and updates suites: one with python3, its venv module and ca-certificates
# to build on, and the same without python3-venv and pip's wheels to run on. They are
# made once (about 25 s) and kept as localhost/hoststate-base:bookworm-<recipe> and
# localhost/hoststate-runtime-base:bookworm-<recipe>, where <recipe> is a hash of
# what makes them (below): a changed recipe makes new bases instead of reusing stale
# ones. REFRESH_BASE=1 makes them again from the same recipe, to take the security
# updates published since. With a registry at hand, `podman build .` or `docker build
# .` use the official python slim image, pinned by digest in Containerfile, instead.
# A CA bundle in $PIP_CERT or $SSL_CERT_FILE (a network that intercepts TLS) is
# passed to pip as a build secret.
#
# The image carries its SBOM (CycloneDX JSON) at /usr/share/doc/hoststate/sbom.cdx.json;
# SBOM=FILE also copies it out to FILE (that opens a container on the image: about
# 10 s with buildah's vfs storage, so only on request). buildah's storage is
# tools/image/storage.sh's choice: overlay where the kernel mounts it, else vfs.
# The image's name is the last line on stdout.
set -euo pipefail
cd "$(dirname "$0")/../.."
tag="${1:-localhost/hoststate/state-controller:dev}"
export BUILDAH_ISOLATION=chroot
tools/image/install.sh
mapfile -t storage < <(tools/image/storage.sh)  # overlay where it mounts, else vfs
buildah=(buildah "${storage[@]}")
log() { printf 'image-build: %s\n' "$*" >&2; }

# The bases' recipe: suite, mirrors (one sources.list line each), packages, and what
# the runtime base purges. Change it here only: its hash names the bases.
suite=bookworm
mirrors=(
    "deb http://deb.debian.org/debian bookworm main"
    "deb http://deb.debian.org/debian bookworm-updates main"
    "deb http://deb.debian.org/debian-security bookworm-security main"
)
packages=python3,python3-venv,ca-certificates
runtime_purge=(python3-venv python3.11-venv python3-pip-whl python3-setuptools-whl)
recipe="$(printf '%s\n' "$suite" "${mirrors[@]}" "$packages" "${runtime_purge[@]}" \
    | sha256sum | cut -c1-12)"
base="localhost/hoststate-base:$suite-$recipe"
runtime_base="localhost/hoststate-runtime-base:$suite-$recipe"

if [[ "${REFRESH_BASE:-0}" == 1 ]] \
    || ! "${buildah[@]}" inspect --type image "$base" >/dev/null 2>&1 \
    || ! "${buildah[@]}" inspect --type image "$runtime_base" >/dev/null 2>&1; then
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
    log "making the bases $base and $runtime_base with mmdebstrap"
    mmdebstrap --quiet --variant=essential --include="$packages" \
        "$suite" "$work/rootfs.tar" "${mirrors[@]}" >&2
    container="$("${buildah[@]}" from scratch)"
    "${buildah[@]}" add "$container" "$work/rootfs.tar" / >/dev/null
    "${buildah[@]}" commit --quiet --rm "$container" "$base" >/dev/null
    container="$("${buildah[@]}" from "$base")"
    "${buildah[@]}" run --isolation chroot "$container" -- \
        dpkg --purge "${runtime_purge[@]}" >/dev/null
    "${buildah[@]}" commit --quiet --rm "$container" "$runtime_base" >/dev/null
fi
secret=()
ca="${PIP_CERT:-${SSL_CERT_FILE:-}}"
if [[ -n "$ca" && -s "$ca" ]]; then
    secret=(--secret "id=ca-bundle,src=$ca")
fi
log "building $tag"
"${buildah[@]}" bud --quiet --isolation chroot "${secret[@]}" \
    --build-arg "BASE=$base" --build-arg "RUNTIME_BASE=$runtime_base" \
    --tag "$tag" --file Containerfile . >&2

if [[ -n "${SBOM:-}" ]]; then
    container="$("${buildah[@]}" from --quiet "$tag")"
    mount="$("${buildah[@]}" mount "$container")"
    mkdir -p "$(dirname "$SBOM")"
    cp "$mount/usr/share/doc/hoststate/sbom.cdx.json" "$SBOM"
    "${buildah[@]}" umount "$container" >/dev/null
    "${buildah[@]}" rm "$container" >/dev/null
    log "its SBOM: $SBOM"
fi
printf '%s\n' "$tag"
