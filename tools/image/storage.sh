#!/usr/bin/env bash
# buildah's storage options for this machine, one per line, for tools/image/build.sh
# and the image test (every buildah call on the image must use the same storage).
#
# overlay where the kernel mounts it: a layer or a working container is a mount over
# the one below, so a build copies nothing it did not change. Else vfs, which works
# everywhere and copies the whole tree for every layer and every container (the
# build then takes about twice as long). overlay keeps its own store
# (/var/lib/containers/storage-overlay) so that a store made with vfs is never opened
# with another driver; each store keeps its own bases (tools/image/build.sh).
set -euo pipefail
probe="$(mktemp -d /var/tmp/hoststate-overlay-probe.XXXXXX)"
trap 'umount "$probe/merged" 2>/dev/null || true; rm -rf "$probe"' EXIT
mkdir -p "$probe"/{lower,upper,work,merged}
if mount -t overlay overlay \
    -o "lowerdir=$probe/lower,upperdir=$probe/upper,workdir=$probe/work" "$probe/merged" \
    2>/dev/null; then
    printf '%s\n' --storage-driver overlay \
        --root /var/lib/containers/storage-overlay --runroot /run/containers/storage-overlay
else
    printf '%s\n' --storage-driver vfs
fi
