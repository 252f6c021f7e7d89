#!/usr/bin/env bash
# Prints the -ldflags of the control-plane binaries: stripped, and stamped with the version of
# k8s.io/kubernetes that tools/controlplane/go.mod pins, as the Kubernetes release builds stamp
# theirs (kube-apiserver --version, /version). hack/build-controlplane.sh builds a checkout's
# bin/controlplane with them, and the release's control-plane archives get the same (the
# Makefile passes them to GoReleaser as CONTROLPLANE_LDFLAGS).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$root/hack/lib/gobuild.sh"
k8s_version=$(module_version "$root/tools/controlplane" k8s.io/kubernetes)
major=${k8s_version#v}; major=${major%%.*}
minor=${k8s_version#v*.}; minor=${minor%%.*}
pkg=k8s.io/component-base/version
ldflags="-s -w -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
ldflags+=" -X k8s.io/client-go/pkg/version.gitVersion=$k8s_version -X k8s.io/client-go/pkg/version.gitMajor=$major -X k8s.io/client-go/pkg/version.gitMinor=$minor"
# A module build knows no commit: left unset, gitCommit keeps its placeholder "$Format:%H$" and
# every request of the controller manager carries the user agent "kubernetes/$Format". Set empty,
# client-go says "kubernetes/unknown" and /version an empty gitCommit, which is the truth.
ldflags+=" -X k8s.io/component-base/version.gitCommit= -X k8s.io/client-go/pkg/version.gitCommit="
echo "$ldflags"
