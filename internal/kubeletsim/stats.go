package kubeletsim

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Stats counts the HTTP requests one simulated kubelet sent, classified as the API server's audit
// log would show them. It is measured on the wire (a RoundTripper), so it covers the upstream
// lease controller's requests as well as the simulator's own. Counts are cumulative over restarts.
type Stats struct {
	Total int64 // every request, including list/watch of its own Node
	// LeaseGet and LeaseGetNotFound count GET leases/<name> and those answered 404.
	LeaseGet, LeaseGetNotFound int64
	// LeaseCreate counts POST leases; LeaseCreated those answered 201.
	LeaseCreate, LeaseCreated int64
	// LeaseUpdate counts PUT leases/<name>; LeaseUpdateCreated those answered 201, i.e. a lease
	// re-created through create-on-update (the pre-1.29 leak); LeaseConflict those answered 409.
	LeaseUpdate, LeaseUpdateCreated, LeaseConflict int64
	// NodeGet and NodeGetNotFound count GET nodes/<name> and those answered 404.
	NodeGet, NodeGetNotFound int64
	// NodeCreate counts POST nodes (registration); NodeStatusPatch PATCH nodes/<name>/status.
	NodeCreate, NodeStatusPatch int64
	// NodeListWatch counts list and watch requests for its own Node (the kubelet's node informer).
	NodeListWatch int64
	// NotFound counts every 404; Errors transport errors and 429/5xx answers.
	NotFound, Errors int64
	// HeartbeatFailures counts the kubelet's onRepeatedHeartbeatFailure callbacks: repeated
	// failures within one lease renewal or one node status sync.
	HeartbeatFailures int64
}

// Sub returns s − o, for the requests sent between two snapshots.
func (s Stats) Sub(o Stats) Stats {
	return Stats{
		Total:              s.Total - o.Total,
		LeaseGet:           s.LeaseGet - o.LeaseGet,
		LeaseGetNotFound:   s.LeaseGetNotFound - o.LeaseGetNotFound,
		LeaseCreate:        s.LeaseCreate - o.LeaseCreate,
		LeaseCreated:       s.LeaseCreated - o.LeaseCreated,
		LeaseUpdate:        s.LeaseUpdate - o.LeaseUpdate,
		LeaseUpdateCreated: s.LeaseUpdateCreated - o.LeaseUpdateCreated,
		LeaseConflict:      s.LeaseConflict - o.LeaseConflict,
		NodeGet:            s.NodeGet - o.NodeGet,
		NodeGetNotFound:    s.NodeGetNotFound - o.NodeGetNotFound,
		NodeCreate:         s.NodeCreate - o.NodeCreate,
		NodeStatusPatch:    s.NodeStatusPatch - o.NodeStatusPatch,
		NodeListWatch:      s.NodeListWatch - o.NodeListWatch,
		NotFound:           s.NotFound - o.NotFound,
		Errors:             s.Errors - o.Errors,
		HeartbeatFailures:  s.HeartbeatFailures - o.HeartbeatFailures,
	}
}

// Add returns s + o, for totals over a fleet.
func (s Stats) Add(o Stats) Stats {
	neg := Stats{}.Sub(o)
	return s.Sub(neg)
}

// counters is the atomic, live form of Stats.
type counters struct {
	total, leaseGet, leaseGetNotFound, leaseCreate, leaseCreated        atomic.Int64
	leaseUpdate, leaseUpdateCreated, leaseConflict, nodeGet, nodeGet404 atomic.Int64
	nodeCreate, nodeStatusPatch, nodeListWatch, notFound, errors        atomic.Int64
	heartbeatFailures                                                   atomic.Int64
}

func (c *counters) snapshot() Stats {
	return Stats{
		Total:              c.total.Load(),
		LeaseGet:           c.leaseGet.Load(),
		LeaseGetNotFound:   c.leaseGetNotFound.Load(),
		LeaseCreate:        c.leaseCreate.Load(),
		LeaseCreated:       c.leaseCreated.Load(),
		LeaseUpdate:        c.leaseUpdate.Load(),
		LeaseUpdateCreated: c.leaseUpdateCreated.Load(),
		LeaseConflict:      c.leaseConflict.Load(),
		NodeGet:            c.nodeGet.Load(),
		NodeGetNotFound:    c.nodeGet404.Load(),
		NodeCreate:         c.nodeCreate.Load(),
		NodeStatusPatch:    c.nodeStatusPatch.Load(),
		NodeListWatch:      c.nodeListWatch.Load(),
		NotFound:           c.notFound.Load(),
		Errors:             c.errors.Load(),
		HeartbeatFailures:  c.heartbeatFailures.Load(),
	}
}

const (
	leasePathPrefix = "/apis/coordination.k8s.io/v1/namespaces/" + NodeLeaseNamespace + "/leases"
	nodePathPrefix  = "/api/v1/nodes"
)

// record classifies one request by method, path and response code (0 for a transport error).
func (c *counters) record(method, path string, code int) {
	c.total.Add(1)
	if code == http.StatusNotFound {
		c.notFound.Add(1)
	}
	if code == 0 || code == http.StatusTooManyRequests || code >= 500 {
		c.errors.Add(1)
	}
	switch {
	case strings.HasPrefix(path, leasePathPrefix):
		named := len(path) > len(leasePathPrefix)+1 && path[len(leasePathPrefix)] == '/'
		switch {
		case method == http.MethodGet && named:
			c.leaseGet.Add(1)
			if code == http.StatusNotFound {
				c.leaseGetNotFound.Add(1)
			}
		case method == http.MethodPost && !named:
			c.leaseCreate.Add(1)
			if code == http.StatusCreated {
				c.leaseCreated.Add(1)
			}
		case method == http.MethodPut && named:
			c.leaseUpdate.Add(1)
			switch code {
			case http.StatusCreated:
				c.leaseUpdateCreated.Add(1)
			case http.StatusConflict:
				c.leaseConflict.Add(1)
			}
		}
	case path == nodePathPrefix:
		switch method {
		case http.MethodPost:
			c.nodeCreate.Add(1)
		case http.MethodGet:
			c.nodeListWatch.Add(1)
		}
	case strings.HasPrefix(path, nodePathPrefix+"/"):
		rest := path[len(nodePathPrefix)+1:]
		switch {
		case method == http.MethodGet && !strings.Contains(rest, "/"):
			c.nodeGet.Add(1)
			if code == http.StatusNotFound {
				c.nodeGet404.Add(1)
			}
		case method == http.MethodPatch && strings.HasSuffix(rest, "/status"):
			c.nodeStatusPatch.Add(1)
		}
	}
}

// Request is one request a kubelet sent, as an audit event would summarise it.
type Request struct {
	Time   time.Time
	Method string // HTTP method: GET, PUT, POST, PATCH
	Path   string // URL path without query
	Code   int    // response code, 0 for a transport error
}

// String is "PUT leases/<name> 201" or "GET nodes/<name> 404"; other paths are printed whole.
func (r Request) String() string {
	p := r.Path
	switch {
	case strings.HasPrefix(p, leasePathPrefix):
		p = "leases" + p[len(leasePathPrefix):]
	case strings.HasPrefix(p, nodePathPrefix):
		p = "nodes" + p[len(nodePathPrefix):]
	}
	return fmt.Sprintf("%s %s %d", r.Method, p, r.Code)
}

// traceSize bounds the per-kubelet request history.
const traceSize = 256

// traceInternLimit bounds the distinct paths a trace shares; a kubelet uses about five.
const traceInternLimit = 32

// trace is a ring of the most recent requests. Entries are kept compact and share their path
// strings, because a fleet keeps thousands of full rings: a ring of Requests, each holding the
// path string its request allocated, would cost about 40 KiB per kubelet.
type trace struct {
	mu    sync.Mutex
	buf   [traceSize]traceEntry
	next  int
	n     int
	paths map[string]string // interned paths, at most traceInternLimit
}

type traceEntry struct {
	unixNano int64
	method   string // an interned constant for the usual methods
	path     string
	code     int
}

// methods lets a trace keep one shared string per HTTP method.
var methods = map[string]string{
	http.MethodGet: http.MethodGet, http.MethodPut: http.MethodPut, http.MethodPost: http.MethodPost,
	http.MethodPatch: http.MethodPatch, http.MethodDelete: http.MethodDelete,
}

func (t *trace) add(r Request) {
	t.mu.Lock()
	if m, ok := methods[r.Method]; ok {
		r.Method = m
	}
	if p, ok := t.paths[r.Path]; ok {
		r.Path = p
	} else if len(t.paths) < traceInternLimit {
		if t.paths == nil {
			t.paths = map[string]string{}
		}
		t.paths[r.Path] = r.Path
	}
	t.buf[t.next] = traceEntry{unixNano: r.Time.UnixNano(), method: r.Method, path: r.Path, code: r.Code}
	t.next = (t.next + 1) % traceSize
	if t.n < traceSize {
		t.n++
	}
	t.mu.Unlock()
}

// since returns the recorded requests at or after from, oldest first.
func (t *trace) since(from time.Time) []Request {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Request, 0, t.n)
	for i := 0; i < t.n; i++ {
		e := t.buf[(t.next-t.n+i+traceSize)%traceSize]
		at := time.Unix(0, e.unixNano)
		if !at.Before(from) {
			out = append(out, Request{Time: at, Method: e.method, Path: e.path, Code: e.code})
		}
	}
	return out
}

// countingTransport records every round trip in counters and in the trace.
type countingTransport struct {
	next  http.RoundTripper
	c     *counters
	trace *trace // may be nil
}

func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := t.next.RoundTrip(req)
	code := 0
	if err == nil {
		code = resp.StatusCode
	}
	t.c.record(req.Method, req.URL.Path, code)
	if t.trace != nil {
		t.trace.add(Request{Time: start, Method: req.Method, Path: req.URL.Path, Code: code})
	}
	return resp, err
}

// WrappedRoundTripper lets utilnet.CloseIdleConnectionsFor reach the HTTP transport.
func (t *countingTransport) WrappedRoundTripper() http.RoundTripper { return t.next }
