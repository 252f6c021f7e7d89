// Package gc is `nodekeeper gc`: a one-shot, parallel collection of leaked node leases for people
// who today run `kubectl get lease | jq | xargs kubectl delete`. It lists every lease in
// kube-node-lease and every Node (metadata only), classifies each lease with package lease, and
// deletes the leaked ones through package deleter, the same code path and safety rules as the
// controller: leaked at listing time, a live GET of the Node returns NotFound, and the DELETE
// carries the lease's UID and resourceVersion as preconditions.
package gc

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/pager"
	"k8s.io/utils/clock"

	"github.com/nodekeeper/nodekeeper/internal/deleter"
	"github.com/nodekeeper/nodekeeper/internal/lease"
)

// DefaultWorkers is how many leases are processed at once. Each worker first waits for its live
// Node check, which concurrent workers share (one LIST round answers all checks waiting for it),
// then sends its DELETE; with 128 workers the rounds are large and enough DELETEs stay in flight
// to keep a local API server busy. --qps still bounds the rate.
const DefaultWorkers = 128

// Plan is the classified state of kube-node-lease at one moment.
type Plan struct {
	At          time.Time
	GracePeriod time.Duration
	// Items holds every lease with its verdict, sorted by name.
	Items []Item
	// Counts is the number of leases per class (every class present, zeros included).
	Counts map[lease.Class]int
	// Nodes is the number of Nodes seen.
	Nodes int
	// Selection is what Select applied; NotSelected and OverLimit count the leaked leases it
	// left (their name does not match; beyond the limit).
	Selection   Selection
	NotSelected int
	OverLimit   int

	selected bool

	leaked []*coordinationv1.Lease
	nodes  map[string]*lease.NodeRef
}

// Item is one classified lease.
type Item struct {
	Name    string
	UID     string
	Verdict lease.Verdict
}

// Leaked returns the leases to delete, oldest activity first (after Select: the selected ones).
func (p *Plan) Leaked() []*coordinationv1.Lease { return p.leaked }

// ListOptions configure List.
type ListOptions struct {
	GracePeriod time.Duration
	// PageSize bounds each LIST response (default 500, as kubectl).
	PageSize int64
	Clock    clock.PassiveClock
}

// List reads every lease in kube-node-lease and every Node name (metadata only), page by page,
// and classifies the leases.
func List(ctx context.Context, leases coordinationclient.LeasesGetter, nodes metadata.Interface, opts ListOptions) (*Plan, error) {
	classify := lease.Options{GracePeriod: opts.GracePeriod}
	if err := classify.Validate(); err != nil {
		return nil, err
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.PageSize <= 0 {
		opts.PageSize = 500
	}
	p := &Plan{GracePeriod: opts.GracePeriod, Counts: map[lease.Class]int{}, nodes: map[string]*lease.NodeRef{}}
	if p.GracePeriod == 0 {
		p.GracePeriod = lease.DefaultGracePeriod
	}

	// Nodes first: a Node registered between the two lists makes its lease look unowned or
	// healthy, never leaked; the reverse order could make a new Node's lease look leaked (the
	// live GET before each delete would still save it).
	np := pager.New(func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return nodes.Resource(deleter.NodesResource).List(ctx, o)
	})
	np.PageSize = opts.PageSize
	if err := np.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		m, ok := obj.(*metav1.PartialObjectMetadata)
		if !ok {
			return fmt.Errorf("unexpected node list item %T", obj)
		}
		p.nodes[m.Name] = &lease.NodeRef{Name: m.Name, UID: m.UID}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	p.Nodes = len(p.nodes)

	lc := leases.Leases(lease.NodeLeaseNamespace)
	lp := pager.New(func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return lc.List(ctx, o)
	})
	lp.PageSize = opts.PageSize
	var all []*coordinationv1.Lease
	if err := lp.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		l, ok := obj.(*coordinationv1.Lease)
		if !ok {
			return fmt.Errorf("unexpected lease list item %T", obj)
		}
		l.ManagedFields = nil
		all = append(all, l)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("list leases in %s: %w", lease.NodeLeaseNamespace, err)
	}

	p.At = opts.Clock.Now()
	for _, c := range lease.Classes() {
		p.Counts[c] = 0
	}
	for _, l := range all {
		v := lease.Classify(l, p.nodes[l.Name], p.At, classify)
		p.Counts[v.Class]++
		p.Items = append(p.Items, Item{Name: l.Name, UID: string(l.UID), Verdict: v})
		if v.Class == lease.Leaked {
			p.leaked = append(p.leaked, l)
		}
	}
	sort.Slice(p.Items, func(i, j int) bool { return p.Items[i].Name < p.Items[j].Name })
	idle := make(map[*coordinationv1.Lease]time.Time, len(p.leaked))
	for _, l := range p.leaked {
		idle[l] = lease.Classify(l, nil, p.At, classify).LastActivity
	}
	sort.SliceStable(p.leaked, func(i, j int) bool { return idle[p.leaked[i]].Before(idle[p.leaked[j]]) })
	return p, nil
}

// Result is what happened to one leaked lease.
type Result struct {
	Name    string          `json:"name"`
	UID     string          `json:"uid"`
	Outcome deleter.Outcome `json:"outcome"`
	Reason  string          `json:"reason"`
	Error   string          `json:"error,omitempty"`
}

// Report summarises a collection.
type Report struct {
	Results  []Result                `json:"results"`
	Counts   map[deleter.Outcome]int `json:"counts"`
	Requests int                     `json:"requests"`
	Duration time.Duration           `json:"-"`
	// Seconds is Duration for JSON readers.
	Seconds float64 `json:"durationSeconds"`
}

// Failed reports how many deletes failed with an API error (safety skips are not failures).
func (r *Report) Failed() int { return r.Counts[deleter.Failed] }

// Progress is called (from one goroutine at a time) as deletes finish.
type Progress func(done, total int, counts map[deleter.Outcome]int)

// CollectOptions configure Collect.
type CollectOptions struct {
	Workers  int
	Progress Progress
	// ProgressEvery throttles Progress calls (default 100 ms); the last call always happens.
	ProgressEvery time.Duration
}

// Collect deletes the plan's leaked leases in parallel through d. Each lease goes through
// deleter.Delete with the Node the plan saw (none), so every safety rule applies to each.
// Cancelling ctx stops starting new deletes; those in flight finish or fail.
func Collect(ctx context.Context, d *deleter.Deleter, p *Plan, opts CollectOptions) (*Report, error) {
	if d == nil || p == nil {
		return nil, errors.New("gc: no deleter or no plan")
	}
	workers := opts.Workers
	if workers <= 0 {
		workers = DefaultWorkers
	}
	todo := p.leaked
	if workers > len(todo) {
		workers = max(len(todo), 1)
	}
	every := opts.ProgressEvery
	if every == 0 {
		every = 100 * time.Millisecond
	}
	start := time.Now()
	results := make([]Result, len(todo))
	var next, done atomic.Int64
	var requests atomic.Int64
	var mu sync.Mutex
	counts := map[deleter.Outcome]int{}
	lastProgress := time.Time{}
	report := func(final bool) {
		// Called with mu held.
		if opts.Progress == nil {
			return
		}
		if now := time.Now(); final || now.Sub(lastProgress) >= every {
			lastProgress = now
			snapshot := make(map[deleter.Outcome]int, len(counts))
			for k, v := range counts {
				snapshot[k] = v
			}
			opts.Progress(int(done.Load()), len(todo), snapshot)
		}
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(todo) || ctx.Err() != nil {
					return
				}
				l := todo[i]
				r := d.Delete(ctx, l, p.nodes[l.Name])
				res := Result{Name: l.Name, UID: string(l.UID), Outcome: r.Outcome, Reason: r.Reason}
				if r.Err != nil {
					res.Error = r.Err.Error()
				}
				results[i] = res
				requests.Add(int64(r.Requests))
				done.Add(1)
				mu.Lock()
				counts[r.Outcome]++
				report(false)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	mu.Lock()
	report(true)
	mu.Unlock()
	n := int(done.Load())
	out := &Report{Counts: counts, Requests: int(requests.Load()), Duration: time.Since(start)}
	out.Seconds = out.Duration.Seconds()
	for i := range results {
		if results[i].Outcome != "" {
			out.Results = append(out.Results, results[i])
		}
	}
	if n < len(todo) {
		return out, fmt.Errorf("interrupted after %d of %d leases: %w", n, len(todo), context.Cause(ctx))
	}
	return out, nil
}
