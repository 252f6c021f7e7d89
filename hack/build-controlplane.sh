#!/usr/bin/env bash
# Builds etcd, kube-apiserver, kube-controller-manager (and a fallback kubectl) from the tools/controlplane Go module
# into bin/controlplane/ (git-ignored). The build is skipped when the binaries there were built
# from the same tools/controlplane/go.mod and go.sum, so a warm run costs a checksum.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mod="$root/tools/controlplane"
out="$root/bin/controlplane"

k8s_version=$(awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v/ {print $2; exit}' "$mod/go.mod")
if [[ -z "$k8s_version" ]]; then
  echo "build-controlplane: cannot find the k8s.io/kubernetes version in $mod/go.mod" >&2
  exit 1
fi
stamp=$(cat "$mod/go.mod" "$mod/go.sum" "$mod"/*/main.go "${BASH_SOURCE[0]}" "$root/hack/controlplane-ldflags.sh" | sha256sum | cut -c1-16)

if [[ -f "$out/.stamp" && "$(cat "$out/.stamp")" == "$stamp" ]] &&
   [[ -x "$out/etcd" && -x "$out/kube-apiserver" && -x "$out/kube-controller-manager" && -x "$out/kubectl" ]]; then
  echo "control plane $k8s_version is up to date in bin/controlplane"
  exit 0
fi

ldflags=$(bash "$root/hack/controlplane-ldflags.sh")

echo "building control plane $k8s_version into bin/controlplane (a cold build takes several minutes)"
start=$(date +%s)
mkdir -p "$out"
rm -f "$out/.stamp"
cd "$mod"
for cmd in etcd kube-apiserver kube-controller-manager kubectl; do
  echo "  go build $cmd"
  # Build beside the target and rename into place, so a test starting meanwhile never runs a
  # half-written binary.
  CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out/.$cmd.new" "./$cmd"
  mv -f "$out/.$cmd.new" "$out/$cmd"
done
echo "$stamp" > "$out/.stamp"
echo "$k8s_version" > "$out/VERSION"
echo "control plane built in $(( $(date +%s) - start ))s"
