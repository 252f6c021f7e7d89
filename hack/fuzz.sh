#!/usr/bin/env bash
# Runs every fuzz target of the module for FUZZTIME each (default 1m): `make fuzz`.
# Targets are discovered, not listed: `go test -list '^Fuzz' ./...` names the Fuzz* functions of
# every package, so a new target anywhere is picked up without editing this file.
# FUZZ_PACKAGES limits the packages (default ./...); a failure stops the run with the failing input
# saved under the package's testdata/fuzz/ (commit it as a regression seed once fixed).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-1m}
packages=${FUZZ_PACKAGES:-./...}

# `go test -list` prints each package's matching names, then "ok <import path> <time>".
mapfile -t listing < <($GO test -list '^Fuzz' $packages)
targets=()
pending=()
for line in "${listing[@]}"; do
  case $line in
    Fuzz*) pending+=("$line") ;;
    ok*|\?*)
      pkg=$(awk '{print $2}' <<<"$line")
      for fn in "${pending[@]}"; do targets+=("$pkg $fn"); done
      pending=()
      ;;
  esac
done
if [[ ${#targets[@]} -eq 0 ]]; then
  echo "fuzz: no Fuzz* functions found in $packages" >&2
  exit 1
fi
echo "fuzz: ${#targets[@]} targets, $FUZZTIME each"
for t in "${targets[@]}"; do
  read -r pkg fn <<<"$t"
  echo "== $pkg $fn"
  # -run '^$': only the fuzz target (a package's control-plane tests do not run; see testenv.Main).
  $GO test -run '^$' -fuzz "^${fn}\$" -fuzztime "$FUZZTIME" "$pkg"
done
echo "fuzz: all ${#targets[@]} targets ran for $FUZZTIME without a failure"
