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
# go.sum, the calling script, the other FILEs it names and this library, so that a build is redone
# when any of them changes.
build_stamp() {
  local mod=$1
  shift
  cat "$mod/go.mod" "$mod/go.sum" "${BASH_SOURCE[1]}" "$@" "$gobuild_lib" | sha256sum | cut -c1-16
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
