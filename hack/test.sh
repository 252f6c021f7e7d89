#!/usr/bin/env bash
# Runs every test, all of them with the race detector: the controller, the deleter, gc and the
# kubelet simulator are concurrent by nature, and on two cores the whole suite still takes only
# minutes. Every package that talks to Kubernetes starts its own real control plane on 127.0.0.1.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$PATH:$PWD/bin/controlplane"
go test -race -count=1 -timeout 45m ./...
