#!/usr/bin/env bash
# Installs the machine packages the test suite needs and a fresh machine may lack: jq (the audit
# and gc baselines), iproute2 (network namespaces for the node proxy tests) and chromium (the
# audit HTML screenshot test). kubectl, when the machine has none, is built with the control plane.
# Debian packages, by name; and moto's AWS server (moto_server, Python), which the end-to-end AWS
# tests run the binary against: pip installs the pinned moto[server] when moto_server is missing,
# and this script fails, saying what to install, when it cannot be had. It never skips quietly.
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

# The moto release the AWS tests were written against (internal/test/motoserver.Version).
moto_pin='moto[server]==5.2.1'
if ! command -v moto_server >/dev/null; then
  echo "installing $moto_pin (moto_server, for the end-to-end AWS tests)"
  if ! python3 -m pip install --quiet "$moto_pin"; then
    cat >&2 <<EOF
install-deps: moto_server is missing and pip could not install it.
  The end-to-end AWS tests (internal/test/e2e, internal/test/motoserver) run against it.
  Install it with:  python3 -m pip install '$moto_pin'
  (or put a moto_server on PATH, or set MOTO_SERVER to its path), then run make again.
EOF
    exit 1
  fi
  hash -r
  if ! command -v moto_server >/dev/null; then
    echo "install-deps: pip installed $moto_pin but moto_server is not on PATH; add pip's script directory to PATH" >&2
    exit 1
  fi
fi
moto_version=$(python3 -c 'import moto; print(moto.__version__)' 2>/dev/null || echo unknown)
if [[ $moto_version != 5.2.1 ]]; then
  echo "install-deps: note: moto $moto_version found; the AWS tests were written against $moto_pin" >&2
fi

if command -v kubectl >/dev/null; then
  echo "machine dependencies present: jq ip chromium openssl moto_server kubectl"
else
  # Debian does not package kubectl; `make controlplane` builds one from its Go module into
  # bin/controlplane, which the Makefile puts at the end of PATH.
  echo "machine dependencies present: jq ip chromium openssl moto_server (kubectl comes from bin/controlplane)"
fi
