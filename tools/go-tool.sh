# Sourced by the scripts that build a tool from a Go module pinned in their folder
# (tools/k8s, tools/helm, tools/olm, tools/clusterctl, tools/alertmanager, tools/krew): the one way
# they keep Go's environment, key their cache, serialise concurrent builds and publish a build, so that a fix to
# one (a lock left by a killed build, a toolchain fetched behind our back) is a fix
# to all. Each script says what it builds and how; this file is the cache around it.
#
#   here=<the script's folder>; RECIPE=<n>
#   source "${here}/../go-tool.sh"
#   go_tool_env NAME                        # cache_root, log, die, Go's environment
#   key="$({ echo "recipe=… go=${goversion} platform=${platform}"; go_pinned go.mod go.sum; } \
#     | sha256sum | cut -c1-16)"
#   go_tool_cached bin tool [other …]   # prints the binary and exits if built, else locks
#                                       # (dir "" a b …: prints the bin dir, for several)
#   … build into "${tmp}/bin" …
#   go_tool_publish
#
# The key's input is each script's own: a change here must leave every key as it
# was, or every machine rebuilds (minutes each).

# Go's environment and the cache folder of tool NAME, under $HOSTSTATE_CACHE.
go_tool_env() {
  tool_name="$1"
  cache_root="${HOSTSTATE_CACHE:-${HOME}/.cache/hoststate}/${tool_name}"
  start=${SECONDS}
  command -v go >/dev/null || die "go is not installed (need the version in ${here}/go.mod or newer)"
  export GOTOOLCHAIN=local                    # never fetch another Go toolchain
  export CGO_ENABLED=0                        # static binaries, like upstream releases
  export GOFLAGS="-mod=readonly -modcacherw"  # go.sum is complete; rw so rm -rf works
  export GOMODCACHE="${cache_root}/go/mod"
  export GOCACHE="${cache_root}/go/build"
  unset GOOS GOARCH
  export GOWORK=off
  goversion="$(go env GOVERSION)"
  platform="$(go env GOOS)_$(go env GOARCH)"
}

log() { printf '[%s] %s (%ss)\n' "${tool_name}" "$*" "$((SECONDS - start))" >&2; }
die() { printf '[%s] ERROR: %s\n' "${tool_name}" "$*" >&2; exit 1; }

# The key's lines for pinned files (relative to ${here}): their comment lines left
# out, since editing a comment must not cost a rebuild.
go_pinned() {
  local f
  for f in "$@"; do
    echo "== ${f}"
    grep -v '^[[:space:]]*//' "${here}/${f}" || true
  done
}

# Serialise concurrent builds (e.g. parallel test workers): the loser waits, then
# finds the winner's result, which the command given (READY…) recognises: ${tmp} is
# then empty, nothing to build. Otherwise ${tmp} is a fresh folder with bin/ to build
# into, removed on exit unless published. (Called as a plain command, never in a
# condition, so that any step failing here stops the script.)
go_tool_lock() {
  tmp=""
  mkdir -p "${cache_root}"
  exec 9>"${cache_root}/.build.lock"
  if ! flock -n 9; then
    log "another build is running, waiting for it…"
    flock 9
  fi
  if "$@"; then
    log "built by a concurrent run"
    return 0
  fi
  rm -rf "${cache_root}"/.tmp.*   # left by killed builds; we hold the lock
  tmp="$(mktemp -d "${cache_root}/.tmp.${key}.XXXXXX")"
  trap 'rm -rf "${tmp}"' EXIT
  mkdir -p "${tmp}/bin"
  chmod 755 "${tmp}"
}

# The cache entry for ${key}: sets out, and bin to ${out}/bin/$2 (or ${out}/bin when $2
# is empty, for a tool of several binaries). When ${out}/bin holds every binary named
# ($2 …), or a concurrent run built them while we waited for the lock, prints $1 (the
# script's answer: "bin" or "dir") and ends the calling script; else leaves the lock
# held and ${tmp} to build into.
go_tool_cached() {
  local answer="$1"
  shift
  out="${cache_root}/${key}"
  bin="${out}/bin${1:+/$1}"
  go_tool_binaries=("$@")
  [[ -n "$1" ]] || go_tool_binaries=("${@:2}")
  if go_tool_built; then
    go_tool_answer "${answer}"
  fi
  go_tool_lock go_tool_built
  if [[ -z "${tmp}" ]]; then
    go_tool_answer "${answer}"
  fi
}
go_tool_built() {
  local b
  for b in "${go_tool_binaries[@]}"; do
    [[ -x "${out}/bin/${b}" ]] || return 1
  done
}
go_tool_answer() {
  if [[ "$1" == dir ]]; then echo "${out}/bin"; else echo "${bin}"; fi
  exit 0
}

# Publish atomically: ${out} either is absent or holds the whole build.
go_tool_publish() {
  rm -rf "${out}"
  mv -T "${tmp}" "${out}"
  trap - EXIT
}
