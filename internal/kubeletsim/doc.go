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
// nodeStatusReportFrequency 5m). BenchmarkRenewalCost measures what that costs each process per
// kubelet and second; at 500 kubelets on a heavily loaded 2-core machine (upper bounds: CPU per
// operation only drops on a quiet one):
//
//	kube-apiserver           306 µs  3.1 ms per lease PUT: managed fields, admission, priority and
//	                                 fairness, x509 verification of the client certificate, etcd
//	                                 client, HTTP/2 and TLS
//	simulator                104 µs  1.1 ms per renewal: the request through client-go, HTTP/2 and
//	                                 TLS, the connection's read loop; timers are 2 %
//	etcd                      79 µs
//	kube-controller-manager   35 µs  the node lifecycle controller and garbage collector watching
//	                                 every lease
//
// That is 0.52 ms of CPU per kubelet-second: 2 cores carry about 3,700 kubelets at these costs,
// and 5,000 need at most 0.39 ms, a quarter less. The limit is the API server's cost per lease
// write (60 % of the total), which the simulator cannot lower without ceasing to look like a
// kubelet: one connection per identity is what client certificates require, and a renewal is
// already a single PUT. The simulator's own share is a fifth; per kubelet it keeps 11
// goroutines and about 320 KiB (its Node in the informer cache, the TLS and HTTP/2 connection,
// a core and a coordination client, the request trace). The control plane's flags are not
// what stops it: kubelets' lease writes go to the node-high priority level (98 seats, flow
// schema system-node-high) with a handful in flight, and etcd runs without fsync. The controller manager's
// client limit (20 QPS) only slows taking new nodes in, about 10 s per 100 nodes.
//
//	NODEKEEPER_COST_KUBELETS=500 go test ./internal/kubeletsim -run '^$' -bench RenewalCost -benchtime 1x
//	NODEKEEPER_CAPACITY_START=5000 go test ./internal/kubeletsim -run '^$' -bench Capacity -benchtime 1x -timeout 90m
package kubeletsim
