#!/usr/bin/env bash
# Builds Helm from the helm.sh/helm/v3 Go module pinned in tools/helm/go.mod (through its `tool`
# directive) into bin/helm (git-ignored). Helm is never downloaded as a binary: the module proxy
# is the only source. The build is skipped when bin/helm already reports the pinned version and was
# built from the same tools/helm/go.mod and go.sum, so a warm run costs a checksum; a fresh clone
# copies it from the tool cache (hack/lib/gobuild.sh) when this machine built it before.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$root/hack/lib/gobuild.sh"
mod="$root/tools/helm"
out="$root/bin"

helm_version=$(module_version "$mod" helm.sh/helm/v3)
# Helm's own Makefile stamps the Kubernetes client version it was built with into lint and
# template (.Capabilities.KubeVersion); derive it from the k8s.io/client-go it links.
client_go=$(module_version "$mod" k8s.io/client-go)
k8s_minor=${client_go#v0.}; k8s_minor=${k8s_minor%%.*}
if [[ -z "$k8s_minor" ]]; then
  echo "build-helm: cannot find the k8s.io/client-go version in $mod/go.mod" >&2
  exit 1
fi
stamp=$(build_stamp "$mod")

if [[ -x "$out/helm" ]] && stamp_matches "$out/.helm.stamp" "$stamp" &&
   [[ "$("$out/helm" version --template '{{.Version}}' 2>/dev/null)" == "$helm_version" ]]; then
  echo "helm $helm_version is up to date in bin/helm"
  exit 0
fi

if restore_tool helm "$stamp" "$out" helm; then
  echo "$stamp" > "$out/.helm.stamp"
  echo "helm $helm_version copied into bin/helm from the tool cache ($(tool_cache)/helm/$stamp)"
  exit 0
fi

echo "building helm $helm_version into bin/helm (a cold build takes a minute or two)"
begin_build "$out/.helm.stamp"
ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$helm_version"
ldflags+=" -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
  ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$k8s_minor"
done
cd "$mod"
# `go build` of the tool's package path resolves it from this module's go.mod (the `tool` line
# pins it); -mod=mod is not needed because go.sum is committed.
go_build_into "$out/helm" -ldflags "$ldflags" helm.sh/helm/v3/cmd/helm
end_build "$out/.helm.stamp" "$stamp" "helm $helm_version"
save_tool helm "$stamp" "$out" helm
