#!/usr/bin/env bash
# Install what builds the controller's image without a Docker engine: Debian's
# buildah (daemonless, chroot isolation; storage: tools/image/storage.sh) and mmdebstrap (a Debian
# base made from Debian's mirror, as no image registry may be reachable).
# Installs with apt-get when they are missing; that needs root. Without root,
# and without them, it says so and exits 3 (the image test is then skipped, for that
# reason only); a failed apt-get exits with its own code (the image test then fails).
set -euo pipefail
log() { printf 'image-install: %s\n' "$*" >&2; }

missing=()
for tool in buildah mmdebstrap; do
    command -v "$tool" >/dev/null || missing+=("$tool")
done
if [[ ${#missing[@]} -eq 0 ]]; then
    log "buildah and mmdebstrap are installed"
    exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
    log "missing: ${missing[*]}; install them (sudo apt-get install ${missing[*]}) to build the image"
    exit 3
fi
log "installing Debian's ${missing[*]}"
DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >&2
