package deleter

import (
	"context"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/metadata"

	"github.com/nodekeeper/nodekeeper/internal/kube"
)

// PrefetchNodeChecker performs the live Node check of a bulk delete whose leases were all judged
// leaked before it was created (gc's plan): it starts the checks itself, in the order the leases
// will be deleted, a bounded window ahead of the deletes, so that a DELETE never waits for its
// check and the checks cost the API server as little as they can.
//
// Why: BatchNodeChecker answers the checks of the workers waiting at one moment. Each worker
// waits for a round, deletes, then waits for the next one, so rounds are small and back to back,
// and on a cluster of 10,000 Nodes each of them re-read every Node: gc deleted at half the raw
// DELETE rate. Here every check is known in advance, so one read serves a whole window.
//
// The guarantee is BatchNodeChecker's: every read starts after NewPrefetchNodeChecker was called,
// hence after every decision it answers, and reads the API server's quorum storage
// (resourceVersion unset). Each answer is used once; a check the prefetcher has not started when
// it is asked for is answered by a GET of its own, and a name it was not given too.
//
// How a window is read depends on the cluster's size: up to listNodesPerCheck Nodes for each
// check a LIST would answer (about 100,000 Nodes), one consistent LIST of all Node names (pages of
// 5,000, metadata only, protobuf) answers half a window of checks while the other half is deleted;
// beyond, a GET per Node, GetsInFlight at once.
type PrefetchNodeChecker struct {
	nodes     metadata.ResourceInterface
	chunkSize int64
	useList   bool
	batch     int

	mu      sync.Mutex
	entries map[string]*prefetchEntry
	order   []*prefetchEntry
	next    int // order[:next] are all started or taken

	slots    chan struct{} // one per started check whose answer is not taken yet: the window
	stop     context.CancelFunc
	requests atomic.Int64
	lists    atomic.Int64
	gets     atomic.Int64
}

type prefetchEntry struct {
	name    string
	state   entryState
	done    chan struct{}
	exists  bool
	err     error
	holding bool // the entry holds a window slot until its answer is taken or forgotten
}

type entryState int

const (
	pending entryState = iota // not started
	started                   // the prefetcher reads it; done closes with the answer
	taken                     // answered and taken, forgotten, or claimed by a caller's own GET
)

// PrefetchOptions tune a PrefetchNodeChecker; zero values take the defaults.
type PrefetchOptions struct {
	// Window bounds how many checks may be answered ahead of their deletes (default 2,048; 256
	// when the checker GETs, which needs no more to stay ahead), which bounds the time between a
	// check and its DELETE to about Window deletes.
	Window int
	// GetsInFlight is how many GETs are sent at once when the checker GETs (default 16).
	GetsInFlight int
}

// listNodesPerCheck is how many Nodes one check justifies listing (a window of 1,024 checks: a
// LIST of up to 102,400 Nodes). A GET of a missing Node costs the API server about as much as
// listing 100 Nodes' metadata (measured on a local API server: a GET ~0.4 ms, a metadata LIST
// ~0.4 ms plus ~4 µs per Node), and while DELETEs load etcd a GET, a quorum read of etcd, waits
// far longer: at 10,000 Nodes on a loaded 2-core machine 16 GETs in flight took 250–900 ms each
// and held the deletes back to a third of the rate a LIST per window allowed, while the API
// server serves the consistent LIST from its watch cache.
const listNodesPerCheck = 100

// NewPrefetchNodeChecker starts checking names (in the order given, which should be the order of
// the deletes) on nodes; nodeCount is how many Nodes the caller last saw, to choose between LIST
// and GETs. Call it only after every lease named was judged leaked, and Close it when done.
func NewPrefetchNodeChecker(nodes metadata.Interface, names []string, nodeCount int, opts PrefetchOptions) *PrefetchNodeChecker {
	if opts.Window <= 0 {
		opts.Window = 2048
	}
	if opts.GetsInFlight <= 0 {
		opts.GetsInFlight = 16
	}
	p := &PrefetchNodeChecker{
		nodes:     nodes.Resource(kube.NodesResource),
		chunkSize: 5000,
		entries:   make(map[string]*prefetchEntry, len(names)),
	}
	for _, n := range names {
		if _, dup := p.entries[n]; dup {
			continue
		}
		e := &prefetchEntry{name: n, done: make(chan struct{})}
		p.entries[n] = e
		p.order = append(p.order, e)
	}
	// Half a window per LIST: the next LIST runs while the previous half's deletes go out.
	p.batch = max(min(opts.Window/2, len(p.order)), 1)
	p.useList = nodeCount <= listNodesPerCheck*p.batch
	window := opts.Window
	if !p.useList {
		window = min(window, 256)
	}
	p.slots = make(chan struct{}, window)
	ctx, cancel := context.WithCancel(context.Background())
	p.stop = cancel
	if p.useList {
		go p.listLoop(ctx)
	} else {
		for range min(opts.GetsInFlight, len(p.order)) {
			go p.getLoop(ctx)
		}
	}
	return p
}

// Close stops the checks not started yet; checks asked for later GET their Node themselves.
func (p *PrefetchNodeChecker) Close() { p.stop() }

// Requests is how many requests the prefetcher sent (LIST pages and GETs; the GETs NodeExists
// sends for its callers are counted in their own results instead).
func (p *PrefetchNodeChecker) Requests() int { return int(p.requests.Load()) }

// Lists and Gets count the LIST rounds and the prefetched GETs.
func (p *PrefetchNodeChecker) Lists() int { return int(p.lists.Load()) }
func (p *PrefetchNodeChecker) Gets() int  { return int(p.gets.Load()) }

// UsesList reports whether the checker reads windows with LISTs (else with GETs).
func (p *PrefetchNodeChecker) UsesList() bool { return p.useList }

// NodeExists takes the prefetched answer for name, waiting for it if its read is under way. When
// its read has not started (or name was not given), it GETs the Node now.
func (p *PrefetchNodeChecker) NodeExists(ctx context.Context, name string) (bool, int, error) {
	if err := context.Cause(ctx); err != nil {
		return false, 0, err
	}
	p.mu.Lock()
	e := p.entries[name]
	if e == nil || e.state == taken {
		p.mu.Unlock()
		return p.get(ctx, name)
	}
	if e.state == pending {
		e.state = taken // the prefetcher skips it
		p.mu.Unlock()
		return p.get(ctx, name)
	}
	p.mu.Unlock()
	select {
	case <-e.done:
	case <-ctx.Done():
		p.release(e)
		return false, 0, context.Cause(ctx)
	}
	p.release(e)
	return e.exists, 0, e.err
}

// Forget says that name's check will not be asked for (its lease was not deleted after all), so
// that its answer does not hold a place in the window.
func (p *PrefetchNodeChecker) Forget(name string) {
	p.mu.Lock()
	e := p.entries[name]
	if e == nil {
		p.mu.Unlock()
		return
	}
	if e.state == pending {
		e.state = taken
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	p.release(e)
}

// release marks e taken and frees its window slot (once).
func (p *PrefetchNodeChecker) release(e *prefetchEntry) {
	p.mu.Lock()
	e.state = taken
	hold := e.holding
	e.holding = false
	p.mu.Unlock()
	if hold {
		<-p.slots
	}
}

func (p *PrefetchNodeChecker) get(ctx context.Context, name string) (bool, int, error) {
	return GetNodeChecker{Nodes: p.nodes}.NodeExists(ctx, name)
}

// claim waits for a window slot and returns the next pending entry, marked started and holding
// the slot; nil when none is left or ctx ended.
func (p *PrefetchNodeChecker) claim(ctx context.Context) *prefetchEntry {
	for {
		// With nothing left to start, the last batch must not wait for a slot to be read.
		if !p.anyPending() {
			return nil
		}
		select {
		case p.slots <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		p.mu.Lock()
		for p.next < len(p.order) && p.order[p.next].state != pending {
			p.next++
		}
		if p.next == len(p.order) {
			p.mu.Unlock()
			<-p.slots
			return nil
		}
		e := p.order[p.next]
		p.next++
		e.state, e.holding = started, true
		p.mu.Unlock()
		return e
	}
}

// anyPending reports whether some check is not started yet.
func (p *PrefetchNodeChecker) anyPending() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.next < len(p.order) && p.order[p.next].state != pending {
		p.next++
	}
	return p.next < len(p.order)
}

// getLoop GETs the Node of each next entry.
func (p *PrefetchNodeChecker) getLoop(ctx context.Context) {
	g := GetNodeChecker{Nodes: p.nodes}
	for {
		e := p.claim(ctx)
		if e == nil {
			return
		}
		var n int
		e.exists, n, e.err = g.NodeExists(ctx, e.name)
		p.requests.Add(int64(n))
		p.gets.Add(1)
		close(e.done)
	}
}

// listLoop answers batches of entries, each with one consistent LIST that starts after the batch
// was claimed.
func (p *PrefetchNodeChecker) listLoop(ctx context.Context) {
	for {
		var batch []*prefetchEntry
		for len(batch) < p.batch {
			e := p.claim(ctx)
			if e == nil {
				break
			}
			batch = append(batch, e)
		}
		if len(batch) == 0 {
			return
		}
		names, err := p.listNames(ctx)
		for _, e := range batch {
			_, e.exists = names[e.name]
			e.err = err
			close(e.done)
		}
	}
}

// listNames is one consistent, paginated LIST of every Node's name. An expired continue token
// fails it (kube.List), so no check is answered from a partial view.
func (p *PrefetchNodeChecker) listNames(ctx context.Context) (map[string]struct{}, error) {
	p.lists.Add(1)
	names := map[string]struct{}{}
	counted := func(ctx context.Context, o metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
		p.requests.Add(1)
		return p.nodes.List(ctx, o)
	}
	err := kube.List(ctx, "nodes", metav1.ListOptions{Limit: p.chunkSize}, counted, func(list *metav1.PartialObjectMetadataList) error {
		for i := range list.Items {
			names[list.Items[i].Name] = struct{}{}
		}
		return nil
	})
	return names, err
}
