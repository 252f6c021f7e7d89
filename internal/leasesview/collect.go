package leasesview

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1alpha2 "k8s.io/api/coordination/v1alpha2"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/nodekeeper/nodekeeper/internal/kube"
	"github.com/nodekeeper/nodekeeper/internal/lease"
)

// DefaultChunkSize is the LIST page size of `nodekeeper leases`: ten times kubectl's 500. The
// listing reads every lease, and most of its time is spent waiting on the API server once per
// page, not decoding: at 100,000 leases, pages of 5,000 made the whole command about three times
// faster than pages of 500 while nodekeeper's own CPU time hardly changed (docs/leases.md).
// Each page is classified and dropped before the next is read, so memory grows by one page of
// protobuf (about 2 MB), not with the cluster.
const DefaultChunkSize int64 = 5000

// DefaultRateLimit is the client-side limit of `nodekeeper leases`: its requests are sequential
// pages, so a limit only matters to --watch's relists; client-go's own default (5 QPS) would
// throttle a paginated LIST of a large cluster to 2,500 leases a second.
var DefaultRateLimit = kube.RateLimit{QPS: 50, Burst: 100}

// Clients are the API clients a listing uses: leases in protobuf (several times cheaper to decode
// than JSON at 100,000 leases), Nodes as metadata only (the join needs a Node's name and UID,
// never its status, which is the bulk of a Node object).
type Clients = kube.Clients

// NewClients builds clients from cfg as `nodekeeper leases` does with its default flags (user
// agent, DefaultRateLimit; kube.Options does it from the flags), for programs and tests that
// have a rest.Config rather than flags.
func NewClients(cfg *rest.Config) (*Clients, error) {
	return kube.NewClients(kube.Configure(cfg, "leases", DefaultRateLimit))
}

// Options select and tune a listing.
type Options struct {
	// Namespace restricts the listing; empty means all namespaces.
	Namespace string
	// LabelSelector keeps only the leases whose own labels match (kubectl's -l); the API server
	// applies it. Empty keeps all.
	LabelSelector string
	// Classes keeps only leases of these classes in the items; empty keeps all. The summary
	// always counts every listed lease.
	Classes []lease.Class
	// ChunkSize is the LIST page size; zero means DefaultChunkSize.
	ChunkSize int64
	// Lease tunes the classification (grace period).
	Lease lease.Options
	// TableReasons leaves out the reasons that the tables print only with -o wide: those of every
	// lease outside the other-leases table, the one table whose REASON column is not wide-only.
	// Formatting a reason for each of 100,000 node leases is most of the classification's cost.
	// Reports printed as JSON, YAML or -o wide, and --watch, need every reason.
	TableReasons bool
	// Clock is the time source; nil means the real clock. Tests inject a fake one
	// (k8s.io/utils/clock/testing); --watch also times its rechecks with it.
	Clock clock.WithTicker
}

func (o Options) clock() clock.WithTicker {
	if o.Clock != nil {
		return o.Clock
	}
	return clock.RealClock{}
}

func (o Options) now() time.Time { return o.clock().Now() }

func (o Options) chunk() int64 {
	if o.ChunkSize <= 0 {
		return DefaultChunkSize
	}
	return o.ChunkSize
}

// Validate reports options that cannot be used.
func (o Options) Validate() error {
	if o.ChunkSize < 0 {
		return fmt.Errorf("chunk size must not be negative, got %d", o.ChunkSize)
	}
	if err := parseSelector("-l/--selector", o.LabelSelector); err != nil {
		return err
	}
	return o.Lease.Validate()
}

// needsNodes reports whether the namespace selection includes node leases, which cannot be
// classified without knowing the Nodes.
func (o Options) needsNodes() bool {
	return o.Namespace == "" || o.Namespace == lease.NodeLeaseNamespace
}

// filter is the --class selection as a set; nil keeps everything.
type filter map[lease.Class]bool

func newFilter(classes []lease.Class) filter {
	if len(classes) == 0 {
		return nil
	}
	f := filter{}
	for _, c := range classes {
		f[c] = true
	}
	return f
}

func (f filter) keep(c lease.Class) bool { return f == nil || f[c] }

// classifyWith is the one call site of lease.Classify in this package: it looks up the Node named
// like a node lease and turns the verdict into a row. With tableReasons the reason is formatted
// only for a lease whose table prints it (see Options.TableReasons).
func classifyWith(l *coordinationv1.Lease, nodeUID func(name string) (types.UID, bool), now time.Time, opts lease.Options, tableReasons bool) Item {
	var ref *lease.NodeRef
	if l.Namespace == lease.NodeLeaseNamespace {
		if uid, ok := nodeUID(l.Name); ok {
			ref = &lease.NodeRef{Name: l.Name, UID: uid}
		}
	}
	if tableReasons {
		if v := lease.ClassOf(l, ref, now, opts); sectionOf(v.Class) != kindOther {
			return NewItem(l, ref, v)
		}
	}
	return NewItem(l, ref, lease.Classify(l, ref, now, opts))
}

// List lists, classifies and summarises the leases selected by opts, page by page.
//
// The Nodes, the LeaseCandidates and the leases are listed side by side (see joinPages): the
// command then takes about as long as its longest LIST instead of their sum. Either way the two
// LISTs are not one snapshot: a Node that registers while they run can make its brand-new lease
// look Node-less for this one report, and a Node deleted meanwhile can leave its lease looking
// like it still has one. Neither makes a lease leaked: a lease is leaked only when it is ownerless
// and idle for the grace period, so its Node was gone long before the listing.
func List(ctx context.Context, c *Clients, opts Options) (*Report, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	candidates := make(chan candidateResult, 1)
	go func() {
		var res candidateResult
		res.api, res.items, res.err = listCandidates(ctx, c, opts)
		candidates <- res
	}()
	b := newBuilder(opts, nil, opts.now())
	err := joinPages(ctx, c, opts.Namespace, opts.LabelSelector, opts.needsNodes(), opts.chunk(), func(nodes map[string]types.UID, list *coordinationv1.LeaseList) {
		b.nodes = nodes
		if rem := list.RemainingItemCount; rem != nil {
			b.reserve(len(list.Items) + int(*rem))
		}
		for i := range list.Items {
			b.add(&list.Items[i])
		}
	})
	if err != nil {
		return nil, err // the deferred cancel stops the LeaseCandidate listing; its result is dropped
	}
	r := b.report()
	res := <-candidates
	if res.err != nil {
		return nil, res.err
	}
	r.LeaseCandidateAPI, r.LeaseCandidates = res.api, res.items
	return r, nil
}

// joinPages lists the leases of namespace whose labels match selector and, with nodes, the
// metadata of every Node beside them, and hands each lease page to page together with the name →
// UID of every Node (nil without nodes), in the order the pages came. The two paginated LISTs run
// at once, so that the API server serves (and this process decodes) both together; a lease page
// that arrives before the last Node page waits, as it was decoded, until the Nodes are complete,
// since a node lease cannot be classified against part of them. It returns the first error of
// either LIST (a Node LIST refused by RBAC says why Nodes are needed), after both have stopped.
func joinPages(ctx context.Context, c *Clients, namespace, selector string, nodes bool, chunk int64, page func(nodes map[string]types.UID, list *coordinationv1.LeaseList)) error {
	if !nodes {
		return kube.ListLeasesSelected(ctx, c.Kube.CoordinationV1(), namespace, selector, chunk, func(list *coordinationv1.LeaseList) error {
			page(nil, list)
			return nil
		})
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		once  sync.Once
		first error // the first failure; the other LIST then stops on the cancelled context
	)
	fail := func(err error) {
		once.Do(func() { first = err; cancel() })
	}
	var uids map[string]types.UID
	nodesDone := make(chan struct{})
	go func() {
		defer close(nodesDone)
		var err error
		if uids, err = ListNodeUIDs(ctx, c.Metadata, chunk); err != nil {
			fail(err)
		}
	}()
	var held []*coordinationv1.LeaseList
	complete := func() bool {
		select {
		case <-nodesDone:
			return uids != nil
		default:
			return false
		}
	}
	err := kube.ListLeasesSelected(ctx, c.Kube.CoordinationV1(), namespace, selector, chunk, func(list *coordinationv1.LeaseList) error {
		if !complete() {
			held = append(held, list)
			return nil
		}
		for _, h := range held {
			page(uids, h)
		}
		held = nil
		page(uids, list)
		return nil
	})
	if err != nil {
		fail(err)
	}
	<-nodesDone
	if first != nil {
		return first
	}
	for _, h := range held {
		page(uids, h)
	}
	return nil
}

// Build classifies a complete set of leases against nodes (name → UID of every Node) at opts'
// clock. List does the same page by page; Build serves tests and the --watch snapshot.
func Build(leases []*coordinationv1.Lease, nodes map[string]types.UID, opts Options) *Report {
	b := newBuilder(opts, nodes, opts.now())
	for _, l := range leases {
		b.add(l)
	}
	return b.report()
}

// builder accumulates a report one lease at a time, keeping only the rows --class selects.
type builder struct {
	opts  Options
	nodes map[string]types.UID
	now   time.Time
	keep  filter
	sum   summarizer
	items []Item
}

func newBuilder(opts Options, nodes map[string]types.UID, now time.Time) *builder {
	return &builder{opts: opts, nodes: nodes, now: now, keep: newFilter(opts.Classes)}
}

func (b *builder) nodeUID(name string) (types.UID, bool) {
	uid, ok := b.nodes[name]
	return uid, ok
}

// reserve sizes the rows once from the API server's count of remaining items, instead of
// letting append double the slice (and briefly hold both copies) a dozen times.
func (b *builder) reserve(total int) {
	if b.keep == nil && total > cap(b.items) {
		items := make([]Item, len(b.items), total)
		copy(items, b.items)
		b.items = items
	}
}

func (b *builder) add(l *coordinationv1.Lease) {
	it := classifyWith(l, b.nodeUID, b.now, b.opts.Lease, b.opts.TableReasons)
	b.sum.add(&it)
	if b.keep.keep(it.Class) {
		b.items = append(b.items, it)
	}
}

func (b *builder) report() *Report {
	SortItems(b.items)
	r := &Report{
		TypeMeta:    newTypeMeta(ReportKind),
		GeneratedAt: metav1.NewTime(b.now),
		Namespace:   b.opts.Namespace,
		GracePeriod: metav1.Duration{Duration: effectiveGrace(b.opts.Lease)},
		ClassFilter: b.opts.Classes,
		Summary:     b.sum.summary(len(b.items)),
		Items:       b.items,
	}
	if r.Items == nil {
		r.Items = []Item{}
	}
	return r
}

// effectiveGrace reports the grace period the classification uses for opts.
func effectiveGrace(o lease.Options) time.Duration {
	if o.GracePeriod <= 0 {
		return lease.DefaultGracePeriod
	}
	return o.GracePeriod
}

// SortItems orders items by class (summary order: leaked, zombie, then the taxonomy's order),
// then namespace, then name.
//
// It is linear for a listing's rows, which come in the API server's order (namespace, then name):
// the rows are bucketed by class rank, keeping their order, and a bucket is sorted only when it
// is out of order. An Item is a few hundred bytes, so the order is found on indices and each item
// is then moved once.
func SortItems(items []Item) {
	ranks := make([]int32, len(items))
	starts := make([]int, len(classRank)+2) // starts[r+1] counts rank r, then becomes where it starts
	for i := range items {
		ranks[i] = int32(rank(items[i].Class))
		starts[ranks[i]+1]++
	}
	for r := 1; r < len(starts); r++ {
		starts[r] += starts[r-1]
	}
	order := make([]int32, len(items))
	next := slices.Clone(starts)
	for i, r := range ranks {
		order[next[r]] = int32(i)
		next[r]++
	}
	byItem := func(i, j int32) int { return compareItems(&items[i], &items[j]) }
	for r := 0; r+1 < len(starts); r++ {
		if bucket := order[starts[r]:starts[r+1]]; !slices.IsSortedFunc(bucket, byItem) {
			slices.SortFunc(bucket, byItem)
		}
	}
	permute(items, order)
}

// compareItems is SortItems' order. Most neighbours share a class (a cluster's node leases are
// nearly all healthy), so the class ranks, a map lookup each, are compared only when the classes
// differ.
func compareItems(a, b *Item) int {
	if a.Class != b.Class {
		if ra, rb := rank(a.Class), rank(b.Class); ra != rb {
			return cmp.Compare(ra, rb)
		}
		return strings.Compare(string(a.Class), string(b.Class))
	}
	if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// permute rearranges items in place so that items[k] becomes the old items[order[k]], following
// each cycle of the permutation once (order is consumed: its entries are set to -1).
func permute(items []Item, order []int32) {
	for start := range order {
		if order[start] < 0 {
			continue
		}
		held := items[start]
		k := start
		for {
			src := int(order[k])
			order[k] = -1
			if src == start {
				items[k] = held
				break
			}
			items[k] = items[src]
			k = src
		}
	}
}

// summarizer counts items as they stream past, so that items filtered out by --class are counted
// without being kept.
type summarizer struct {
	counts map[lease.Class]int
	api    *APIServers
	total  int
}

func (s *summarizer) add(it *Item) {
	if s.counts == nil {
		s.counts = map[lease.Class]int{}
	}
	s.total++
	s.counts[it.Class]++
	if it.Class == lease.APIServerIdentity {
		if s.api == nil {
			s.api = &APIServers{}
		}
		if it.Expired {
			s.api.Stale++
			s.api.StaleIdentities = append(s.api.StaleIdentities, it.Namespace+"/"+it.Name)
		} else {
			s.api.Live++
		}
	}
}

func (s *summarizer) summary(shown int) Summary {
	out := Summary{Total: s.total, Shown: shown, APIServers: s.api}
	if out.APIServers != nil {
		sort.Strings(out.APIServers.StaleIdentities)
	}
	left := map[lease.Class]int{}
	for c, n := range s.counts {
		left[c] = n
	}
	for _, c := range summaryOrder() {
		cc := ClassCount{Class: c, Count: left[c]}
		if cc.Count > 0 && needsExplanation(c) {
			cc.Explanation = c.Explain()
		}
		out.Counts = append(out.Counts, cc)
		delete(left, c)
	}
	// A class this package does not know (the taxonomy grew) is still counted, never dropped.
	var extra []lease.Class
	for c := range left {
		extra = append(extra, c)
	}
	sort.Slice(extra, func(i, j int) bool { return extra[i] < extra[j] })
	for _, c := range extra {
		out.Counts = append(out.Counts, ClassCount{Class: c, Count: left[c], Explanation: c.Explain()})
	}
	return out
}

// Summarize builds the summary of a complete set of items.
func Summarize(items []Item) Summary {
	var s summarizer
	for i := range items {
		s.add(&items[i])
	}
	return s.summary(len(items))
}

// ListNodeUIDs returns the name → UID of every Node from a paginated, metadata-only LIST: the
// only facts about a Node the lease classification uses.
func ListNodeUIDs(ctx context.Context, meta metadata.Interface, chunk int64) (map[string]types.UID, error) {
	nodes := map[string]types.UID{}
	err := kube.ListNodes(ctx, meta, chunk, func(list *metav1.PartialObjectMetadataList) error {
		for i := range list.Items {
			nodes[list.Items[i].Name] = list.Items[i].UID
		}
		return nil
	})
	if apierrors.IsForbidden(err) {
		return nil, fmt.Errorf("node leases cannot be classified without listing Nodes (select another namespace with -n to skip them): %w", err)
	}
	if err != nil {
		return nil, err
	}
	return nodes, nil
}

// candidateVersions are the coordination.k8s.io versions that have served LeaseCandidate, newest
// first. The API is off by default (CoordinatedLeaderElection), so most clusters serve none.
var candidateVersions = []string{"v1beta1", "v1alpha2"}

// servedCandidateVersion asks discovery which version serves leasecandidates; "" when none.
func servedCandidateVersion(c *Clients) (string, error) {
	for _, v := range candidateVersions {
		gv := "coordination.k8s.io/" + v
		res, err := c.Kube.Discovery().ServerResourcesForGroupVersion(gv)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("discovering %s: %w", gv, err)
		}
		for _, r := range res.APIResources {
			if r.Name == "leasecandidates" {
				return gv, nil
			}
		}
	}
	return "", nil
}

// candidateResult is what listCandidates found, handed from its goroutine to List.
type candidateResult struct {
	api   string
	items []Candidate
	err   error
}

// listCandidates lists the LeaseCandidate objects where the API is served, sorted, with the
// group/version they were read from ("" and none where it is not). They are few (one per
// component instance), but the LIST is paginated all the same.
func listCandidates(ctx context.Context, c *Clients, opts Options) (string, []Candidate, error) {
	gv, err := servedCandidateVersion(c)
	if err != nil || gv == "" {
		return "", nil, err
	}
	var out []Candidate
	add := func(meta *metav1.ObjectMeta, spec *coordinationv1beta1.LeaseCandidateSpec) {
		out = append(out, newCandidate(meta, spec))
	}
	switch gv {
	case "coordination.k8s.io/v1beta1":
		err = kube.List(ctx, "leasecandidates", metav1.ListOptions{Limit: opts.chunk()}, c.Kube.CoordinationV1beta1().LeaseCandidates(opts.Namespace).List, func(l *coordinationv1beta1.LeaseCandidateList) error {
			for i := range l.Items {
				add(&l.Items[i].ObjectMeta, &l.Items[i].Spec)
			}
			return nil
		})
	case "coordination.k8s.io/v1alpha2":
		err = kube.List(ctx, "leasecandidates", metav1.ListOptions{Limit: opts.chunk()}, c.Kube.CoordinationV1alpha2().LeaseCandidates(opts.Namespace).List, func(l *coordinationv1alpha2.LeaseCandidateList) error {
			for i := range l.Items {
				// The two versions' specs have the same fields.
				spec := coordinationv1beta1.LeaseCandidateSpec(l.Items[i].Spec)
				add(&l.Items[i].ObjectMeta, &spec)
			}
			return nil
		})
	default:
		err = errors.New("unsupported LeaseCandidate version " + gv)
	}
	if err != nil {
		return "", nil, err
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.LeaseName != b.LeaseName {
			return a.LeaseName < b.LeaseName
		}
		return a.Name < b.Name
	})
	return gv, out, nil
}

// newCandidate is a LeaseCandidate row, from any served version (v1alpha2's spec converts to
// v1beta1's).
func newCandidate(meta *metav1.ObjectMeta, spec *coordinationv1beta1.LeaseCandidateSpec) Candidate {
	return Candidate{
		Namespace: meta.Namespace, Name: meta.Name, LeaseName: spec.LeaseName,
		BinaryVersion: spec.BinaryVersion, EmulationVersion: spec.EmulationVersion,
		Strategy: string(spec.Strategy), RenewTime: spec.RenewTime, PingTime: spec.PingTime,
		CreationTimestamp: meta.CreationTimestamp,
	}
}
