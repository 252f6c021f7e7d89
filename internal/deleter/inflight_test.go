package deleter

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/utils/ptr"

	"github.com/nodekeeper/nodekeeper/internal/lease"
)

// heldLeases holds each DELETE until `limit` are in flight together, and records the most seen.
// (client-go's fake clientset runs its reactors one at a time, so it cannot show concurrency.)
type heldLeases struct {
	coordinationclient.LeaseInterface
	t     *testing.T
	limit int
	full  chan struct{}

	mu             sync.Mutex
	inFlight, most int
	released       bool // full is closed: later DELETEs reach the bound again without waiting
}

func (h *heldLeases) Leases(string) coordinationclient.LeaseInterface { return h }

func (h *heldLeases) Delete(_ context.Context, name string, o metav1.DeleteOptions) error {
	if p := o.Preconditions; p == nil || p.UID == nil || p.ResourceVersion == nil {
		h.t.Errorf("DELETE of %s without preconditions", name)
	}
	h.mu.Lock()
	h.inFlight++
	h.most = max(h.most, h.inFlight)
	if h.inFlight == h.limit && !h.released {
		h.released = true
		close(h.full)
	}
	h.mu.Unlock()
	<-h.full
	h.mu.Lock()
	h.inFlight--
	h.mu.Unlock()
	return nil
}

type noNodes struct{}

func (noNodes) NodeExists(context.Context, string) (bool, int, error) { return false, 1, nil }

// MaxWritesInFlight: never more DELETEs at once than the bound, however many callers; each still
// carries its lease's preconditions. The first `limit` DELETEs are held until that many are in
// flight together, so the bound is reached; none may pass it.
func TestMaxWritesInFlight(t *testing.T) {
	const limit, callers = 3, 12
	leases := &heldLeases{LeaseInterface: fake.NewClientset().CoordinationV1().Leases(lease.NodeLeaseNamespace), limit: limit, full: make(chan struct{}), t: t}
	d, err := New(leases, metadatafake.NewSimpleMetadataClient(runtime.NewScheme()), Options{
		NodeChecker: noNodes{}, MaxWritesInFlight: limit,
	})
	if err != nil {
		t.Fatal(err)
	}
	old := metav1.NewTime(time.Now().Add(-3 * time.Hour))
	var wg sync.WaitGroup
	results := make([]Result, callers)
	for i := range callers {
		name := fmt.Sprintf("ip-10-0-0-%d.ec2.internal", i)
		l := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: lease.NodeLeaseNamespace, UID: types.UID(name), ResourceVersion: "7", CreationTimestamp: old},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(name), LeaseDurationSeconds: ptr.To[int32](40),
				RenewTime: &metav1.MicroTime{Time: old.Time}},
		}
		wg.Go(func() { results[i] = d.Delete(context.Background(), l, nil) })
	}
	wg.Wait()
	for i, r := range results {
		if r.Outcome != Deleted {
			t.Errorf("lease %d: %s (%s)", i, r.Outcome, r.Reason)
		}
	}
	if most := leases.most; most != limit {
		t.Errorf("at most %d DELETEs were in flight together, want exactly the bound %d", most, limit)
	}
	if _, err := New(leases, metadatafake.NewSimpleMetadataClient(runtime.NewScheme()), Options{MaxWritesInFlight: -1}); err == nil {
		t.Error("a negative bound was accepted")
	}
}
