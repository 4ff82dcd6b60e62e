#!/usr/bin/env bash
# Install a standalone OpenStack Ironic into a cached virtualenv.
#
#   VENV="$(tools/ironic/install.sh)"
#   "$VENV/bin/ironic" --config-file ironic.conf
#
# The venv lives at ${HOSTSTATE_CACHE:-~/.cache/hoststate}/ironic-<hash>/,
# <hash> being the first 16 hex digits of sha256(requirements.txt). It is
# built only if missing: in a temporary directory next to it, then moved
# into place, so an interrupted or concurrent run never leaves a half-built
# venv at the final path. Progress goes to stderr; the venv path is the last
# (and only) line on stdout.
#
# Environment: HOSTSTATE_CACHE (cache root), PYTHON (interpreter, default
# python3; must be >= 3.11).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
req="$here/requirements.txt"
python="${PYTHON:-python3}"
cache="${HOSTSTATE_CACHE:-$HOME/.cache/hoststate}"

log() { printf 'ironic-install: %s\n' "$*" >&2; }

hash="$(sha256sum "$req" | cut -c1-16)"
venv="$cache/ironic-$hash"

if [[ -f "$venv/.hoststate-complete" && -x "$venv/bin/ironic" ]]; then
    log "cached venv $venv"
    printf '%s\n' "$venv"
    exit 0
fi

if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    log "error: $python is $("$python" -V 2>&1); ironic needs Python >= 3.11"
    exit 1
fi

mkdir -p "$cache"
tmp="$(mktemp -d "$cache/.ironic-$hash.tmp.XXXXXX")"
chmod 755 "$tmp"  # mktemp makes it 0700
cleanup() { rm -rf "$tmp"; }
trap cleanup EXIT

start=$SECONDS
log "building venv for $req ($("$python" -V 2>&1)) in $tmp"
"$python" -m venv "$tmp"
log "upgrading pip"
"$tmp/bin/python" -m pip install --quiet --disable-pip-version-check \
    --no-input --upgrade pip >&2
log "installing requirements (about a minute on a cold pip cache)"
"$tmp/bin/python" -m pip install --disable-pip-version-check --no-input \
    --progress-bar off -r "$req" >&2
log "checking the installation"
"$tmp/bin/python" -W ignore -c 'import ironic.command.singleprocess, ironic.command.dbsync' >&2
for tool in ironic ironic-dbsync; do
    [[ -x "$tmp/bin/$tool" ]] || { log "error: $tmp/bin/$tool missing"; exit 1; }
done

# A venv is not relocatable: console scripts (bin/ironic, ...) and the
# activate scripts embed the absolute path. Point them at the final path
# before moving the directory there.
grep -rlF --null "$tmp" "$tmp/bin" | xargs -0 -r sed -i "s|$tmp|$venv|g"
touch "$tmp/.hoststate-complete"

if [[ -e "$venv" ]]; then
    if [[ -f "$venv/.hoststate-complete" ]]; then
        # Another run finished first; use its venv and drop ours.
        log "venv appeared concurrently at $venv"
    else
        # Leftover from something that is not this script's atomic mv.
        log "replacing incomplete $venv"
        rm -rf "$venv"
        mv -T "$tmp" "$venv"
    fi
else
    mv -T "$tmp" "$venv" || [[ -f "$venv/.hoststate-complete" ]]
fi
log "ready in $((SECONDS - start))s: $venv"
printf '%s\n' "$venv"
