package clustertest

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/nodekeeper/nodekeeper/internal/lease"
	"github.com/nodekeeper/nodekeeper/internal/leasesview"
	"github.com/nodekeeper/nodekeeper/internal/test/testenv"
)

// nodeGate holds every Node LIST request until the lease LIST has been answered leasePages
// times, so that a test sees the two LISTs run side by side and lease pages arrive before the
// Nodes are complete. A listing that lists the Nodes first would wait for ever; the gate gives
// up after a minute and records it, so that such a listing fails the test instead of hanging it.
type nodeGate struct {
	next       http.RoundTripper
	leasePages int

	mu       sync.Mutex
	leases   int
	open     chan struct{}
	gaveUp   bool
	nodeReqs int
}

func newNodeGate(leasePages int) *nodeGate {
	return &nodeGate{leasePages: leasePages, open: make(chan struct{})}
}

func (g *nodeGate) wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { g.next = rt; return g })
	return cfg
}

func (g *nodeGate) RoundTrip(r *http.Request) (*http.Response, error) {
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/api/v1/nodes":
		g.mu.Lock()
		g.nodeReqs++
		g.mu.Unlock()
		select {
		case <-g.open:
		case <-r.Context().Done():
			return nil, r.Context().Err()
		case <-time.After(time.Minute):
			g.mu.Lock()
			g.gaveUp = true
			g.mu.Unlock()
		}
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/leases"):
		resp, err := g.next.RoundTrip(r)
		g.mu.Lock()
		if g.leases++; g.leases == g.leasePages {
			close(g.open)
		}
		g.mu.Unlock()
		return resp, err
	}
	return g.next.RoundTrip(r)
}

// TestListJoinsNodesListedBesideLeases: leases lists the Nodes and the leases at the same time
// (one LIST does not wait for the other), and the lease pages that arrive before the last Node
// page are classified once the Nodes are complete, exactly as if the Nodes had come first: the
// same classes and the same Node joined. Node LISTs are held until two lease pages (of one lease
// each) have been answered; both the report and kubectl's object output (-o name with --class,
// which also needs the Nodes) are checked.
func TestListJoinsNodesListedBesideLeases(t *testing.T) {
	ctx := context.Background()
	healthy := testenv.UniqueNodeName(31, "ec2.internal")
	node := env.CreateNode(t, healthy)
	t.Cleanup(func() {
		_ = env.AdminClient().CoreV1().Nodes().Delete(context.Background(), healthy, metav1.DeleteOptions{})
	})
	env.CreateNodeLease(t, healthy, time.Now(), metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: healthy, UID: node.UID})
	leaked := env.SeedLeakedLeases(t, testenv.UniqueNodeName(32, "x"), 2, time.Now().Add(-3*time.Hour))
	want := map[string]lease.Class{
		lease.NodeLeaseNamespace + "/" + healthy:   lease.Healthy,
		lease.NodeLeaseNamespace + "/" + leaked[0]: lease.Leaked,
		lease.NodeLeaseNamespace + "/" + leaked[1]: lease.Leaked,
	}
	opts := leasesview.Options{Namespace: lease.NodeLeaseNamespace, ChunkSize: 1}

	t.Run("report", func(t *testing.T) {
		gate := newNodeGate(2)
		r, err := leasesview.List(ctx, clientsFor(t, gate.wrap(env.AdminConfig())), opts)
		if err != nil {
			t.Fatal(err)
		}
		gate.check(t)
		got := itemsByName(r)
		for k, c := range want {
			if it := got[k]; it.Class != c {
				t.Errorf("%s: class %q (%s), want %s", k, it.Class, it.Reason, c)
			}
		}
		if n := got[lease.NodeLeaseNamespace+"/"+healthy].Node; n == nil || n.UID != node.UID {
			t.Errorf("healthy lease joined with Node %+v, want uid %s", n, node.UID)
		}
	})
	t.Run("objects", func(t *testing.T) {
		gate := newNodeGate(2)
		o := opts
		o.Classes = []lease.Class{lease.Leaked}
		objs, err := leasesview.ListObjects(ctx, clientsFor(t, gate.wrap(env.AdminConfig())), o, nil)
		if err != nil {
			t.Fatal(err)
		}
		gate.check(t)
		names := map[string]bool{}
		for _, l := range objs {
			names[l.Name] = true
		}
		if !names[leaked[0]] || !names[leaked[1]] || names[healthy] {
			t.Errorf("--class leaked objects = %v, want %v and not %s", names, leaked, healthy)
		}
	})
}

// check fails the test when the Node LIST was not held or had to be let go by the gate.
func (g *nodeGate) check(t *testing.T) {
	t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.nodeReqs == 0 {
		t.Fatal("no Node LIST was made")
	}
	if g.gaveUp {
		t.Fatalf("the Node LIST waited a minute for %d lease pages, and %d came: the leases were not listed beside the Nodes", g.leasePages, g.leases)
	}
}

// TestListLeaseErrorWinsOverCancelledNodes: when the lease LIST fails, the Node LIST beside it is
// cancelled, and the error reported is the lease LIST's own (forbidden), not the cancellation.
func TestListLeaseErrorWinsOverCancelledNodes(t *testing.T) {
	ctx := context.Background()
	const user = "node-reader"
	env.GrantClusterRole(t, user, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch"}})
	for _, ns := range []string{"", lease.NodeLeaseNamespace} {
		_, err := leasesview.List(ctx, clientsFor(t, env.UserConfig(user)), leasesview.Options{Namespace: ns})
		if err == nil || !strings.Contains(err.Error(), "leases") || !strings.Contains(err.Error(), "forbidden") || errors.Is(err, context.Canceled) {
			t.Errorf("namespace %q: err = %v, want the lease LIST's forbidden error", ns, err)
		}
	}
}
