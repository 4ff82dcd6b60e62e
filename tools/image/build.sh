#!/usr/bin/env bash
# Build the controller's image from Containerfile with buildah, without a Docker engine
# and without an image registry:
#
#   tools/image/build.sh [TAG]      (default localhost/hoststate/state-controller:dev)
#
# The base is Debian bookworm with python3 and its venv module, made by mmdebstrap
# from Debian's mirror and kept as localhost/hoststate-base:bookworm (made once,
# about 15 s). With a registry at hand, `podman build .` or `docker build .` use
# the official python slim image instead. A CA bundle in $PIP_CERT or
# $SSL_CERT_FILE (a network that intercepts TLS) is passed to pip as a build secret.
# The image's name is the last line on stdout.
set -euo pipefail
cd "$(dirname "$0")/../.."
tag="${1:-localhost/hoststate/state-controller:dev}"
base="localhost/hoststate-base:bookworm"
export BUILDAH_ISOLATION=chroot
buildah=(buildah --storage-driver vfs)
log() { printf 'image-build: %s\n' "$*" >&2; }

tools/image/install.sh
if ! "${buildah[@]}" inspect --type image "$base" >/dev/null 2>&1; then
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
    log "making the base $base with mmdebstrap (Debian bookworm, python3)"
    mmdebstrap --quiet --variant=essential --include=python3,python3-venv,ca-certificates \
        bookworm "$work/rootfs.tar" http://deb.debian.org/debian >&2
    container="$("${buildah[@]}" from scratch)"
    "${buildah[@]}" add "$container" "$work/rootfs.tar" / >/dev/null
    "${buildah[@]}" commit --quiet "$container" "$base" >/dev/null
    "${buildah[@]}" rm "$container" >/dev/null
fi
secret=()
ca="${PIP_CERT:-${SSL_CERT_FILE:-}}"
if [[ -n "$ca" && -s "$ca" ]]; then
    secret=(--secret "id=ca-bundle,src=$ca")
fi
log "building $tag"
"${buildah[@]}" bud --quiet --isolation chroot "${secret[@]}" \
    --build-arg "BASE=$base" --tag "$tag" --file Containerfile . >&2
printf '%s\n' "$tag"
