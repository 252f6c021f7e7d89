#!/usr/bin/env bash
# Runs the benchmarks the issues name, one package at a time (each starts its own real control
# plane on 127.0.0.1, and on two cores they must not compete), and prints their figures.
# Select some with BENCH="gc controller" (names below); all by default. Output is also kept in
# bin/bench/<name>.txt.
#
#   testenv    warm start time of the local control plane (with and without kube-controller-manager)
#   capacity   kubeletsim: largest number of simulated kubelets that keeps every node Ready
#   gc         nodekeeper gc vs the raw parallel DELETE rate vs the seed's kubectl|jq|xargs pipeline
#   gc-process nodekeeper gc --yes (default flags) vs a process that lists the leases and deletes them with
#              64 protobuf DELETEs in flight, whole process against whole process, 20,000 leaked leases,
#              paired runs (issue 20: at least 0.90 of raw)
#   controller controller convergence on 20,000 leaked leases, RSS metadata vs full Nodes, idle LISTs
#   faults     controller under churn of 2,000 simulated kubelets with two API server restarts and two
#              leader failovers; the audit log and etcd's history prove every DELETE hit a leaked
#              lease, and every leak was deleted within one pass of becoming leaked (or of the recovery)
#   leases     nodekeeper leases -A vs kubectl get lease -A over 100,000 leases (table, -o name, -o json: time, peak RSS, speed-up)
#   audit      audit analysis throughput vs jq on a >= 1 GB log, peak RSS at 1 GB and 4 GB
#   audit-worst     audit vs jq on 1 M events that are all kubelet lease or Node requests (~1.3 GB)
#   audit-leaky     audit -o json (the real binary, whole process) vs jq on 300,000 events that are all kubelet
#              lease or Node requests, nearly every lease leaking (a 10 MB report), paired runs (issue 20: >= 8x)
#   audit-scan      audit (text, then -o json; the real binary, whole process) vs grep -c -F of a string every
#              event holds, on the leaky log's 300,000 events: median times, median of the paired ratios
#              audit/scan, peak RSS (issue 32: at most 2x the scan)
#   audit-distinct  audit peak RSS on 10 million distinct leases and users (every key new)
#   doctor     doctor on 2,000 simulated nodes through the real node proxy; then the pod
#              networking section on 2,000 nodes, 20,000 pods (2,000 stuck), 50,000 events,
#              next to the doctor without that section
#   doctor-cni doctor with the VPC CNI metrics of 2,000 aws-node pods (read through the real pod
#              proxy) on the pod networking benchmark's cluster, next to the doctor before them
#              (wall time, requests by verb and path; issue 21: under 30 s)
#   doctor-rss peak RSS of the built `nodekeeper doctor` (ru_maxrss) with one stuck pod and 300
#              FailedCreatePodSandBox events of 1 MB each, against the 256 MiB target
#   binary     size and median start-up (`nodekeeper version`) of the release-flags build of this tree
#              (hack/bench-binary.sh; give it revisions to compare, e.g. hack/bench-binary.sh 186e385)
#   aws        audit --cloudwatch against the in-memory CloudWatch (2 million events over 24 h)
#              vs the same events from a local file, events per second through the same analysis
#   explain    nodekeeper explain NODE on 2,000 Nodes with their leases and 4,000 pods: API requests and
#              wall time of one node's story (issue 29: at most 20 requests, under 2 s)
#   ec2loop    the controller's EC2 loop (--aws): one scan of 5,000 instances against awsfake, its
#              DescribeInstances calls (paginated, no per-instance call), Node LISTs and memory
#   ultra      issue 32's one table at 100,000 Nodes and 10,000 leaked leases (internal/test/ultra): the controller
#              (first and last deletion, peak RSS, requests, idle LISTs and CPU), leases -A against a bare protobuf
#              LIST and kubectl, gc --dry-run/--yes against 64 raw DELETEs, doctor at 10,000 nodes, explain at
#              100,000 against 2,000, the kubelet simulator's ceiling, audit against grep -c -F, binary sizes;
#              NODEKEEPER_ULTRA_NODES=5000 scales it down (docs/scale.md)
#   controller-checks  controller --checks at 2,000 nodes, 20,000 pods (300 stuck), 2,000 aws-node metrics
#              endpoints: API requests per interval, CPU seconds per run and idle, the share of one core
#              over an hour at the 5m default, peak RSS against today's controller (a first run, then
#              2 measured at a 180 s interval; NODEKEEPER_CHECKS_BENCH_NODES=200 proves it at a tenth
#              of the size)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$PATH:$PWD/bin/controlplane"
mkdir -p bin/bench

declare -A cmd=(
  [testenv]="./internal/test/testenv -bench Start -benchtime 3x -timeout 10m"
  [capacity]="./internal/kubeletsim -bench Capacity -timeout 90m"
  [gc]="./internal/gc -bench GCvsRaw -timeout 60m"
  [gc-process]="./internal/gc -bench GCProcessVsRaw -timeout 60m"
  [controller]="./internal/controller -bench Converge|Memory|IdleListRequests -timeout 90m"
  [faults]="./internal/controller -bench ControllerFaults -timeout 30m"
  [leases]="./internal/test/clustertest -bench LeasesVersusKubectl -benchtime 3x -timeout 60m"
  [audit]="./internal/audit -bench BenchmarkAuditVsJQ\$ -timeout 60m"
  [audit-rss]="./internal/audit -bench BenchmarkAuditPeakRSS\$ -timeout 60m"
  [audit-worst]="./internal/audit -bench BenchmarkAuditWorstCaseVsJQ\$ -timeout 60m"
  [audit-leaky]="./internal/audit -bench BenchmarkAuditLeakyJSONVsJQ\$ -timeout 60m"
  [audit-scan]="./internal/audit -bench BenchmarkAuditVsScan\$ -timeout 60m"
  [audit-distinct]="./internal/audit -bench BenchmarkAuditDistinctKeys\$ -timeout 60m"
  [doctor]="./internal/doctor -bench Doctor2000|DoctorPodNetworking -timeout 60m"
  [doctor-cni]="./internal/doctor -bench DoctorPodNetworking/with- -timeout 60m"
  [doctor-rss]="./internal/doctor -bench DoctorEventMemory -timeout 30m"
  [aws]="./internal/aws/cwaudit -bench CloudWatchVsFile -timeout 30m"
  [explain]="./internal/explain -bench Explain2000 -benchtime 5x -timeout 30m"
  [ec2loop]="./internal/controller/ec2loop -bench EC2Loop5000 -benchtime 20x -timeout 10m"
  [ultra]="./internal/test/ultra -bench Ultra -timeout 180m"
  [controller-checks]="./internal/controller/checks -bench ControllerChecks2000 -timeout 60m"
)
order=(binary testenv gc gc-process controller faults leases audit audit-rss audit-worst audit-leaky audit-scan audit-distinct doctor doctor-cni doctor-rss aws ec2loop controller-checks explain capacity ultra)
# The audit RSS benchmark measures at 1 GB and 4 GB unless told otherwise.
export NODEKEEPER_AUDIT_BENCH_RSS_SIZES=${NODEKEEPER_AUDIT_BENCH_RSS_SIZES:-1G,4G}
selected=(${BENCH:-${order[*]}})

for name in "${selected[@]}"; do
  if [[ $name == binary ]]; then
    echo "=== binary: hack/bench-binary.sh"
    bash hack/bench-binary.sh 2>&1 | tee "bin/bench/$name.txt"
    continue
  fi
  [[ -n ${cmd[$name]:-} ]] || { echo "unknown benchmark $name (choose from: ${order[*]})" >&2; exit 2; }
  echo "=== $name: go test -run '^\$' -benchtime 1x ${cmd[$name]}"
  # shellcheck disable=SC2086
  go test -run '^$' -benchtime 1x ${cmd[$name]} 2>&1 | tee "bin/bench/$name.txt"
done
