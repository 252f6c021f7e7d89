#!/usr/bin/env bash
# Builds Helm from the helm.sh/helm/v3 Go module pinned in tools/helm/go.mod (through its `tool`
# directive) into bin/helm (git-ignored). Helm is never downloaded as a binary: the module proxy
# is the only source. The build is skipped when bin/helm already reports the pinned version and was
# built from the same tools/helm/go.mod and go.sum, so a warm run costs a checksum.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mod="$root/tools/helm"
out="$root/bin"

helm_version=$(awk '$1 == "helm.sh/helm/v3" && $2 ~ /^v/ {print $2; exit}' "$mod/go.mod")
if [[ -z "$helm_version" ]]; then
  echo "build-helm: cannot find the helm.sh/helm/v3 version in $mod/go.mod" >&2
  exit 1
fi
# Helm's own Makefile stamps the Kubernetes client version it was built with into lint and
# template (.Capabilities.KubeVersion); derive it from the k8s.io/client-go it links.
client_go=$(awk '$1 == "k8s.io/client-go" && $2 ~ /^v/ {print $2; exit}' "$mod/go.mod")
k8s_minor=${client_go#v0.}; k8s_minor=${k8s_minor%%.*}
if [[ -z "$client_go" || -z "$k8s_minor" ]]; then
  echo "build-helm: cannot find the k8s.io/client-go version in $mod/go.mod" >&2
  exit 1
fi
stamp=$(cat "$mod/go.mod" "$mod/go.sum" "${BASH_SOURCE[0]}" | sha256sum | cut -c1-16)

if [[ -x "$out/helm" && -f "$out/.helm.stamp" && "$(cat "$out/.helm.stamp")" == "$stamp" ]] &&
   [[ "$("$out/helm" version --template '{{.Version}}' 2>/dev/null)" == "$helm_version" ]]; then
  echo "helm $helm_version is up to date in bin/helm"
  exit 0
fi

echo "building helm $helm_version into bin/helm (a cold build takes a minute or two)"
start=$(date +%s)
mkdir -p "$out"
rm -f "$out/.helm.stamp"
ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$helm_version"
ldflags+=" -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
  ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$k8s_minor"
done
cd "$mod"
# `go build` of the tool's package path resolves it from this module's go.mod (the `tool` line
# pins it); -mod=mod is not needed because go.sum is committed.
CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out/helm.tmp" helm.sh/helm/v3/cmd/helm
mv "$out/helm.tmp" "$out/helm"
echo "$stamp" > "$out/.helm.stamp"
echo "helm $helm_version built in $(( $(date +%s) - start ))s"
