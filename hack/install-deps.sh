#!/usr/bin/env bash
# Installs the machine packages the test suite needs and a fresh machine may lack: kubectl (the
# seed pipeline benchmark and plugin tests), jq (the audit and gc baselines), iproute2 (network
# namespaces for the node proxy tests) and chromium (the audit HTML screenshot test).
# Only Debian packages, by name; nothing is downloaded from anywhere else.
set -euo pipefail

need=()
command -v jq >/dev/null || need+=(jq)
command -v ip >/dev/null || need+=(iproute2)
command -v chromium >/dev/null || need+=(chromium)
command -v openssl >/dev/null || need+=(openssl)
if ((${#need[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "install-deps: missing ${need[*]}; run as root or install them with apt-get" >&2
    exit 1
  fi
  echo "installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
if ! command -v kubectl >/dev/null; then
  # kubectl is not packaged by Debian; build it from its Go module like the control plane.
  echo "install-deps: kubectl not found; building it from k8s.io/kubectl is not set up — install kubectl" >&2
  exit 1
fi
echo "machine dependencies present: jq ip chromium openssl kubectl"
