#!/usr/bin/env bash
# Install Debian's prometheus package (the server and promtool) into a cache,
# without root: the .deb is downloaded with `apt-get download` and unpacked.
#
#   DIR="$(tools/prometheus/install.sh)"
#   "$DIR/usr/bin/promtool" check rules alerts/hoststate.rules.yaml
#
# The files live at ${HOSTSTATE_CACHE:-~/.cache/hoststate}/prometheus-<version>/, unpacked by
# tools/debian/unpack.sh (only if missing; the directory is the last line on stdout).
#
# Environment: HOSTSTATE_CACHE (cache root), PROMETHEUS_DEB_VERSION (the package
# version, default: the one apt offers).
set -euo pipefail
exec "$(dirname "$0")/../debian/unpack.sh" prometheus promtool --version
