package deleter

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/metadata"

	"github.com/nodekeeper/nodekeeper/internal/kube"
)

// NodeChecker performs safety rule 2, the live Node check: it answers whether a Node named name
// exists, from a read of the API server that starts after NodeExists is called and is served
// from its quorum-read storage (resourceVersion unset: never a cache that might lag). Requests is
// how many requests the call itself sent (a checker that shares requests between calls reports
// them through its own counter instead).
type NodeChecker interface {
	NodeExists(ctx context.Context, name string) (exists bool, requests int, err error)
}

// GetNodeChecker checks each Node with its own GET: the simplest live check, used by the
// controller, where deletes are few and spread out.
type GetNodeChecker struct {
	Nodes metadata.ResourceInterface
}

// NodeExists GETs the Node. Only the API server's own NotFound for that Node (see NodeAbsent)
// proves it absent; any other answer, a 404 from something else included, is an error.
func (g GetNodeChecker) NodeExists(ctx context.Context, name string) (bool, int, error) {
	_, err := g.Nodes.Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		return true, 1, nil
	case NodeAbsent(err, name):
		return false, 1, nil
	case apierrors.IsNotFound(err):
		return false, 1, fmt.Errorf("GET of Node %s answered 404 without the API server's NotFound status for that Node "+
			"(a proxy or load balancer in front of the API server?), so its absence is not proven: %w", name, err)
	}
	return false, 1, err
}

// NodeAbsent reports whether err proves that no Node named name exists: it must be a Kubernetes
// Status decoded from the answer, with code 404, reason NotFound and details naming the core
// resource "nodes" and that very name.
//
// client-go turns any error answer that is not a Status (an HTML or plain-text 404 page from a
// proxy, a gateway or a misrouted load balancer) into a StatusError of its own with reason
// NotFound and the requested resource and name in its details, so apierrors.IsNotFound alone
// cannot tell the API server's answer from a stranger's. Such a synthesized error always carries
// a cause of type UnexpectedServerResponse (the body it could not decode): that marks it as not
// the API server's word.
func NodeAbsent(err error, name string) bool {
	var se apierrors.APIStatus
	if err == nil || !errors.As(err, &se) {
		return false
	}
	st := se.Status()
	if st.Reason != metav1.StatusReasonNotFound || st.Code != http.StatusNotFound || st.Details == nil {
		return false
	}
	d := st.Details
	if d.Group != "" || d.Kind != kube.NodesResource.Resource || d.Name != name || name == "" {
		return false
	}
	for _, c := range d.Causes {
		if c.Type == metav1.CauseTypeUnexpectedServerResponse {
			return false
		}
	}
	return true
}

// BatchNodeChecker gives many concurrent checks one live read between them, for bulk deletes.
//
// A check registers and waits for the next read round that starts after it registered. A round
// is one consistent LIST of all Node names (metadata only, paginated, resourceVersion unset),
// which reflects every Node created before the LIST started, hence before every check it answers:
// exactly the guarantee a GET issued at registration time gives, at one request per round instead
// of one per lease. When the cluster has many Nodes and few checks are waiting, a LIST would cost
// more than the GETs it replaces, so the round sends one GET per waiting check instead (also
// started after each registration).
type BatchNodeChecker struct {
	nodes     metadata.ResourceInterface
	chunkSize int64
	timeout   time.Duration

	mu       sync.Mutex
	waiting  []*nodeWaiter
	running  bool
	lastSize int // Nodes seen by the last LIST; -1 before the first

	requests atomic.Int64
	lists    atomic.Int64
}

type nodeWaiter struct {
	name   string
	done   chan struct{}
	exists bool
	err    error
}

// listWorthIt is how many Nodes one waiting check justifies listing: a GET costs about as much
// as listing this many Nodes' metadata (measured on a local API server: a GET of a missing Node
// ~0.4 ms, a metadata LIST ~0.4 ms plus ~4 µs per Node).
const listWorthIt = 100

// NewBatchNodeChecker returns a checker that shares live reads between concurrent checks.
func NewBatchNodeChecker(nodes metadata.Interface) *BatchNodeChecker {
	return &BatchNodeChecker{nodes: nodes.Resource(kube.NodesResource), chunkSize: 5000, timeout: time.Minute, lastSize: -1}
}

// Requests is how many requests the checker has sent (LIST pages and GETs).
func (b *BatchNodeChecker) Requests() int { return int(b.requests.Load()) }

// Lists is how many LIST rounds the checker has run.
func (b *BatchNodeChecker) Lists() int { return int(b.lists.Load()) }

// NodeExists waits for the next read round that starts after this call.
func (b *BatchNodeChecker) NodeExists(ctx context.Context, name string) (bool, int, error) {
	w := &nodeWaiter{name: name, done: make(chan struct{})}
	b.mu.Lock()
	b.waiting = append(b.waiting, w)
	if !b.running {
		b.running = true
		go b.loop()
	}
	b.mu.Unlock()
	select {
	case <-w.done:
		return w.exists, 0, w.err
	case <-ctx.Done():
		return false, 0, ctx.Err()
	}
}

func (b *BatchNodeChecker) loop() {
	for {
		b.mu.Lock()
		batch := b.waiting
		b.waiting = nil
		if len(batch) == 0 {
			b.running = false
			b.mu.Unlock()
			return
		}
		useList := b.lastSize < 0 || b.lastSize <= listWorthIt*len(batch)
		b.mu.Unlock()
		// Everything below starts now, after every waiter in batch registered.
		ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
		if useList {
			b.listRound(ctx, batch)
		} else {
			b.getRound(ctx, batch)
		}
		cancel()
	}
}

func (b *BatchNodeChecker) listRound(ctx context.Context, batch []*nodeWaiter) {
	b.lists.Add(1)
	names := map[string]struct{}{}
	// An expired continue token fails the round (kube.Pages): its checks then fail, and no
	// lease is deleted on a partial view of the Nodes.
	countedList := func(ctx context.Context, o metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
		b.requests.Add(1)
		return b.nodes.List(ctx, o)
	}
	err := kube.List(ctx, "nodes", metav1.ListOptions{Limit: b.chunkSize}, countedList, func(list *metav1.PartialObjectMetadataList) error {
		for i := range list.Items {
			names[list.Items[i].Name] = struct{}{}
		}
		return nil
	})
	if err == nil {
		b.mu.Lock()
		b.lastSize = len(names)
		b.mu.Unlock()
	}
	for _, w := range batch {
		_, w.exists = names[w.name]
		w.err = err
		close(w.done)
	}
}

func (b *BatchNodeChecker) getRound(ctx context.Context, batch []*nodeWaiter) {
	g := GetNodeChecker{Nodes: b.nodes}
	var wg sync.WaitGroup
	for _, w := range batch {
		wg.Go(func() {
			var n int
			w.exists, n, w.err = g.NodeExists(ctx, w.name)
			b.requests.Add(int64(n))
			close(w.done)
		})
	}
	wg.Wait()
}
