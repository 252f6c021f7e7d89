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
package kubeletsim
