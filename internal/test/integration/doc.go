// Package integration reproduces the seed documents' node lease stories end to end with real
// components: etcd, kube-apiserver (Node authorizer, NodeRestriction, audit log) and
// kube-controller-manager (garbage collector, node lifecycle controller) from internal/test/testenv,
// and kubelets from internal/kubeletsim. Each test states one claim of the design brief and
// checks it from the API, from the kubelet's own request counters and from the audit log.
//
// It contains tests only; run them with `go test ./internal/test/integration/`.
package integration
