#!/usr/bin/env bash
# Re-make the image's two lock files from PyPI, every pin with its sha256 hashes
# (the Containerfile installs them with pip --require-hashes --no-deps, so a build
# resolves nothing and downloads only files whose hashes are written here):
#
#   tools/image/lock.sh            (after a change of pyproject.toml's dependencies,
#                                   or to take newer releases: then review the diff)
#
#   tools/image/requirements.lock        what the controller runs on: pyproject.toml's
#                                        [project] dependencies, nothing else
#   tools/image/build-requirements.lock  what only the build stage uses: the build
#                                        backend ([build-system] requires) and
#                                        cyclonedx-bom, which writes the image's SBOM
#
# Both are resolved for Python 3.11 on Linux, the python3 of Debian bookworm and of
# the Containerfile's default base; each pin lists the hashes of all its files on
# PyPI (every wheel and the sdist), so the same lock installs on amd64 and arm64.
# It runs uv (pyproject.toml's `lock` extra), installed into .venv when missing.
# tests/image/test_lock.py checks, offline, that the locks still match pyproject.toml.
set -euo pipefail
cd "$(dirname "$0")/../.."
venv="${HOSTSTATE_VENV:-.venv}"
[[ -x "$venv/bin/python" ]] || python3 -m venv "$venv"
if [[ ! -x "$venv/bin/uv" ]]; then
    "$venv/bin/python" -m pip install --quiet -e ".[lock]"
fi
compile=("$venv/bin/uv" pip compile --quiet --generate-hashes
    --custom-compile-command tools/image/lock.sh
    --python-version 3.11 --python-platform linux)

"${compile[@]}" pyproject.toml --output-file tools/image/requirements.lock

# [build-system] requires, read from pyproject.toml so the two cannot drift apart
build_requires="$("$venv/bin/python" -c 'import tomllib
print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["build-system"]["requires"]))')"
printf '%s\ncyclonedx-bom\n' "$build_requires" \
    | "${compile[@]}" - --output-file tools/image/build-requirements.lock
