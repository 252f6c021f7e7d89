#!/usr/bin/env bash
# Installs the machine packages the test suite needs and a fresh machine may lack: jq (the audit
# and gc baselines), iproute2 (network namespaces for the node proxy tests) and chromium (the
# audit HTML screenshot test). kubectl, when the machine has none, is built with the control plane.
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
if command -v kubectl >/dev/null; then
  echo "machine dependencies present: jq ip chromium openssl kubectl"
else
  # Debian does not package kubectl; `make controlplane` builds one from its Go module into
  # bin/controlplane, which the Makefile puts at the end of PATH.
  echo "machine dependencies present: jq ip chromium openssl (kubectl comes from bin/controlplane)"
fi
