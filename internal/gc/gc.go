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
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/nodekeeper/nodekeeper/internal/deleter"
	"github.com/nodekeeper/nodekeeper/internal/kube"
	"github.com/nodekeeper/nodekeeper/internal/lease"
)

// DefaultWorkers is how many leases are processed at once. A worker takes its lease's live Node
// check (read ahead by deleter.PrefetchNodeChecker in gc's command), then waits for a DELETE slot
// (MaxDeletesInFlight): the workers only need to outnumber the slots so that a slot never waits
// for a worker. Idle workers cost a goroutine each, and ParallelizeUntil starts no more workers
// than leases.
const DefaultWorkers = 512

// MaxDeletesInFlight bounds the requests gc sends at once (deleter.Options.MaxWritesInFlight for
// the DELETEs; when its live Node checks are GETs, NodeGetsInFlight of them count against it):
// below kube-apiserver's default of 100 streams per HTTP/2 connection
// (--http2-max-streams-per-connection), with room for a LIST, so that every request shares the
// one connection. Without the bound, each of the up to 512 workers that found no free stream
// dialled its own TLS connection: on 20,000 leases some 500 handshakes, paid by gc and, dearer,
// by the API server. The API server's DELETE ceiling needs about 64 in flight.
const (
	MaxDeletesInFlight = 96
	NodeGetsInFlight   = 16
)

// DefaultRateLimit is gc's client-side limit: none. One gc run is one bounded burst that an
// operator starts on purpose; the API server's priority and fairness keeps it from starving
// other clients, and a client-side limit would only make the run slower (--qps sets one).
var DefaultRateLimit = kube.RateLimit{}

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

// DefaultChunkSize is gc's LIST page size: ten times kubectl's 500, as `nodekeeper leases`
// reads. gc reads every Node name and every node lease before it judges one, and most of that
// time is spent waiting once per page: at 100,000 Nodes and 110,000 leases, pages of 500 made the
// plan 420 requests and about 15 s before the first DELETE on a quiet 2-core machine
// (docs/scale.md). A page of Node metadata or leases is about 2 MB of protobuf at 5,000.
const DefaultChunkSize int64 = 5000

// ListOptions configure List.
type ListOptions struct {
	// Lease tunes the classification (grace period; zero: lease.DefaultGracePeriod).
	Lease lease.Options
	// ChunkSize bounds each LIST response (0: kube.DefaultChunkSize, as kubectl; the gc command
	// sets DefaultChunkSize).
	ChunkSize int64
	Clock     clock.PassiveClock
}

// List reads every lease in kube-node-lease and every Node name (metadata only), page by page,
// and classifies the leases.
func List(ctx context.Context, leases coordinationclient.LeasesGetter, nodes metadata.Interface, opts ListOptions) (*Plan, error) {
	classify := opts.Lease
	if err := classify.Validate(); err != nil {
		return nil, err
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	p := &Plan{GracePeriod: opts.Lease.GracePeriod, Counts: map[lease.Class]int{}, nodes: map[string]*lease.NodeRef{}}
	if p.GracePeriod == 0 {
		p.GracePeriod = lease.DefaultGracePeriod
	}

	// Nodes first: a Node registered between the two lists makes its lease look unowned or
	// healthy, never leaked; the reverse order could make a new Node's lease look leaked (the
	// live GET before each delete would still save it).
	err := kube.ListNodes(ctx, nodes, opts.ChunkSize, func(l *metav1.PartialObjectMetadataList) error {
		for i := range l.Items {
			p.nodes[l.Items[i].Name] = &lease.NodeRef{Name: l.Items[i].Name, UID: l.Items[i].UID}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	p.Nodes = len(p.nodes)

	var all []*coordinationv1.Lease
	err = kube.ListLeases(ctx, leases, lease.NodeLeaseNamespace, opts.ChunkSize, func(l *coordinationv1.LeaseList) error {
		for i := range l.Items {
			all = append(all, &l.Items[i])
		}
		return nil
	})
	if err != nil {
		return nil, err
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
	var done atomic.Int64
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
	workqueue.ParallelizeUntil(ctx, workers, len(todo), func(i int) {
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
	})
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
