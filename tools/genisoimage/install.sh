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
# The files live at ${HOSTSTATE_CACHE:-~/.cache/hoststate}/genisoimage-<version>/, unpacked by
# tools/debian/unpack.sh (only if missing; the directory is the last line on stdout).
#
# Environment: HOSTSTATE_CACHE (cache root), GENISOIMAGE_DEB_VERSION (the package
# version, default: the one apt offers).
set -euo pipefail
exec "$(dirname "$0")/../debian/unpack.sh" genisoimage genisoimage --version
