#!/usr/bin/env bash
# Builds etcd, kube-apiserver, kube-controller-manager (and a fallback kubectl) from the tools/controlplane Go module
# into bin/controlplane/ (git-ignored). The build is skipped when the binaries there were built
# from the same tools/controlplane/go.mod and go.sum, so a warm run costs a checksum; a fresh clone
# copies them from the tool cache (hack/lib/gobuild.sh) when this machine built them before.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$root/hack/lib/gobuild.sh"
mod="$root/tools/controlplane"
out="$root/bin/controlplane"

k8s_version=$(module_version "$mod" k8s.io/kubernetes)
stamp=$(build_stamp "$mod" "$mod"/*/main.go "$root/hack/controlplane-ldflags.sh")

if stamp_matches "$out/.stamp" "$stamp" &&
   [[ -x "$out/etcd" && -x "$out/kube-apiserver" && -x "$out/kube-controller-manager" && -x "$out/kubectl" ]]; then
  echo "control plane $k8s_version is up to date in bin/controlplane"
  exit 0
fi

cp_files=(etcd kube-apiserver kube-controller-manager kubectl VERSION)
if restore_tool controlplane "$stamp" "$out" "${cp_files[@]}"; then
  echo "$stamp" > "$out/.stamp"
  echo "control plane $k8s_version copied into bin/controlplane from the tool cache ($(tool_cache)/controlplane/$stamp)"
  exit 0
fi

ldflags=$(bash "$root/hack/controlplane-ldflags.sh")

echo "building control plane $k8s_version into bin/controlplane (a cold build takes several minutes)"
begin_build "$out/.stamp"
cd "$mod"
for cmd in etcd kube-apiserver kube-controller-manager kubectl; do
  echo "  go build $cmd"
  go_build_into "$out/$cmd" -ldflags "$ldflags" "./$cmd"
done
echo "$k8s_version" > "$out/VERSION"
end_build "$out/.stamp" "$stamp" "control plane"
save_tool controlplane "$stamp" "$out" "${cp_files[@]}"
