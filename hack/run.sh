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
# KEEP_AUDIT_LOG=FILE (make run KEEP_AUDIT_LOG=audit.log) keeps the sandbox's audit log when it
# stops; without it the log goes with everything else the sandbox made.
keep=()
[[ -n ${KEEP_AUDIT_LOG:-} ]] && keep=(--keep-audit-log "$KEEP_AUDIT_LOG")
"$nk" sandbox --write-kubeconfig "$kubeconfig" "${keep[@]}" &
sandbox=$!
# Ctrl-C signals the whole foreground process group: the sandbox stops by itself (it takes
# SIGINT, also when started with & where bash would have it ignored) and exits 130. Waiting for
# it and exiting 0 ends a run the user chose to end, not a failure make should report; a second
# signal from here would make the sandbox kill itself without cleaning up. SIGTERM, sent to this
# script alone, is passed on.
stopped() {
  trap - INT TERM
  [[ $1 == TERM ]] && kill -TERM $sandbox 2>/dev/null
  wait $sandbox 2>/dev/null || true
  exit 0
}
trap 'stopped INT' INT
trap 'stopped TERM' TERM
trap 'kill -TERM $sandbox 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do
  [[ -s $kubeconfig ]] && break
  kill -0 $sandbox 2>/dev/null || { echo "the sandbox exited early" >&2; exit 1; }
  sleep 1
done
[[ -s $kubeconfig ]] || { echo "the sandbox did not come up in 5 minutes" >&2; exit 1; }
report --kubeconfig "$kubeconfig"
echo
echo "The sandbox keeps running (its own lines above say how to stop it): try"
echo "  $nk leases -A --watch --kubeconfig $kubeconfig"
echo "  $nk doctor --kubeconfig $kubeconfig"
echo "  kubectl --kubeconfig $kubeconfig get nodes"
wait $sandbox || true
