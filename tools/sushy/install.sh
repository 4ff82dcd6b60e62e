#!/usr/bin/env bash
# Install the Redfish BMC emulator (sushy-emulator) into a cached virtualenv.
#
#   VENV="$(tools/sushy/install.sh)"
#   "$VENV/bin/sushy-emulator" --config emulator.conf
#
# Its own venv, not Ironic's: the emulator plays the BMC, a separate program
# from Ironic, and shares no library with it at run time (Ironic talks to it
# over HTTP through its own sushy). Its pins (Flask and friends, which Ironic
# does not use) so change without rebuilding Ironic's venv, whose key is the
# hash of tools/ironic/requirements.txt, and Ironic's pins never have to agree
# with the emulator's. The venv is small: about 10 s to build on a warm pip cache.
#
# The venv lives at ${HOSTSTATE_CACHE:-~/.cache/hoststate}/sushy-<hash>/,
# <hash> being the first 16 hex digits of sha256(requirements.txt). It is
# built only if missing, in a temporary directory next to it and then moved
# into place, so an interrupted or concurrent run never leaves a half-built
# venv at the final path. Progress goes to stderr; the venv path is the last
# (and only) line on stdout.
#
# Environment: HOSTSTATE_CACHE (cache root), PYTHON (interpreter, default
# python3; must be >= 3.10).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
req="$here/requirements.txt"
python="${PYTHON:-python3}"
cache="${HOSTSTATE_CACHE:-$HOME/.cache/hoststate}"

log() { printf 'sushy-install: %s\n' "$*" >&2; }

hash="$(sha256sum "$req" | cut -c1-16)"
venv="$cache/sushy-$hash"

if [[ -f "$venv/.hoststate-complete" && -x "$venv/bin/sushy-emulator" ]]; then
    log "cached venv $venv"
    printf '%s\n' "$venv"
    exit 0
fi

if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
    log "error: $python is $("$python" -V 2>&1); sushy-tools needs Python >= 3.10"
    exit 1
fi

mkdir -p "$cache"
tmp="$(mktemp -d "$cache/.sushy-$hash.tmp.XXXXXX")"
chmod 755 "$tmp"
trap 'rm -rf "$tmp"' EXIT

start=$SECONDS
log "building venv for $req ($("$python" -V 2>&1)) in $tmp"
"$python" -m venv "$tmp"
"$tmp/bin/python" -m pip install --disable-pip-version-check --no-input \
    --progress-bar off --quiet -r "$req" >&2
log "checking the installation"
"$tmp/bin/python" -c 'import sushy_tools.emulator.main, bcrypt' >&2
[[ -x "$tmp/bin/sushy-emulator" ]] || { log "error: $tmp/bin/sushy-emulator missing"; exit 1; }

# Console scripts embed the venv's absolute path: point them at the final one.
grep -rlF --null "$tmp" "$tmp/bin" | xargs -0 -r sed -i "s|$tmp|$venv|g"
touch "$tmp/.hoststate-complete"

if [[ -f "$venv/.hoststate-complete" ]]; then
    log "venv appeared concurrently at $venv"
else
    rm -rf "$venv"
    mv -T "$tmp" "$venv" || [[ -f "$venv/.hoststate-complete" ]]
fi
log "ready in $((SECONDS - start))s: $venv"
printf '%s\n' "$venv"
