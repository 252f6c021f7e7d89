#!/usr/bin/env bash
# Runs every test. The packages whose behaviour depends on concurrency against the real API
# server (the controller, the deleter, gc, the kubelet simulator) run with the race detector;
# the rest run without it to stay well inside CI's time budget on two cores.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

race_pkgs=()
for p in ./internal/lease ./internal/deleter ./internal/controller ./internal/gc ./internal/kubeletsim; do
  [[ -d $p ]] && race_pkgs+=("$p/...")
done
mapfile -t all_pkgs < <(go list ./...)
plain_pkgs=()
for p in "${all_pkgs[@]}"; do
  skip=
  for r in "${race_pkgs[@]}"; do
    r=${r#./}; r=${r%/...}
    [[ $p == github.com/nodekeeper/nodekeeper/$r || $p == github.com/nodekeeper/nodekeeper/$r/* ]] && skip=1
  done
  [[ -z $skip ]] && plain_pkgs+=("$p")
done

status=0
echo "== go test (${#plain_pkgs[@]} packages)"
go test -count=1 -timeout 40m "${plain_pkgs[@]}" || status=1
if ((${#race_pkgs[@]})); then
  echo "== go test -race ${race_pkgs[*]}"
  go test -race -count=1 -timeout 40m "${race_pkgs[@]}" || status=1
fi
exit $status
