#!/usr/bin/env bash
# Binary size and start-up time of nodekeeper built with the release flags (CGO_ENABLED=0,
# -trimpath, -ldflags '-s -w', as .goreleaser.yaml and `make build` build it), and the size of the
# controller's own binary (cmd/nodekeeper-controller, what the image runs) where a revision has one.
#
#   hack/bench-binary.sh            the current tree
#   hack/bench-binary.sh REV...     each git revision (built in a temporary detached worktree,
#                                   removed afterwards), then the current tree, in one run so
#                                   that all of them are timed under the same load
#
# Start-up is the median wall time of RUNS (default 50) runs of `nodekeeper version`, each
# measured around one fork and exec from this shell, so it includes the same small shell
# overhead for every binary. Runs of the binaries interleave, so load changes hit all alike.
# Wall time on a loaded machine mostly measures the scheduler; when perf is installed the CPU
# time (task-clock, mean of RUNS) is printed too, which load changes far less.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
runs=${RUNS:-50}
work=$(mktemp -d)
worktrees=()
cleanup() {
  for wt in "${worktrees[@]}"; do git worktree remove --force "$wt" >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap cleanup EXIT

build() { # build DIR OUT
  (cd "$1" && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$2" ./cmd/nodekeeper)
  if [[ -d "$1/cmd/nodekeeper-controller" ]]; then
    (cd "$1" && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$2-controller" ./cmd/nodekeeper-controller)
  fi
}

names=() bins=()
for rev in "$@"; do
  commit=$(git rev-parse --short "$rev^{commit}")
  wt="$work/src-$commit"
  git worktree add --detach "$wt" "$commit" >/dev/null 2>&1
  worktrees+=("$wt")
  build "$wt" "$work/nodekeeper-$commit"
  names+=("$commit") bins+=("$work/nodekeeper-$commit")
done
build . "$work/nodekeeper-current"
names+=("current ($(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . || echo ', dirty'))")
bins+=("$work/nodekeeper-current")

# One warm-up run each (page cache), then RUNS interleaved timed runs.
for b in "${bins[@]}"; do "$b" version >/dev/null; done
for ((r = 0; r < runs; r++)); do
  for i in "${!bins[@]}"; do
    t0=$(date +%s%N)
    "${bins[$i]}" version >/dev/null
    t1=$(date +%s%N)
    echo "$(((t1 - t0) / 1000))" >>"$work/times-$i"
  done
done

echo "binary benchmark: CGO_ENABLED=0 go build -trimpath -ldflags '-s -w'; $runs runs of 'nodekeeper version'; $(go env GOOS)/$(go env GOARCH), $(go env GOVERSION); load average $(cut -d' ' -f1-3 /proc/loadavg)"
for i in "${!bins[@]}"; do
  size=$(stat -c %s "${bins[$i]}")
  median=$(sort -n "$work/times-$i" | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
  cpu=""
  if command -v perf >/dev/null; then
    cpu=$(perf stat -x, -e task-clock -r "$runs" "${bins[$i]}" version 2>&1 >/dev/null | awk -F, '$3 == "task-clock" {printf "  CPU %6.1f ms", $1}')
  fi
  printf '  %-28s size %9d bytes (%5.1f MiB)  start-up median %6.1f ms%s\n' \
    "${names[$i]}" "$size" "$(echo "$size" | awk '{print $1/1048576}')" "$(echo "$median" | awk '{print $1/1000}')" "$cpu"
  if [[ -f "${bins[$i]}-controller" ]]; then
    size=$(stat -c %s "${bins[$i]}-controller")
    printf '  %-28s size %9d bytes (%5.1f MiB)  nodekeeper-controller (the image'"'"'s binary)\n' \
      "" "$size" "$(echo "$size" | awk '{print $1/1048576}')"
  else
    echo "  ${names[$i]}: no cmd/nodekeeper-controller; the image ran the binary above"
  fi
done
