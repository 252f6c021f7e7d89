package analyze

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/audit/read"
)

// ReadOptions are read.Options under the name Options embeds them by (Options.ReadOptions).
type ReadOptions = read.Options

// Options control an analysis.
type Options struct {
	ReadOptions
	// Report filters: they narrow what is reported, not what is analysed (a zombie still needs
	// the deletion of its Node by someone else to be recognised).
	Node  string // node name: its deletions, lease, zombie episodes, leaks, and its requests
	Lease string // lease name or namespace/name
	User  string // actor: lifecycle events, deletions, leaks, zombies and requests by this user
	// Top is how many rows the ranked tables keep; 0 means 10.
	Top int
	// ZombieMinDuration is how long a kubelet must keep calling after its Node was deleted to
	// be reported as a zombie (a machine that is shutting down makes a few calls, a zombie
	// keeps going); 0 means one minute.
	ZombieMinDuration time.Duration
	// EventsPerLease bounds the events kept per lease (half first, half last); 0 means 40.
	EventsPerLease int
	// ChurnThreshold names an actor as lease churn when it deleted node leases that were created
	// again within ChurnWindow more than this many times; 0 means DefaultChurnThreshold.
	ChurnThreshold int
	// NodeMonitorGracePeriod is kube-controller-manager's --node-monitor-grace-period, and
	// LeaseRenewInterval the kubelets' lease renew interval (a quarter of
	// nodeLeaseDurationSeconds): a node whose renewals stopped for the grace period less one
	// interval came within one renewal of NotReady. 0 means DefaultNodeMonitorGracePeriod and
	// DefaultLeaseRenewInterval.
	NodeMonitorGracePeriod time.Duration
	LeaseRenewInterval     time.Duration
}

// maxNodeCreates bounds the creations of the filtered Node kept (Report.NodeCreations).
const maxNodeCreates = 64

// NodeLeaseNamespace holds the kubelets' node leases (the lifecycles and leaks followed).
const NodeLeaseNamespace = "kube-node-lease"

// Analyze reads the inputs and builds the report. Errors reading one input (a truncated
// gzip stream, an unreadable file) do not stop the others: they are listed in Report.Errors
// and returned joined, after everything readable was counted.
func Analyze(inputs []read.Input, opts Options) (*Report, error) {
	if len(inputs) >= 1<<16 {
		// A record's position packs the input index into 16 bits.
		return nil, fmt.Errorf("%d inputs: at most %d can be read at once", len(inputs), 1<<16-1)
	}
	return analyzeWithin(inputs, opts, defaultLimits, read.DefaultMaxStrings)
}

// setDefaults puts the default in place of every option left 0.
func (opts *Options) setDefaults() error {
	if opts.Top <= 0 {
		opts.Top = 10
	}
	if opts.ZombieMinDuration <= 0 {
		opts.ZombieMinDuration = time.Minute
	}
	if opts.EventsPerLease <= 0 {
		opts.EventsPerLease = 40
	}
	if opts.ChurnThreshold <= 0 {
		opts.ChurnThreshold = DefaultChurnThreshold
	}
	if opts.NodeMonitorGracePeriod <= 0 {
		opts.NodeMonitorGracePeriod = DefaultNodeMonitorGracePeriod
	}
	if opts.LeaseRenewInterval <= 0 {
		opts.LeaseRenewInterval = DefaultLeaseRenewInterval
	}
	if opts.LeaseRenewInterval >= opts.NodeMonitorGracePeriod {
		return fmt.Errorf("the lease renew interval (%s) must be shorter than the node monitor grace period (%s)",
			opts.LeaseRenewInterval, opts.NodeMonitorGracePeriod)
	}
	return nil
}

// analyzeWithin is Analyze with explicit memory bounds (tests use small ones).
func analyzeWithin(inputs []read.Input, opts Options, lim limits, maxStrings int) (*Report, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	in := read.NewInterner(maxStrings)
	p := read.NewPipeline(inputs, opts.ReadOptions, in)
	a := newAnalyzer(in, opts, p)
	a.lim, a.ringLeft, a.churn.limit = lim, lim.ringEvents, lim.churners
	p.Run(a.process)
	return a.report()
}

// AnalyzeReader analyses one stream (for tests and standard input).
func AnalyzeReader(name string, r io.Reader, opts Options) (*Report, error) {
	return Analyze([]read.Input{{Name: name, Open: func() (io.ReadCloser, error) { return io.NopCloser(r), nil }}}, opts)
}

type talkerKey struct {
	user, ua, res uint32
	verb          read.Verb
}

type talkerStat struct {
	requests, throttled, serverErrors int64
	latSum, latMax                    int64
	latN                              int64
	apfN, apfSum, apfMax              int64 // µs
	hist                              latHist
	// requestsErr is how much requests may overcount: the count this entry inherited when it
	// took the place of an evicted one (space-saving); 0 for a key tracked from its start.
	requestsErr int64
}

// limits bound the per-key state of an analysis, so that memory does not grow with the number
// of distinct leases, nodes and users in the log (see Bounds for what passing them costs).
type limits struct {
	leases     int // lease histories tracked
	ringEvents int // lifecycle events kept in all lease histories together
	nodes      int // nodes tracked (deletions, zombie episodes)
	leaks      int // leaks listed
	talkers    int // (user, user agent, verb, resource) entries; past it, space-saving
	throtUsers int // users with a 429 time series
	churners   int // actors whose lease churn is counted
}

var defaultLimits = limits{leases: 50_000, ringEvents: 100_000, nodes: 100_000, leaks: 50_000, talkers: 20_000, throtUsers: 10_000,
	churners: MaxChurnActors}

type lcEvent struct {
	rec  read.Record
	aux  read.RecordAux
	kind string
}

// eventRing keeps the first and the last events of a long history.
type eventRing struct {
	first   []lcEvent
	last    []lcEvent // ring
	lastPos int
	total   int64
	half    int
}

// add keeps e if the history has room and *budget (events all histories may still keep) allows
// it; otherwise it is only counted (and reported as omitted).
func (r *eventRing) add(e lcEvent, budget *int) {
	r.total++
	if len(r.first) < r.half {
		if *budget > 0 {
			*budget--
			r.first = append(r.first, e)
		}
		return
	}
	if len(r.last) < r.half {
		if *budget > 0 {
			*budget--
			r.last = append(r.last, e)
		}
		return
	}
	r.last[r.lastPos] = e
	r.lastPos = (r.lastPos + 1) % len(r.last)
}

func (r *eventRing) all() ([]lcEvent, int64) {
	out := append([]lcEvent(nil), r.first...)
	out = append(out, r.last[r.lastPos:]...)
	out = append(out, r.last[:r.lastPos]...)
	return out, r.total - int64(len(out))
}

type nodeDeletion struct {
	ev             lcEvent
	leaseDeleted   *followUp
	leaseRecreated *followUp
	nodeRecreated  *followUp
	requests       int64
	first, last    int64
}

type followUp struct {
	rec read.Record
	how string
}

type episode struct {
	node             uint32
	del              *nodeDeletion // nil: the Node was already gone when the log starts
	first, last      int64
	requests         int64
	calls            map[callKey]int64
	ips, idents, uas []uint32
	leaseRecreations int64
	selfNotFound     int64
	ended            *followUp
}

type callKey struct {
	verb read.Verb
	res  uint32
	code int16
}

type nodeState struct {
	name      uint32
	seen      bool // a lifecycle event or a successful request on the Node was seen
	deleted   bool // deleted and not seen again
	deletedAt int64
	del       *nodeDeletion
	missing   bool // the kubelet's GET of its own Node answered 404 with no deletion seen
	ep        *episode
	hb        *heartbeat // its kubelet's lease renewals, once it made one or was throttled
	// back is what last showed the Node exists again (shared by its deletion and the zombie
	// episode it ended), kept until the next deletion so a create logged late can take its place.
	back *followUp
}

type leaseState struct {
	ns, name                        uint32
	ring                            eventRing
	creates, deletes, updateCreates int64
	leaks                           []*leakState
	pendDel                         *pendingDelete // the latest delete, until the lease is created again
	churners                        []uint32       // actors whose deletes of it were churn
}

type leakState struct {
	ns, name uint32
	cause    string
	created  lcEvent
	deletion *lcEvent
	status   string
	statusEv *followUp
}

type analyzer struct {
	in   *read.Interner
	opts Options
	p    *read.Pipeline

	from, to   int64
	wfrom, wto int64 // the same for watches only
	totals     Totals

	nodes     map[uint32]*nodeState
	leases    map[[2]uint32]*leaseState
	deletions []*nodeDeletion
	// nodeCreates are the creations of the Node of the Node filter (Report.NodeCreations).
	nodeCreates []lcEvent
	episodes    []*episode
	leaks       []*leakState

	uaMinor map[uint32]int // kubelet minor version by user agent, -1 if not a kubelet

	talkers   map[talkerKey]*talkerStat
	evictQ    []talkerKey // space-saving: keys of low counts, next to give their place
	throttled int64       // 429s in the request tables (after the report filters), exact
	apfWaited int64
	lim       limits
	ringLeft  int
	bounds    Bounds
	denied    deniedTable
	series    tseries
	userThrot map[uint32]*tseries
	churn     churnTable
	hb        heartbeats

	// IDs of interned strings the hot path compares against.
	idNodeLeaseNS, idLeasesRes, idNodesRes uint32
	idNodesStatusRes                       uint32
	fNode, fLease, fLeaseNS, fUser         uint32
	fNodeSet, fLeaseSet, fUserSet          bool
}

func newAnalyzer(in *read.Interner, opts Options, p *read.Pipeline) *analyzer {
	a := &analyzer{in: in, opts: opts, p: p,
		from: math.MaxInt64, to: math.MinInt64, wfrom: math.MaxInt64, wto: math.MinInt64,
		nodes: map[uint32]*nodeState{}, leases: map[[2]uint32]*leaseState{},
		lim: defaultLimits, ringLeft: defaultLimits.ringEvents,
		talkers: map[talkerKey]*talkerStat{}, denied: deniedTable{limit: MaxDeniedKeys}, userThrot: map[uint32]*tseries{}, uaMinor: map[uint32]int{}}
	a.idNodeLeaseNS = in.Intern([]byte(NodeLeaseNamespace))
	a.idLeasesRes = in.Intern([]byte("leases"))
	a.idNodesRes = in.Intern([]byte("nodes"))
	a.idNodesStatusRes = in.Intern([]byte("nodes/status"))
	a.hb.grace, a.hb.renew = int64(opts.NodeMonitorGracePeriod), int64(opts.LeaseRenewInterval)
	if opts.Node != "" {
		a.fNode, a.fNodeSet = in.Intern([]byte(opts.Node)), true
	}
	if opts.Lease != "" {
		ns, name := splitLease(opts.Lease)
		a.fLease, a.fLeaseSet = in.Intern([]byte(name)), true
		if ns != "" {
			a.fLeaseNS = in.Intern([]byte(ns))
		}
	}
	if opts.User != "" {
		a.fUser, a.fUserSet = in.Intern([]byte(opts.User)), true
	}
	return a
}

func splitLease(s string) (ns, name string) {
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			return s[:i], s[i+1:]
		}
	}
	return "", s
}

func is2xx(code int16) bool { return code >= 200 && code < 300 }

// process is called for every record in stageTimestamp order.
func (a *analyzer) process(r *read.Record) {
	// The window is that of short requests: a watch that ends in the log began long before it.
	if r.Verb != read.VerbWatch {
		a.from, a.to = min(a.from, r.Recv), max(a.to, r.Recv)
		a.hb.see(r)
	} else {
		a.wfrom, a.wto = min(a.wfrom, r.Recv), max(a.wto, r.Recv)
	}
	if r.Code == 429 {
		a.totals.Throttled++
	}
	if r.NodeOf != 0 {
		a.totals.NodeRequests++
	}
	if a.talkerMatch(r) {
		a.countTalker(r)
		if r.Flags&read.FlagDenied != 0 {
			a.denied.add(r)
		}
	}
	if r.Flags&read.FlagNode != 0 && r.Name != 0 {
		a.nodeEvent(r)
	}
	if r.Flags&read.FlagLease != 0 && r.Name != 0 {
		a.leaseEvent(r)
	}
	if r.NodeOf != 0 {
		// One lookup for both: past the node table's bound each record counts once.
		if n := a.node(r.NodeOf); n != nil {
			a.heartbeat(r, n)
			a.nodeRequest(r, n)
		}
	}
}

// talkerMatch applies the report filters to the request tables.
func (a *analyzer) talkerMatch(r *read.Record) bool {
	if a.fUserSet && r.User != a.fUser {
		return false
	}
	if a.fNodeSet && r.NodeOf != a.fNode && !(r.Flags&(read.FlagNode|read.FlagLease) != 0 && r.Name == a.fNode) {
		return false
	}
	if a.fLeaseSet && !(r.Flags&read.FlagLease != 0 && r.Name == a.fLease && (a.fLeaseNS == 0 || r.NS == a.fLeaseNS)) {
		return false
	}
	return true
}

func (a *analyzer) countTalker(r *read.Record) {
	k := talkerKey{user: r.User, ua: r.UA, res: r.Res, verb: r.Verb}
	t := a.talkers[k]
	if t == nil {
		t = a.newTalker(k)
	}
	t.requests++
	// A watch is counted when it ended: its start can lie long before the window.
	at := r.Recv
	if r.Verb == read.VerbWatch {
		at = r.Done
	}
	b := a.series.at(at)
	b.Requests++
	if r.Code == 429 {
		t.throttled++
		b.Throttled++
		a.throttled++
		us := a.userThrot[r.User]
		if us == nil && len(a.userThrot) < a.lim.throtUsers {
			us = &tseries{}
			a.userThrot[r.User] = us
		}
		if us != nil {
			us.at(at).Throttled++
		}
	} else if r.Code >= 500 {
		t.serverErrors++
	}
	if r.Verb != read.VerbWatch && r.Verb != read.VerbOther {
		d := r.Done - r.Recv
		t.latSum += d
		t.latN++
		if d > t.latMax {
			t.latMax = d
		}
		t.hist.add(d)
	}
	if r.APFWaitUS > 0 {
		w := int64(r.APFWaitUS)
		a.apfWaited++
		t.apfN++
		t.apfSum += w
		if w > t.apfMax {
			t.apfMax = w
		}
		b.APFWaitUS += w
		b.APFWaited++
	}
}

// newTalker makes room for a new request-table key. Past the limit it takes the place of an
// entry with one of the lowest counts and inherits its count as possible overcount (the
// space-saving algorithm: heavy hitters stay, and no count is ever under the truth).
func (a *analyzer) newTalker(k talkerKey) *talkerStat {
	if len(a.talkers) < a.lim.talkers {
		t := &talkerStat{}
		a.talkers[k] = t
		return t
	}
	if len(a.evictQ) == 0 {
		// The lowest quarter, found once for many evictions.
		keys := make([]talkerKey, 0, len(a.talkers))
		for key := range a.talkers {
			keys = append(keys, key)
		}
		sort.Slice(keys, func(i, j int) bool { return a.talkers[keys[i]].requests < a.talkers[keys[j]].requests })
		a.evictQ = append(a.evictQ[:0], keys[:max(1, len(keys)/4)]...)
	}
	old := a.evictQ[0]
	a.evictQ = a.evictQ[1:]
	t := a.talkers[old]
	delete(a.talkers, old)
	*t = talkerStat{requests: t.requests, requestsErr: t.requests}
	a.talkers[k] = t
	a.bounds.TalkerEvictions++
	return t
}

// node returns the state of a node, nil when the node is new and the limit is reached.
func (a *analyzer) node(name uint32) *nodeState {
	n := a.nodes[name]
	if n == nil {
		if len(a.nodes) >= a.lim.nodes {
			a.bounds.NodeEventsNotTracked++
			return nil
		}
		n = &nodeState{name: name}
		a.nodes[name] = n
	}
	return n
}

func actionOf(r *read.Record) string {
	switch r.Verb {
	case read.VerbCreate:
		return "create"
	case read.VerbDelete:
		return "delete"
	case read.VerbUpdate:
		return "update-created"
	case read.VerbPatch:
		return "patch-created"
	}
	return r.Verb.String()
}

func mkEvent(r *read.Record) lcEvent {
	e := lcEvent{rec: *r, kind: actionOf(r)}
	if r.Aux != nil {
		e.aux = *r.Aux
	}
	e.rec.Aux = nil
	return e
}

func (a *analyzer) nodeEvent(r *read.Record) {
	n := a.node(r.Name)
	if n == nil {
		if r.Verb == read.VerbDelete && read.IsLifecycleRecord(r) && is2xx(r.Code) {
			a.totals.NodeDeletions++
		}
		return
	}
	switch {
	case r.Verb == read.VerbDelete && read.IsLifecycleRecord(r):
		if !is2xx(r.Code) {
			return
		}
		a.totals.NodeDeletions++
		a.endEpisode(n, r, "Node deleted again")
		n.heartbeatGone()
		d := &nodeDeletion{ev: mkEvent(r)}
		a.deletions = append(a.deletions, d)
		n.seen, n.deleted, n.missing = true, true, false
		n.deletedAt, n.del, n.back = r.Done, d, nil
	case r.Verb == read.VerbCreate && read.IsLifecycleRecord(r):
		if is2xx(r.Code) && a.fNodeSet && r.Name == a.fNode && len(a.nodeCreates) < maxNodeCreates {
			a.nodeCreates = append(a.nodeCreates, mkEvent(r))
		}
		switch {
		case !is2xx(r.Code):
		case n.back != nil && n.back.how == howSeenAgain && r.Recv <= n.back.rec.Recv:
			// The audit log is written as responses complete: another client's request that
			// found the re-created Node can be logged before the create that made it, which
			// was received first. The create is what brought the Node back.
			*n.back = followUp{rec: *r, how: howRecreated}
		default:
			a.nodeBack(n, r, howRecreated)
		}
	case is2xx(r.Code) && r.Verb != read.VerbDelete && r.Verb != read.VerbDeleteCollection && r.Recv > n.deletedAt:
		// Any successful read or write of the Node proves it exists again (its creation
		// may be in a file that was not given).
		if n.deleted || n.missing {
			a.nodeBack(n, r, howSeenAgain)
		}
		n.seen = true
	}
}

// nodeBack records that Node n exists (again) as of r.
// How a Node came back: created, or used by a request that found it.
const (
	howRecreated = "Node re-created"
	howSeenAgain = "Node seen again"
)

func (a *analyzer) nodeBack(n *nodeState, r *read.Record, how string) {
	fu := &followUp{rec: *r, how: how}
	if n.del != nil && n.deleted && n.del.nodeRecreated == nil {
		n.del.nodeRecreated = fu
	}
	if n.ep != nil {
		n.ep.ended = fu
		n.ep = nil
	}
	if n.deleted || n.missing {
		n.back = fu
	}
	n.seen, n.deleted, n.missing = true, false, false
	// Leases leaked while the Node was gone will be adopted by its kubelet now.
	if ls := a.leases[[2]uint32{a.idNodeLeaseNS, n.name}]; ls != nil {
		for _, l := range ls.leaks {
			if l.status == LeakLeaked {
				l.status, l.statusEv = LeakNodeRecreated, &followUp{rec: *r, how: how}
			}
		}
	}
}

func (a *analyzer) endEpisode(n *nodeState, r *read.Record, how string) {
	if n.ep != nil {
		n.ep.ended = &followUp{rec: *r, how: how}
		n.ep = nil
	}
}

func (a *analyzer) leaseEvent(r *read.Record) {
	key := [2]uint32{r.NS, r.Name}
	if !read.IsLifecycleRecord(r) {
		// Not a lifecycle event; a successful write that shows an owner adopts a leak.
		if r.Flags&read.FlagOwnerPresent != 0 && is2xx(r.Code) {
			if ls := a.leases[key]; ls != nil {
				a.resolveLeaks(ls, r, LeakAdopted, "ownerReference set")
			}
		}
		if r.Verb == read.VerbUpdate && is2xx(r.Code) {
			a.totals.LeaseRenewals++
		}
		return
	}
	ls := a.leases[key]
	if ls == nil {
		if len(a.leases) >= a.lim.leases {
			// Past the limit: counted in the totals, not followed.
			a.bounds.LeaseEventsNotTracked++
			if is2xx(r.Code) {
				if r.Verb == read.VerbDelete {
					a.totals.LeaseDeletions++
					if r.NS == a.idNodeLeaseNS && a.leaseMatch(r.NS, r.Name) && a.userMatch(r.User) {
						// Whether it came back (a churn) is not known: the churn counts
						// become lower bounds.
						a.churn.notFollowed++
					}
				} else {
					a.totals.LeaseCreations++
				}
			}
			return
		}
		ls = &leaseState{ns: r.NS, name: r.Name}
		ls.ring.half = max(1, a.opts.EventsPerLease/2)
		a.leases[key] = ls
	}
	ev := mkEvent(r)
	ls.ring.add(ev, &a.ringLeft)
	if !is2xx(r.Code) {
		return
	}
	isNodeLease := r.NS == a.idNodeLeaseNS
	switch r.Verb {
	case read.VerbDelete:
		ls.deletes++
		a.totals.LeaseDeletions++
		a.resolveLeaks(ls, r, LeakDeleted, "lease deleted")
		if isNodeLease && a.leaseMatch(r.NS, r.Name) && a.userMatch(r.User) {
			a.churn.deleted(ls, r)
		}
		if isNodeLease {
			if n := a.nodes[r.Name]; n != nil && n.deleted && n.del != nil && n.del.leaseDeleted == nil {
				n.del.leaseDeleted = &followUp{rec: *r}
			}
		}
		return
	case read.VerbCreate:
		ls.creates++
	default:
		ls.updateCreates++
	}
	a.totals.LeaseCreations++
	if !isNodeLease {
		return
	}
	if a.churn.created(ls, r) {
		a.bounds.ChurnLeaseActorsNotKept++
	}
	n := a.nodes[r.Name]
	if n != nil && (n.deleted || n.missing) && r.Verb == read.VerbCreate && r.NodeOf == r.Name && a.kubeletMinor(r.UA) >= 29 {
		// A kubelet of 1.29 or later creates its lease only after a successful GET of its
		// Node (the GET may be outside the audit policy): the Node existed again.
		a.nodeBack(n, r, "kubelet >= 1.29 created its lease, so its Node existed")
	}
	l := &leakState{ns: r.NS, name: r.Name, created: ev, status: LeakLeaked}
	switch {
	case n != nil && n.deleted && r.Recv >= n.deletedAt:
		l.cause = CauseAfterNodeDeletion
		de := n.del.ev
		l.deletion = &de
		if n.del.leaseRecreated == nil {
			n.del.leaseRecreated = &followUp{rec: *r, how: ev.kind}
		}
	case n != nil && n.missing && r.NodeOf == r.Name:
		l.cause = CauseNodeMissing
	case r.Flags&read.FlagOwnerNone != 0:
		l.cause = CauseNoOwner
	default:
		if r.Flags&read.FlagOwnerPresent != 0 {
			a.resolveLeaks(ls, r, LeakAdopted, "re-created with an ownerReference")
		}
		return
	}
	if n != nil && n.ep != nil && r.NodeOf == r.Name {
		n.ep.leaseRecreations++
	}
	// One open leak per lease: a re-creation supersedes the previous one.
	a.resolveLeaks(ls, r, LeakDeleted, "lease re-created")
	ls.leaks = append(ls.leaks, l)
	if len(a.leaks) < a.lim.leaks {
		a.leaks = append(a.leaks, l)
	} else {
		a.bounds.LeaksNotListed++
	}
}

func (a *analyzer) resolveLeaks(ls *leaseState, r *read.Record, status, how string) {
	for _, l := range ls.leaks {
		if l.status == LeakLeaked {
			l.status, l.statusEv = status, &followUp{rec: *r, how: how}
		}
	}
	if len(ls.leaks) > 0 && ls.leaks[len(ls.leaks)-1].status != LeakLeaked {
		// Keep only the history that is reported; resolved leaks stay in a.leaks.
		ls.leaks = ls.leaks[:0]
	}
}

// nodeRequest follows the requests of kubelet identities (system:node:<name>).
func (a *analyzer) nodeRequest(r *read.Record, n *nodeState) {
	selfGet404 := r.Flags&read.FlagNode != 0 && r.Name == r.NodeOf && r.Verb == read.VerbGet && r.Code == 404
	switch {
	case n.deleted && r.Recv >= n.deletedAt:
	case n.missing:
	case !n.seen && selfGet404:
		n.missing = true
	default:
		return
	}
	ep := n.ep
	if ep == nil {
		ep = &episode{node: n.name, first: r.Recv, calls: map[callKey]int64{}}
		if n.deleted {
			ep.del = n.del
		}
		n.ep = ep
		a.episodes = append(a.episodes, ep)
	}
	ep.requests++
	if r.Recv < ep.first {
		ep.first = r.Recv
	}
	if r.Recv > ep.last {
		ep.last = r.Recv
	}
	if selfGet404 {
		ep.selfNotFound++
	}
	if len(ep.calls) < 64 {
		ep.calls[callKey{verb: r.Verb, res: r.Res, code: r.Code}]++
	} else if _, ok := ep.calls[callKey{verb: r.Verb, res: r.Res, code: r.Code}]; ok {
		ep.calls[callKey{verb: r.Verb, res: r.Res, code: r.Code}]++
	}
	ep.ips = addSmall(ep.ips, r.IP, 8)
	ep.idents = addSmall(ep.idents, r.Ident, 8)
	ep.uas = addSmall(ep.uas, r.UA, 4)
	if d := ep.del; d != nil {
		d.requests++
		if d.first == 0 || r.Recv < d.first {
			d.first = r.Recv
		}
		if r.Recv > d.last {
			d.last = r.Recv
		}
	}
}

func addSmall(s []uint32, v uint32, limit int) []uint32 {
	if v == 0 {
		return s
	}
	for _, x := range s {
		if x == v {
			return s
		}
	}
	if len(s) < limit {
		s = append(s, v)
	}
	return s
}

func (a *analyzer) where(r *read.Record) string { return a.p.Where(r) }

// kubeletMinor returns the minor version of a "kubelet/v1.29.0 (linux/amd64) ..." user agent,
// or -1 when the agent is not a kubelet of major version 1.
func (a *analyzer) kubeletMinor(ua uint32) int {
	if m, ok := a.uaMinor[ua]; ok {
		return m
	}
	m := parseKubeletMinor(a.in.Str(ua))
	if len(a.uaMinor) >= 4096 {
		clear(a.uaMinor)
	}
	a.uaMinor[ua] = m
	return m
}

func parseKubeletMinor(ua string) int {
	rest, ok := strings.CutPrefix(ua, "kubelet/v1.")
	if !ok {
		return -1
	}
	m := 0
	n := 0
	for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' && n < 4 {
		m = m*10 + int(rest[n]-'0')
		n++
	}
	if n == 0 {
		return -1
	}
	return m
}
