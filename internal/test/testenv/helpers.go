package testenv

import (
	"sync"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekeeper/nodekeeper/internal/kubeletsim"
)

// NewFleet returns a fleet of simulated kubelets that connect to this control plane as their
// nodes (NodeConfig); every kubelet it started is stopped when the test ends.
func (e *Env) NewFleet(t testing.TB) *kubeletsim.Fleet {
	f := kubeletsim.NewFleet(e.NodeConfig)
	t.Cleanup(f.StopAll)
	return f
}

// OwnedByNode holds for a lease owned as a kubelet owns its lease: exactly one ownerReference,
// to the Node (apiVersion v1, kind Node) with this UID. A reference with the Node's UID and
// another kind or group is no Node owner: the garbage collector resolves an owner by all three.
// It is a condition for WaitNodeLease.
func OwnedByNode(uid types.UID) func(*coordinationv1.Lease) bool {
	return func(l *coordinationv1.Lease) bool {
		if l == nil || len(l.OwnerReferences) != 1 {
			return false
		}
		r := l.OwnerReferences[0]
		return r.APIVersion == "v1" && r.Kind == "Node" && r.UID == uid
	}
}

// Parallel runs fn(i) for every i in [0, n) with at most workers calls in flight, and returns
// the error of the lowest i that failed (every call runs, whatever fails).
func Parallel(n, workers int, fn func(i int) error) error {
	errs := make([]error, n)
	sem := make(chan struct{}, max(workers, 1))
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = fn(i)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
