#!/usr/bin/env bash
# Builds promtool from the github.com/prometheus/prometheus Go module pinned in
# tools/promtool/go.mod (through its `tool` directive) into bin/promtool (git-ignored), the way
# hack/build-helm.sh builds Helm: never downloaded as a binary, the module proxy is the only
# source. internal/deploytest runs `promtool test rules` with it, so the alerting rules are
# evaluated over series, not only parsed. Skipped when bin/promtool was built from the same
# tools/promtool/go.mod and go.sum, so a warm run costs a checksum.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mod="$root/tools/promtool"
out="$root/bin"

version=$(awk '$1 == "github.com/prometheus/prometheus" && $2 ~ /^v/ {print $2; exit}' "$mod/go.mod")
if [[ -z "$version" ]]; then
  echo "build-promtool: cannot find the github.com/prometheus/prometheus version in $mod/go.mod" >&2
  exit 1
fi
stamp=$(cat "$mod/go.mod" "$mod/go.sum" "${BASH_SOURCE[0]}" | sha256sum | cut -c1-16)

if [[ -x "$out/promtool" && -f "$out/.promtool.stamp" && "$(cat "$out/.promtool.stamp")" == "$stamp" ]]; then
  echo "promtool (prometheus module $version) is up to date in bin/promtool"
  exit 0
fi

echo "building promtool (prometheus module $version) into bin/promtool (a cold build takes a few minutes)"
start=$(date +%s)
mkdir -p "$out"
rm -f "$out/.promtool.stamp"
cd "$mod"
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out/promtool.tmp" github.com/prometheus/prometheus/cmd/promtool
mv "$out/promtool.tmp" "$out/promtool"
echo "$stamp" > "$out/.promtool.stamp"
echo "promtool built in $(( $(date +%s) - start ))s"
