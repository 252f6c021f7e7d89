#!/usr/bin/env bash
# Builds the release tools pinned in tools/release/go.mod (its `tool` directives) into bin/
# (git-ignored): GoReleaser, and cyclonedx-gomod for the SBOMs. Both come from the Go module proxy
# like every other dependency; no binary is downloaded. The build is skipped when bin/ holds tools
# built from the same tools/release/go.mod and go.sum, so a warm run costs a checksum. A cold build
# of GoReleaser compiles a few thousand packages: several minutes on two cores.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mod="$root/tools/release"
out="$root/bin"
stamp=$(cat "$mod/go.mod" "$mod/go.sum" "${BASH_SOURCE[0]}" | sha256sum | cut -c1-16)

declare -A tools=(
  [goreleaser]=github.com/goreleaser/goreleaser/v2
  [cyclonedx-gomod]=github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod
)

up_to_date=true
for name in "${!tools[@]}"; do
  [[ -x "$out/$name" ]] || up_to_date=false
done
if $up_to_date && [[ -f "$out/.release-tools.stamp" && "$(cat "$out/.release-tools.stamp")" == "$stamp" ]]; then
  echo "release tools are up to date in bin/"
  exit 0
fi

mkdir -p "$out"
rm -f "$out/.release-tools.stamp"
cd "$mod"
for name in "${!tools[@]}"; do
  pkg=${tools[$name]}
  # The tool's package path resolves to the version the go.mod pins.
  version=$(go list -m -f '{{.Version}}' "$(go list -f '{{.Module.Path}}' "$pkg")")
  echo "building $name $version into bin/$name"
  start=$(date +%s)
  # Plain flags on purpose: these tools never ship, and -trimpath or another CGO_ENABLED would
  # miss the build cache a plain `go build` of the same module left (a cold GoReleaser is long).
  go build -o "$out/$name.tmp" "$pkg"
  mv "$out/$name.tmp" "$out/$name"
  echo "$name built in $(( $(date +%s) - start ))s"
done
echo "$stamp" > "$out/.release-tools.stamp"
