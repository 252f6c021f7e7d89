# shellcheck shell=bash
# The steps every hack/build-*.sh that builds a tool from its pinned Go module shares: read the
# pinned version, skip a build whose stamp (a checksum of its inputs) is unchanged, and build into a
# file beside the target that is renamed into place. Sourced, never run; each script keeps what is
# its own (which module, which ldflags, what its messages say).

gobuild_lib=${BASH_SOURCE[0]}

# module_version MOD_DIR MODULE prints the version MOD_DIR/go.mod requires of MODULE, or fails
# naming the calling script.
module_version() {
  local version
  version=$(awk -v module="$2" '$1 == module && $2 ~ /^v/ {print $2; exit}' "$1/go.mod")
  if [[ -z "$version" ]]; then
    echo "$(basename "$0" .sh): cannot find the $2 version in $1/go.mod" >&2
    exit 1
  fi
  echo "$version"
}

# build_stamp MOD_DIR [FILE...] prints the checksum of a build's inputs: MOD_DIR's go.mod and
# go.sum, the calling script, the other FILEs it names, this library and the Go toolchain and
# platform, so that a build is redone when any of them changes.
build_stamp() {
  local mod=$1
  shift
  { cat "$mod/go.mod" "$mod/go.sum" "${BASH_SOURCE[1]}" "$@" "$gobuild_lib"; go env GOVERSION GOOS GOARCH; } |
    sha256sum | cut -c1-16
}

# The tool cache keeps each built tool outside the clone under its stamp, so that a fresh clone
# (CI's is one every run) copies what another clone on this machine built from the same inputs
# instead of linking it again: the Go build cache spares the compiling, not the linking of
# kube-apiserver, helm and promtool, which costs minutes on two cores. It lives beside Go's own
# build cache, under the user cache directory; NODEKEEPER_TOOL_CACHE moves it, and
# NODEKEEPER_TOOL_CACHE=off turns it off. Only the newest tool_cache_keep stamps of a tool are
# kept.
tool_cache_keep=3

tool_cache() {
  local dir=${NODEKEEPER_TOOL_CACHE:-${XDG_CACHE_HOME:-${HOME:-}/.cache}/nodekeeper/tools}
  [[ $dir != off && $dir != /.cache/* ]] || return 1
  echo "$dir"
}

# restore_tool NAME STAMP DIR FILE... copies the FILEs of NAME built from STAMP from the tool
# cache into DIR, each renamed into place; it fails, copying nothing, when the cache holds no
# complete build of that stamp.
restore_tool() {
  local name=$1 stamp=$2 dir=$3 cache src f
  shift 3
  cache=$(tool_cache) || return 1
  src="$cache/$name/$stamp"
  [[ -f "$src/.complete" ]] || return 1
  for f; do [[ -f "$src/$f" ]] || return 1; done
  mkdir -p "$dir"
  for f; do
    cp -p "$src/$f" "$dir/.$f.new" && mv -f "$dir/.$f.new" "$dir/$f" || return 1
  done
}

# save_tool NAME STAMP DIR FILE... keeps the FILEs of DIR in the tool cache under NAME and STAMP,
# then forgets all but the newest stamps of NAME. A cache that cannot be written only warns: the
# build itself succeeded.
save_tool() {
  local name=$1 stamp=$2 dir=$3 cache tmp f ok=1
  shift 3
  cache=$(tool_cache) || return 0
  tmp="$cache/$name/.$stamp.$$"
  mkdir -p "$tmp" 2>/dev/null || ok=0
  for f; do
    [[ $ok == 1 ]] && { cp -p "$dir/$f" "$tmp/$f" 2>/dev/null || ok=0; }
  done
  if [[ $ok == 1 ]] && touch "$tmp/.complete" && rm -rf "${cache:?}/$name/$stamp" && mv "$tmp" "$cache/$name/$stamp"; then
    # Stamps are hex names; ls -t orders them newest first.
    ls -1t "$cache/$name" | tail -n +$((tool_cache_keep + 1)) | while read -r old; do rm -rf "${cache:?}/$name/$old"; done
  else
    rm -rf "$tmp"
    echo "$(basename "$0" .sh): warning: could not keep $name in the tool cache $cache" >&2
  fi
}

# stamp_matches STAMP_FILE STAMP succeeds when the last complete build wrote STAMP.
stamp_matches() {
  [[ -f "$1" && "$(cat "$1")" == "$2" ]]
}

# begin_build STAMP_FILE starts the clock and removes the stamp, so that an interrupted build is
# never taken for a complete one.
begin_build() {
  build_start=$(date +%s)
  mkdir -p "$(dirname "$1")"
  rm -f "$1"
}

# go_build_into TARGET GO_BUILD_ARGS... builds a static, trimmed binary beside TARGET and renames it
# into place, so that a test or script starting meanwhile never runs a half-written binary.
go_build_into() {
  local target=$1 next
  shift
  next="$(dirname "$target")/.$(basename "$target").new"
  CGO_ENABLED=0 go build -trimpath -o "$next" "$@"
  mv -f "$next" "$target"
}

# end_build STAMP_FILE STAMP WHAT records the complete build and says how long WHAT took.
end_build() {
  echo "$2" > "$1"
  echo "$3 built in $(( $(date +%s) - build_start ))s"
}
