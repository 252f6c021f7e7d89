#!/usr/bin/env bash
# The main job. With a cluster that answers (the current kubeconfig context, or $KUBECONFIG):
# explain every lease and show what `gc` would delete, without deleting anything. Without one:
# start the built-in sandbox (a real local control plane with simulated EKS kubelets, some of them
# leaking leases), run the same against it, and keep it up until Ctrl-C so you can explore.
#
# Only the sandbox path needs etcd and kube-apiserver, so only it builds them
# (hack/build-controlplane.sh, minutes cold, a checksum warm): `make run` depends on `build` alone
# and costs seconds against a cluster that answers.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
nk=bin/nodekeeper

report() {
  echo "== nodekeeper leases -A $*"
  "$nk" leases -A "$@"
  echo
  echo "== nodekeeper gc --dry-run $*"
  "$nk" gc --dry-run "$@" || true
}

# A cluster answers when its API server serves /version to us. kubectl asks it when there is one;
# without kubectl, listing the leases with nodekeeper itself is the probe (it needs the same
# credentials as the report).
cluster_answers() {
  if command -v kubectl >/dev/null 2>&1; then
    kubectl version --request-timeout=5s >/dev/null 2>&1
  else
    "$nk" leases -n kube-node-lease --request-timeout=5s >/dev/null 2>&1
  fi
}

if cluster_answers; then
  echo "cluster found: $(kubectl config current-context 2>/dev/null || echo "${KUBECONFIG:-the current kubeconfig}")"
  report
  exit 0
fi

echo "no cluster answers the current kubeconfig: starting the nodekeeper sandbox"
bash hack/build-controlplane.sh
kubeconfig=bin/sandbox.kubeconfig
rm -f "$kubeconfig"
"$nk" sandbox --write-kubeconfig "$kubeconfig" &
sandbox=$!
trap 'kill -INT $sandbox 2>/dev/null; wait $sandbox 2>/dev/null' EXIT INT TERM
for _ in $(seq 1 300); do
  [[ -s $kubeconfig ]] && break
  kill -0 $sandbox 2>/dev/null || { echo "the sandbox exited early" >&2; exit 1; }
  sleep 1
done
[[ -s $kubeconfig ]] || { echo "the sandbox did not come up in 5 minutes" >&2; exit 1; }
report --kubeconfig "$kubeconfig"
echo
echo "The sandbox keeps running: try  $nk leases -A --watch --kubeconfig $kubeconfig  or  kubectl --kubeconfig $kubeconfig get nodes"
echo "Press Ctrl-C to stop it."
wait $sandbox
