package leasesview

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodekeeper/nodekeeper/internal/kube"
	"github.com/nodekeeper/nodekeeper/internal/lease"
)

// Sink receives what Watch produces: one snapshot, then changes as they happen.
type Sink interface {
	Snapshot(r *Report) error
	Change(c *Change) error
}

// Watch prints a snapshot (like List) and then streams every change of class, holder or expiry,
// every new lease and every deleted one, until ctx ends. Renewals that change nothing else are not
// changes: a 5,000-node cluster renews 500 leases a second.
//
// Class changes have three causes, and all three are followed: a lease event (renewed, adopted,
// re-created), a Node event (a Node deleted or re-created changes its lease's class without any
// lease write), and the clock alone (healthy → stale when a kubelet stops, zombie → leaked at the
// end of the grace period), for which the classification's RecheckAt schedules a timer.
//
// Watch returns nil when ctx is cancelled, or the first error writing to the sink.
func Watch(ctx context.Context, c *Clients, opts Options, sink Sink) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	// The snapshot comes from a paginated LIST: it fails fast and clearly on RBAC errors, and the
	// unfiltered rows seed the tracker so that the informers' initial sync reports only what
	// changed in between.
	all := opts
	all.Classes = nil
	full, err := List(ctx, c, all)
	if err != nil {
		return err
	}
	if err := sink.Snapshot(filterReport(full, opts.Classes)); err != nil {
		return err
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	// One informer rather than a SharedInformerFactory, whose ForResource links every API group's.
	leaseInf := kube.LeaseInformer(c.Kube, opts.Namespace,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
		func(o *metav1.ListOptions) { o.LabelSelector = opts.LabelSelector })
	if err := leaseInf.SetTransform(kube.StripLease); err != nil {
		return err
	}
	synced := []cache.InformerSynced{leaseInf.HasSynced}
	t := newTracker(opts, sink, func(err error) { cancel(err) })
	t.getLease = func(key string) (*coordinationv1.Lease, bool) {
		obj, ok, err := leaseInf.GetIndexer().GetByKey(key)
		if err != nil || !ok {
			return nil, false
		}
		l, ok := obj.(*coordinationv1.Lease)
		return l, ok
	}
	t.listKeys = leaseInf.GetIndexer().ListKeys
	t.nodeUID = func(string) (types.UID, bool) { return "", false }
	failOnForbidden := func(_ context.Context, _ *cache.Reflector, err error) {
		// A LIST that was allowed a moment ago but a WATCH that is not would retry forever.
		if apierrors.IsForbidden(err) {
			cancel(fmt.Errorf("watching: %w", err))
			return
		}
		klog.ErrorS(err, "Watch interrupted; the informer retries")
	}
	if err := leaseInf.SetWatchErrorHandlerWithContext(failOnForbidden); err != nil {
		return err
	}
	if _, err := leaseInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { t.onEvent(objectKey(obj)) },
		UpdateFunc: func(_, obj any) { t.onEvent(objectKey(obj)) },
		DeleteFunc: func(obj any) { t.onEvent(objectKey(obj)) },
	}); err != nil {
		return err
	}
	var metaFactory metadatainformer.SharedInformerFactory
	if opts.needsNodes() {
		metaFactory = metadatainformer.NewSharedInformerFactoryWithOptions(c.Metadata, 0, metadatainformer.WithTransform(stripNode))
		nodeInf := metaFactory.ForResource(kube.NodesResource).Informer()
		if err := nodeInf.SetWatchErrorHandlerWithContext(failOnForbidden); err != nil {
			return err
		}
		t.nodeUID = func(name string) (types.UID, bool) {
			obj, ok, err := nodeInf.GetIndexer().GetByKey(name)
			if err != nil || !ok {
				return "", false
			}
			m, ok := obj.(*metav1.PartialObjectMetadata)
			if !ok {
				return "", false
			}
			return m.UID, true
		}
		// A Node event changes the class of the lease named like it, with no lease write.
		onNode := func(obj any) {
			if name := objectKey(obj); name != "" {
				t.onEvent(key(lease.NodeLeaseNamespace, name))
			}
		}
		if _, err := nodeInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: onNode, UpdateFunc: func(_, obj any) { onNode(obj) }, DeleteFunc: onNode,
		}); err != nil {
			return err
		}
		synced = append(synced, nodeInf.HasSynced)
	}
	t.seed(full.Items)

	var running sync.WaitGroup
	defer running.Wait() // after ctx ends: every return below follows it
	running.Go(func() { leaseInf.RunWithContext(ctx) })
	if metaFactory != nil {
		metaFactory.Start(ctx.Done())
		defer metaFactory.Shutdown()
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return watchEnd(ctx)
	}
	// Until both caches are complete a lease could be classified against a partial Node list
	// (a false zombie), so events are held back until now and then everything is reconciled at once.
	t.start()
	go t.runRechecks(ctx)
	<-ctx.Done()
	return watchEnd(ctx)
}

// watchEnd turns the end of a watch into its result: nil for a plain cancellation (Ctrl-C),
// the cause otherwise.
func watchEnd(ctx context.Context) error {
	cause := context.Cause(ctx)
	if errors.Is(cause, context.Canceled) || errors.Is(cause, context.DeadlineExceeded) {
		return nil
	}
	return cause
}

// filterReport returns r with only the items --class selects (the summary already covers all).
func filterReport(r *Report, classes []lease.Class) *Report {
	keep := newFilter(classes)
	out := *r
	out.ClassFilter = classes
	out.Items = []Item{}
	for _, it := range r.Items {
		if keep.keep(it.Class) {
			out.Items = append(out.Items, it)
		}
	}
	out.Summary.Shown = len(out.Items)
	return &out
}

func objectKey(obj any) string {
	k, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return ""
	}
	return k
}

// stripNode keeps only what the join uses: a Node's name and UID.
func stripNode(obj any) (any, error) {
	if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
		return &metav1.PartialObjectMetadata{TypeMeta: m.TypeMeta, ObjectMeta: metav1.ObjectMeta{
			Name: m.Name, UID: m.UID, ResourceVersion: m.ResourceVersion,
		}}, nil
	}
	return obj, nil
}

// tracker holds the last reported row of every lease and turns events and timers into Changes.
type tracker struct {
	mu    sync.Mutex
	opts  Options
	clk   clock.Clock
	keep  filter
	sink  Sink
	fail  func(error)
	ready bool
	last  map[string]Item
	// due is the moment each lease's row changes by the clock alone; rechecks delays each key
	// until then (client-go's delaying queue, as the controller's requeue-at-deadline).
	due      map[string]time.Time
	rechecks workqueue.TypedDelayingInterface[string]

	getLease func(key string) (*coordinationv1.Lease, bool)
	listKeys func() []string
	nodeUID  func(name string) (types.UID, bool)
}

func newTracker(opts Options, sink Sink, fail func(error)) *tracker {
	clk := opts.clock()
	return &tracker{
		opts: opts, clk: clk, keep: newFilter(opts.Classes), sink: sink, fail: fail,
		last: map[string]Item{}, due: map[string]time.Time{},
		rechecks: workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[string]{Clock: clk}),
	}
}

// seed records the snapshot's rows as already reported.
func (t *tracker) seed(items []Item) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, it := range items {
		t.last[key(it.Namespace, it.Name)] = it
	}
}

// start reconciles every lease known from the snapshot or the cache, then lets events through.
func (t *tracker) start() {
	t.mu.Lock()
	defer t.mu.Unlock()
	keys := map[string]bool{}
	for k := range t.last {
		keys[k] = true
	}
	for _, k := range t.storeKeys() {
		keys[k] = true
	}
	for k := range keys {
		t.reconcileLocked(k)
	}
	t.ready = true
}

func (t *tracker) storeKeys() []string {
	if t.listKeys != nil {
		return t.listKeys()
	}
	return nil
}

func (t *tracker) onEvent(k string) {
	if k == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ready {
		t.reconcileLocked(k)
	}
}

// reconcileLocked classifies the lease at key now and reports it if it appeared, disappeared or
// changed class, holder or expiry since it was last reported.
func (t *tracker) reconcileLocked(k string) {
	now := t.clk.Now()
	prev, had := t.last[k]
	l, ok := t.getLease(k)
	if !ok {
		if had {
			delete(t.last, k)
			delete(t.due, k)
			t.send(Deleted, prev.Class, prev, now)
		}
		return
	}
	it := classifyWith(l, t.nodeUID, now, t.opts.Lease, false)
	t.last[k] = it
	t.schedule(k, &it, now)
	switch {
	case !had:
		t.send(Added, "", it, now)
	case prev.Class != it.Class || prev.Expired != it.Expired || prev.holder() != it.holder():
		t.send(Modified, prev.Class, it, now)
	}
}

func (t *tracker) send(typ string, from lease.Class, it Item, now time.Time) {
	if !t.keep.keep(it.Class) && !(from != "" && t.keep.keep(from)) {
		return
	}
	err := t.sink.Change(&Change{TypeMeta: newTypeMeta(ChangeKind), Type: typ, Time: metav1.NewTime(now), From: from, Item: it})
	if err != nil {
		t.fail(fmt.Errorf("writing a change: %w", err))
	}
}

// schedule arms a timer for the moment the row changes by the clock alone: the classification's
// RecheckAt (healthy → stale, zombie → leaked), or for leader and identity leases the moment they
// expire (when the Expired column flips; their class does not change).
func (t *tracker) schedule(k string, it *Item, now time.Time) {
	var at time.Time
	switch {
	case it.RecheckAt != nil:
		at = it.RecheckAt.Time
	case it.Namespace != lease.NodeLeaseNamespace && !it.Expired && it.RenewTime != nil && it.DurationSeconds != nil:
		at = it.RenewTime.Add(time.Duration(*it.DurationSeconds) * time.Second)
	}
	if at.IsZero() || !at.After(now) {
		delete(t.due, k)
		return
	}
	if cur, ok := t.due[k]; ok && cur.Equal(at) {
		return
	}
	t.due[k] = at
	t.rechecks.AddAfter(k, at.Sub(now))
}

// recheck reconciles the lease at k if its recheck time has come. A key can come out of the
// queue early, when its time was moved later after it was queued (the queue keeps the earliest
// time of a key): it is then queued again for the time that holds now.
func (t *tracker) recheck(k string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	at, ok := t.due[k]
	if !ok {
		return
	}
	now := t.clk.Now()
	if at.After(now) {
		t.rechecks.AddAfter(k, at.Sub(now))
		return
	}
	delete(t.due, k)
	t.reconcileLocked(k)
}

// runRechecks reconciles leases as their recheck times come, until ctx ends.
func (t *tracker) runRechecks(ctx context.Context) {
	go func() {
		<-ctx.Done()
		t.rechecks.ShutDown()
	}()
	for {
		k, shutdown := t.rechecks.Get()
		if shutdown {
			return
		}
		t.recheck(k)
		t.rechecks.Done(k)
	}
}

// pendingRechecks is how many leases wait for a recheck.
func (t *tracker) pendingRechecks() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.due)
}
