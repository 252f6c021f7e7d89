// Package kubeletsim runs many simulated kubelets in one process against a real API server.
//
// A simulated kubelet does what a kubelet does to the control plane and nothing else: it
// registers a Node that looks like a real EKS node (labels, capacity, conditions, addresses,
// node info, 50 images: 10–20 KB), renews its node lease in kube-node-lease, and patches its
// node status on the kubelet's cadence so that the node lifecycle controller keeps it Ready.
// Each kubelet authenticates as system:node:<name>, so the Node authorizer, NodeRestriction and
// the audit log see it exactly as they see a real one.
//
// Two generations are simulated, because they behave differently when their Node is deleted:
//
//   - Modern (1.29+) runs the upstream lease controller from k8s.io/component-helpers with the
//     kubelet's owner-reference function. After its Node is deleted it GETs its lease and Node
//     (404, 404) every renew interval and writes nothing — a zombie.
//   - Legacy (before 1.29, kubernetes issue 109777) re-creates its lease without an
//     ownerReference through a PUT (create-on-update) and renews it; when the machine dies
//     that lease is leaked for good.
//
// Every kubelet counts its requests on the wire (Stats) so tests can assert on them as one
// would on audit events.
//
// # Ceiling
//
// How many kubelets one machine carries beside its control plane is a question of CPU, and
// mostly not the simulator's. In steady state a kubelet sends one request every 10 s: a PUT of
// the lease it last wrote (the upstream lease controller keeps it and sends no GET), in
// protobuf, on its own HTTP/2 connection under its own client certificate. It computes its
// status every 10 s from its Node informer and patches it only on a change or every 5 minutes,
// as the kubelet does with node leases (KubeletConfiguration nodeStatusUpdateFrequency 10s,
// nodeStatusReportFrequency 5m). BenchmarkRenewalCost charges each process's CPU above its idle
// use to the renewals of a steady-state window. On a 2-core machine loaded by other work (load
// average 20–30; CPU per operation only drops on a quiet one), in µs per renewal:
//
//	                          500 kubelets   2,000 kubelets
//	kube-apiserver                   3,130            2,050   managed fields, admission, priority
//	                                                          and fairness, x509 verification of
//	                                                          the client certificate, etcd client,
//	                                                          HTTP/2 and TLS
//	simulator                        1,070              690   client-go, HTTP/2 and TLS, the
//	                                                          connection's read loop; timers 2 %
//	etcd                               810              225
//	kube-controller-manager            360              190   node lifecycle and garbage collector
//	                                                          watching every lease
//	total                            5,370            3,160
//	2-core ceiling at 1 per 10 s    ~3,700           ~6,200
//
// A renewal gets cheaper as the fleet grows (etcd batches, fixed costs spread), so the
// ceiling is where the fleet's total meets 2 cores: 5,000 kubelets need at most 3.9 ms of CPU per
// renewal in all, which the 2,000-kubelet figure meets with a quarter to spare. The limit is the
// API server's CPU per lease write, about two thirds of the total; the simulator cannot lower it
// without ceasing to look like kubelets: client certificates need one connection per identity,
// and a renewal is already a single PUT. The simulator's own share is a fifth; per kubelet it
// keeps 11 goroutines and about 330 KiB (its Node in the informer cache, the TLS and HTTP/2
// connection, a core and a coordination client, the request trace). The control plane's flags
// do not cap it: kubelets' lease writes go to the node-high priority level (98 seats, flow
// schema system-node-high) with a handful in flight, and etcd runs without fsync. The
// controller manager's client limit (20 QPS) only slows taking new nodes in. BenchmarkCapacity
// answers the question on a quiet machine, stepping from where it is told to:
//
//	NODEKEEPER_COST_KUBELETS=500 go test ./internal/kubeletsim -run '^$' -bench RenewalCost -benchtime 1x
//	NODEKEEPER_CAPACITY_START=5000 go test ./internal/kubeletsim -run '^$' -bench Capacity -benchtime 1x -timeout 90m
package kubeletsim
