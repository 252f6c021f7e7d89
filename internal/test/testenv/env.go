// Package testenv is the test harness around internal/controlplane: the one TestMain of every
// package that needs a real control plane (Main, RunMain), the shared fixtures that fail a test
// on error (CreateNode, CreateNodeLease, SeedLeakedLeases, WaitNodeLease, ...), the audit
// policies tests use and the audit-log reader (AuditEvents, ReadAudit).
//
// It imports testing and is imported only by tests: the product's import graph stops at
// internal/controlplane, which the sandbox uses (the deps test in internal/test/deploytest checks it).
package testenv

import (
	"context"

	"k8s.io/client-go/kubernetes"

	"github.com/nodekeeper/nodekeeper/internal/controlplane"
)

// Options selects what runs beside etcd and kube-apiserver; see controlplane.Options.
type Options = controlplane.Options

// Env is one running control plane with the tests' fixtures as methods.
type Env struct {
	*controlplane.Env
}

// Start brings up a control plane in a new temporary directory and waits until it serves.
func Start(ctx context.Context, opts Options) (*Env, error) {
	e, err := controlplane.Start(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &Env{Env: e}, nil
}

// AdminClient returns a clientset with the admin identity. It lives here, not on
// controlplane.Env, so that the CLI, which runs the control plane in `sandbox`, links no whole
// clientset (see internal/kube's Interface).
func (e *Env) AdminClient() kubernetes.Interface {
	return kubernetes.NewForConfigOrDie(e.AdminConfig())
}
