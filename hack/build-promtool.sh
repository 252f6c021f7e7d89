#!/usr/bin/env bash
# Builds promtool from the github.com/prometheus/prometheus Go module pinned in
# tools/promtool/go.mod (through its `tool` directive) into bin/promtool (git-ignored), the way
# hack/build-helm.sh builds Helm: never downloaded as a binary, the module proxy is the only
# source. internal/test/deploytest runs `promtool test rules` with it, so the alerting rules are
# evaluated over series, not only parsed. Skipped when bin/promtool was built from the same
# tools/promtool/go.mod and go.sum, so a warm run costs a checksum; a fresh clone copies it from
# the tool cache (hack/lib/gobuild.sh) when this machine built it before.
#
# The tests run only `promtool test rules`, which needs none of Prometheus's service discovery:
# the remove_all_sd build tag (Prometheus's own, for slim builds) leaves out its discovery
# plugins (Azure, GCE, OpenStack, Consul, ... and their SDKs): 1,117 packages to compile cold
# instead of 1,528. The rules are still evaluated by the real promtool: the same command, rule
# engine and unit-test format as the release binary's.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$root/hack/lib/gobuild.sh"
mod="$root/tools/promtool"
out="$root/bin"

version=$(module_version "$mod" github.com/prometheus/prometheus)
stamp=$(build_stamp "$mod")

if [[ -x "$out/promtool" ]] && stamp_matches "$out/.promtool.stamp" "$stamp"; then
  echo "promtool (prometheus module $version) is up to date in bin/promtool"
  exit 0
fi

if restore_tool promtool "$stamp" "$out" promtool; then
  echo "$stamp" > "$out/.promtool.stamp"
  echo "promtool (prometheus module $version) copied into bin/promtool from the tool cache ($(tool_cache)/promtool/$stamp)"
  exit 0
fi

echo "building promtool (prometheus module $version) into bin/promtool (a cold build takes a few minutes)"
begin_build "$out/.promtool.stamp"
cd "$mod"
go_build_into "$out/promtool" -tags remove_all_sd -ldflags "-s -w" github.com/prometheus/prometheus/cmd/promtool
end_build "$out/.promtool.stamp" "$stamp" "promtool"
save_tool promtool "$stamp" "$out" promtool
