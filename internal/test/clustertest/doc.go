// Package clustertest holds the tests of `nodekeeper leases` that need a real control plane
// (etcd, kube-apiserver, kube-controller-manager with leader election, simulated kubelets) and the
// built binary run as a kubectl plugin. They live apart from package leasesview so that its pure
// golden-file tests run without starting a control plane.
package clustertest
