#!/usr/bin/env bash
# Prints the version of this checkout, the one value the binary (internal/buildinfo), the release
# archives, the krew manifest, the container image tag and the Helm chart are stamped with.
#
#   at a release tag            v0.4.0
#   after it                    v0.4.0-3-gabc1234def56
#   before the first tag        v0.0.0-0-gabc1234def56
#   with uncommitted changes    ...-dirty
#
# Every form is a semantic version with a leading "v", which `helm package --version` (without
# the v), krew's spec.version and Go's module versions all accept. Only tags that look like
# versions (v1.2.3) count, so other tags never leak into a release name.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if ! git rev-parse --git-dir >/dev/null 2>&1; then
  echo v0.0.0-dev   # a source tree without git history
  exit 0
fi
if v=$(git describe --tags --match 'v[0-9]*.[0-9]*.[0-9]*' --abbrev=12 --dirty 2>/dev/null); then
  echo "$v"
  exit 0
fi
v="v0.0.0-0-g$(git rev-parse --short=12 HEAD)"
if ! git diff --quiet HEAD 2>/dev/null; then
  v+="-dirty"
fi
echo "$v"
