package lease

import (
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const nodeName = "ip-10-0-1-1.ec2.internal"

// nodeLease builds a kubelet-shaped lease: holder = name, 40 s duration, created a day ago.
func nodeLease(mods ...func(*coordinationv1.Lease)) *coordinationv1.Lease {
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Name: nodeName, Namespace: NodeLeaseNamespace, UID: "lease-uid",
			CreationTimestamp: metav1.NewTime(now.Add(-24 * time.Hour)),
		},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(nodeName),
			LeaseDurationSeconds: ptr.To[int32](40),
			RenewTime:            ptr.To(metav1.NewMicroTime(now.Add(-5 * time.Second))),
		},
	}
	for _, m := range mods {
		m(l)
	}
	return l
}

func renewedAgo(d time.Duration) func(*coordinationv1.Lease) {
	return func(l *coordinationv1.Lease) { l.Spec.RenewTime = ptr.To(metav1.NewMicroTime(now.Add(-d))) }
}

func ownedBy(refs ...metav1.OwnerReference) func(*coordinationv1.Lease) {
	return func(l *coordinationv1.Lease) { l.OwnerReferences = refs }
}

func nodeRef(uid types.UID) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: nodeName, UID: uid}
}

var liveNode = &NodeRef{Name: nodeName, UID: "node-uid-1"}

func TestClassify(t *testing.T) {
	hour := Options{GracePeriod: time.Hour}
	tests := []struct {
		name        string
		lease       *coordinationv1.Lease
		node        *NodeRef
		opts        Options
		want        Class
		wantExpired bool
		wantRecheck time.Time // zero = none
		reasonHas   string
	}{
		{
			name:  "healthy: owned by its Node, renewed 5s ago",
			lease: nodeLease(ownedBy(nodeRef("node-uid-1"))), node: liveNode, opts: hour,
			want: Healthy, wantRecheck: now.Add(35 * time.Second), reasonHas: "renewed 5s ago",
		},
		{
			name:  "stale: owned by its Node, not renewed for 2m",
			lease: nodeLease(ownedBy(nodeRef("node-uid-1")), renewedAgo(2*time.Minute)), node: liveNode, opts: hour,
			want: Stale, wantExpired: true, reasonHas: "expired",
		},
		{
			name:  "stale exactly at the deadline: renewTime+duration == now",
			lease: nodeLease(ownedBy(nodeRef("node-uid-1")), renewedAgo(40*time.Second)), node: liveNode, opts: hour,
			want: Stale, wantExpired: true,
		},
		{
			name:  "unowned: Node exists, no ownerReference (lease created before its Node registered)",
			lease: nodeLease(), node: liveNode, opts: hour,
			want: Unowned, reasonHas: "no ownerReference",
		},
		{
			name:  "unowned even when long expired: adoption does not depend on time",
			lease: nodeLease(renewedAgo(48 * time.Hour)), node: liveNode, opts: hour,
			want: Unowned, wantExpired: true,
		},
		{
			name:  "stale-owner: Node re-created under the same name",
			lease: nodeLease(ownedBy(nodeRef("node-uid-OLD"))), node: liveNode, opts: hour,
			want: StaleOwner, reasonHas: "re-created",
		},
		{
			name:  "owner-missing: owner Node gone, pending upstream GC",
			lease: nodeLease(ownedBy(nodeRef("node-uid-1"))), node: nil, opts: hour,
			want: OwnerMissing, reasonHas: "pending upstream garbage collection",
		},
		{
			name:  "owner-missing even when long idle: never leaked while it has an owner",
			lease: nodeLease(ownedBy(nodeRef("node-uid-1")), renewedAgo(72*time.Hour)), node: nil, opts: hour,
			want: OwnerMissing, wantExpired: true,
		},
		{
			name:  "zombie: no Node, no owner, renewed 5s ago (a lease in kube-node-lease whose name is no Node's)",
			lease: nodeLease(), node: nil, opts: hour,
			want: Zombie, wantRecheck: now.Add(-5*time.Second + time.Hour), reasonHas: "renewing it without its Node",
		},
		{
			name:  "zombie, expired but within grace: kubelet stopped recently",
			lease: nodeLease(renewedAgo(30 * time.Minute)), node: nil, opts: hour,
			want: Zombie, wantExpired: true, wantRecheck: now.Add(30 * time.Minute), reasonHas: "stopped recently",
		},
		{
			name:  "leaked: no Node, no owner, idle 2h with a 1h grace",
			lease: nodeLease(renewedAgo(2 * time.Hour)), node: nil, opts: hour,
			want: Leaked, wantExpired: true, reasonHas: "idle for 120m",
		},
		{
			name:  "leaked exactly at the grace boundary",
			lease: nodeLease(renewedAgo(time.Hour)), node: nil, opts: hour,
			want: Leaked, wantExpired: true,
		},
		{
			name:  "zero grace means the default (1h): idle 30m is still a zombie",
			lease: nodeLease(renewedAgo(30 * time.Minute)), node: nil, opts: Options{},
			want: Zombie, wantExpired: true, wantRecheck: now.Add(30 * time.Minute),
		},
		{
			name:  "grace shorter than the lease duration is raised to it",
			lease: nodeLease(renewedAgo(20*time.Second), func(l *coordinationv1.Lease) { l.Spec.LeaseDurationSeconds = ptr.To[int32](60) }),
			node:  nil, opts: Options{GracePeriod: 10 * time.Second},
			want: Zombie, wantRecheck: now.Add(40 * time.Second), reasonHas: "grace raised to the lease duration 1m",
		},
		{
			name:  "renewTime in the future (clock skew): alive, not leaked",
			lease: nodeLease(renewedAgo(-10 * time.Minute)), node: nil, opts: hour,
			want: Zombie, wantRecheck: now.Add(10*time.Minute + time.Hour), reasonHas: "in the future",
		},
		{
			name:  "renewTime in the future with its Node: healthy",
			lease: nodeLease(ownedBy(nodeRef("node-uid-1")), renewedAgo(-10*time.Minute)), node: liveNode, opts: hour,
			want: Healthy, wantRecheck: now.Add(10*time.Minute + 40*time.Second),
		},
		{
			name: "nil renewTime, created 2h ago, no Node: leaked (age from creation)",
			lease: nodeLease(func(l *coordinationv1.Lease) {
				l.Spec.RenewTime = nil
				l.CreationTimestamp = metav1.NewTime(now.Add(-2 * time.Hour))
			}),
			node: nil, opts: hour, want: Leaked, wantExpired: true, reasonHas: "never renewed",
		},
		{
			name: "nil renewTime, created 1m ago, no Node: zombie until creation+grace",
			lease: nodeLease(func(l *coordinationv1.Lease) {
				l.Spec.RenewTime = nil
				l.CreationTimestamp = metav1.NewTime(now.Add(-time.Minute))
			}),
			node: nil, opts: hour, want: Zombie, wantExpired: true, wantRecheck: now.Add(59 * time.Minute),
		},
		{
			name:  "nil renewTime with its Node: stale (never renewed)",
			lease: nodeLease(ownedBy(nodeRef("node-uid-1")), func(l *coordinationv1.Lease) { l.Spec.RenewTime = nil }),
			node:  liveNode, opts: hour, want: Stale, wantExpired: true,
		},
		{
			name: "no renewTime and no creationTimestamp: age unknown, never leaked",
			lease: nodeLease(func(l *coordinationv1.Lease) {
				l.Spec.RenewTime = nil
				l.CreationTimestamp = metav1.Time{}
			}),
			node: nil, opts: hour, want: Other, wantExpired: true, reasonHas: "cannot be judged",
		},
		{
			// Item 8 of issue 10: a pre-1.29 zombie kubelet whose clock is 65 minutes behind
			// re-creates its lease; the API server stamps the creation now. Deleting it would
			// start a fight (delete, re-create, delete) with a live kubelet.
			name: "renewTime 65m old on a lease the API server created 5s ago (kubelet clock behind): zombie until creation+grace",
			lease: nodeLease(renewedAgo(65*time.Minute), func(l *coordinationv1.Lease) {
				l.CreationTimestamp = metav1.NewTime(now.Add(-5 * time.Second))
			}),
			node: nil, opts: hour, want: Zombie, wantExpired: true, wantRecheck: now.Add(time.Hour - 5*time.Second),
			reasonHas: "created 5s ago by the API server",
		},
		{
			name: "acquireTime behind the creation too: creation still counts",
			lease: nodeLease(renewedAgo(65*time.Minute), func(l *coordinationv1.Lease) {
				l.Spec.AcquireTime = ptr.To(metav1.NewMicroTime(now.Add(-70 * time.Minute)))
				l.CreationTimestamp = metav1.NewTime(now.Add(-5 * time.Second))
			}),
			node: nil, opts: hour, want: Zombie, wantExpired: true, wantRecheck: now.Add(time.Hour - 5*time.Second),
		},
		{
			name: "clock-skewed lease once grace has passed since its creation: leaked",
			lease: nodeLease(renewedAgo(3*time.Hour), func(l *coordinationv1.Lease) {
				l.CreationTimestamp = metav1.NewTime(now.Add(-61 * time.Minute))
			}),
			node: nil, opts: hour, want: Leaked, wantExpired: true, reasonHas: "idle for 61m",
		},
		{
			name: "old renewTime on a lease created 1m ago (restored from a backup): zombie, its age counts from the creation",
			lease: nodeLease(renewedAgo(30*24*time.Hour), func(l *coordinationv1.Lease) {
				l.CreationTimestamp = metav1.NewTime(now.Add(-time.Minute))
			}),
			node: nil, opts: hour, want: Zombie, wantExpired: true, wantRecheck: now.Add(59 * time.Minute), reasonHas: "created recently",
		},
		{
			name: "acquireTime later than renewTime counts as activity",
			lease: nodeLease(renewedAgo(3*time.Hour), func(l *coordinationv1.Lease) {
				l.Spec.AcquireTime = ptr.To(metav1.NewMicroTime(now.Add(-10 * time.Minute)))
			}),
			node: nil, opts: hour, want: Zombie, wantExpired: true, wantRecheck: now.Add(50 * time.Minute),
		},
		{
			name:  "nil leaseDurationSeconds: the kubelet default 40s applies (healthy at 30s)",
			lease: nodeLease(ownedBy(nodeRef("node-uid-1")), renewedAgo(30*time.Second), func(l *coordinationv1.Lease) { l.Spec.LeaseDurationSeconds = nil }),
			node:  liveNode, opts: hour, want: Healthy, wantRecheck: now.Add(10 * time.Second), reasonHas: "assumed 40s",
		},
		{
			name:  "nil leaseDurationSeconds: stale at 50s",
			lease: nodeLease(ownedBy(nodeRef("node-uid-1")), renewedAgo(50*time.Second), func(l *coordinationv1.Lease) { l.Spec.LeaseDurationSeconds = nil }),
			node:  liveNode, opts: hour, want: Stale, wantExpired: true,
		},
		{
			name: "ownerReference of another kind only: other, never leaked",
			lease: nodeLease(renewedAgo(72*time.Hour), ownedBy(metav1.OwnerReference{
				APIVersion: "apps/v1", Kind: "Deployment", Name: "x", UID: "d-uid"})),
			node: nil, opts: hour, want: Other, wantExpired: true, reasonHas: "apps/v1 Deployment/x",
		},
		{
			name: "Node ownerReference of another apiVersion is foreign",
			lease: nodeLease(ownedBy(metav1.OwnerReference{
				APIVersion: "example.com/v1", Kind: "Node", Name: nodeName, UID: "node-uid-1"})),
			node: liveNode, opts: hour, want: Other,
		},
		{
			name:  "Node ownerReference naming another Node is foreign",
			lease: nodeLease(ownedBy(metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: "other-node", UID: "node-uid-1"})),
			node:  liveNode, opts: hour, want: Other,
		},
		{
			name: "several ownerReferences, one is the current Node: healthy",
			lease: nodeLease(ownedBy(
				metav1.OwnerReference{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: "ds"},
				nodeRef("node-uid-1"))),
			node: liveNode, opts: hour, want: Healthy, wantRecheck: now.Add(35 * time.Second), reasonHas: "2 ownerReferences",
		},
		{
			name:  "several Node ownerReferences, one current: healthy",
			lease: nodeLease(ownedBy(nodeRef("node-uid-OLD"), nodeRef("node-uid-1"))),
			node:  liveNode, opts: hour, want: Healthy, wantRecheck: now.Add(35 * time.Second),
		},
		{
			name: "several ownerReferences, Node gone: owner-missing, not leaked",
			lease: nodeLease(renewedAgo(72*time.Hour), ownedBy(
				metav1.OwnerReference{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: "ds"},
				nodeRef("node-uid-1"))),
			node: nil, opts: hour, want: OwnerMissing, wantExpired: true,
		},
		{
			name:  "holder differs from the lease name: not a kubelet's lease",
			lease: nodeLease(renewedAgo(72*time.Hour), func(l *coordinationv1.Lease) { l.Spec.HolderIdentity = ptr.To("some-controller") }),
			node:  nil, opts: hour, want: Other, wantExpired: true, reasonHas: `held by "some-controller"`,
		},
		{
			name:  "no holder in kube-node-lease: other",
			lease: nodeLease(renewedAgo(72*time.Hour), func(l *coordinationv1.Lease) { l.Spec.HolderIdentity = nil }),
			node:  nil, opts: hour, want: Other, wantExpired: true, reasonHas: "no holderIdentity",
		},
		{
			name: "leader-election lease in kube-system",
			lease: &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Name: "kube-controller-manager", Namespace: "kube-system"},
				Spec: coordinationv1.LeaseSpec{
					HolderIdentity: ptr.To("cp-1_abc"), LeaseDurationSeconds: ptr.To[int32](15),
					RenewTime: ptr.To(metav1.NewMicroTime(now.Add(-time.Second))), LeaseTransitions: ptr.To[int32](3),
				},
			},
			node: liveNode, want: Leader, reasonHas: "cp-1_abc, 3 transitions",
		},
		{
			name: "expired leader lease named like a Node in another namespace is still a leader lock",
			lease: &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Name: nodeName, Namespace: "default"},
				Spec: coordinationv1.LeaseSpec{
					HolderIdentity: ptr.To(""), LeaseDurationSeconds: ptr.To[int32](15),
					RenewTime: ptr.To(metav1.NewMicroTime(now.Add(-time.Hour))),
				},
			},
			node: nil, want: Leader, wantExpired: true, reasonHas: "held by <none>",
		},
		{
			name: "apiserver identity lease",
			lease: &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Name: "apiserver-abc", Namespace: "kube-system",
					Labels: map[string]string{APIServerIdentityLabel: "kube-apiserver"}},
				Spec: coordinationv1.LeaseSpec{
					HolderIdentity: ptr.To("apiserver-abc_123"), LeaseDurationSeconds: ptr.To[int32](3600),
					RenewTime: ptr.To(metav1.NewMicroTime(now.Add(-10 * time.Second))),
				},
			},
			want: APIServerIdentity,
		},
		{
			name: "identity label outside kube-system is not an apiserver identity",
			lease: &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Name: "apiserver-abc", Namespace: "default",
					Labels: map[string]string{APIServerIdentityLabel: "kube-apiserver"}},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("x")},
			},
			want: Leader, wantExpired: true,
		},
		{
			name:  "empty lease outside kube-node-lease: other",
			lease: &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "lock", Namespace: "app"}},
			want:  Other, wantExpired: true, reasonHas: "not a leader-election lock",
		},
		{
			name: "nil lease", lease: nil, want: Other,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Classify(tt.lease, tt.node, now, tt.opts)
			if v.Class != tt.want {
				t.Fatalf("class = %s, want %s (reason: %s)", v.Class, tt.want, v.Reason)
			}
			if tt.lease != nil && v.Expired != tt.wantExpired {
				t.Errorf("expired = %v, want %v (reason: %s)", v.Expired, tt.wantExpired, v.Reason)
			}
			if !v.RecheckAt.Equal(tt.wantRecheck) {
				t.Errorf("recheckAt = %v, want %v", v.RecheckAt, tt.wantRecheck)
			}
			if !strings.Contains(v.Reason, tt.reasonHas) {
				t.Errorf("reason %q does not contain %q", v.Reason, tt.reasonHas)
			}
			if v.Reason == "" {
				t.Error("empty reason")
			}
			// ClassOf is the same verdict without the reason.
			quiet := ClassOf(tt.lease, tt.node, now, tt.opts)
			if quiet.Reason != "" {
				t.Errorf("ClassOf formatted a reason: %q", quiet.Reason)
			}
			quiet.Reason = v.Reason
			if quiet != v {
				t.Errorf("ClassOf = %+v, Classify = %+v", quiet, v)
			}
			// A time-driven change must really happen at RecheckAt and not a nanosecond earlier.
			if !v.RecheckAt.IsZero() {
				before := Classify(tt.lease, tt.node, v.RecheckAt.Add(-time.Nanosecond), tt.opts)
				at := Classify(tt.lease, tt.node, v.RecheckAt, tt.opts)
				if before.Class != v.Class {
					t.Errorf("class just before RecheckAt = %s, want %s", before.Class, v.Class)
				}
				if at.Class == v.Class {
					t.Errorf("class at RecheckAt is still %s", at.Class)
				}
			}
		})
	}
}

// TestRecheckTransitions follows one lease through its time-driven changes.
func TestRecheckTransitions(t *testing.T) {
	opts := Options{GracePeriod: 10 * time.Minute}
	tests := []struct {
		name  string
		lease *coordinationv1.Lease
		node  *NodeRef
		chain []Class
	}{
		{"healthy becomes stale", nodeLease(ownedBy(nodeRef("node-uid-1"))), liveNode, []Class{Healthy, Stale}},
		{"zombie becomes leaked", nodeLease(), nil, []Class{Zombie, Leaked}},
		{"unowned never changes by time", nodeLease(), liveNode, []Class{Unowned}},
		{"owner-missing never changes by time", nodeLease(ownedBy(nodeRef("node-uid-1"))), nil, []Class{OwnerMissing}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			at := now
			var got []Class
			for i := 0; i < 5; i++ {
				v := Classify(tt.lease, tt.node, at, opts)
				got = append(got, v.Class)
				if v.RecheckAt.IsZero() {
					break
				}
				if !v.RecheckAt.After(at) {
					t.Fatalf("RecheckAt %v is not after %v", v.RecheckAt, at)
				}
				at = v.RecheckAt
			}
			if strings.Join(classStrings(got), ",") != strings.Join(classStrings(tt.chain), ",") {
				t.Fatalf("chain = %v, want %v", got, tt.chain)
			}
		})
	}
}

func classStrings(cs []Class) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = string(c)
	}
	return out
}

func TestOnlyLeakedIsLeakedRegardlessOfGrace(t *testing.T) {
	// Whatever the grace period, a lease with an owner, a Node, or a foreign holder is never leaked.
	safe := []struct {
		lease *coordinationv1.Lease
		node  *NodeRef
	}{
		{nodeLease(renewedAgo(1000 * time.Hour)), liveNode},
		{nodeLease(renewedAgo(1000*time.Hour), ownedBy(nodeRef("x"))), nil},
		{nodeLease(renewedAgo(1000*time.Hour), func(l *coordinationv1.Lease) { l.Spec.HolderIdentity = ptr.To("y") }), nil},
	}
	for _, g := range []time.Duration{0, time.Nanosecond, time.Second, time.Hour} {
		for i, s := range safe {
			if c := Classify(s.lease, s.node, now, Options{GracePeriod: g}).Class; c == Leaked {
				t.Errorf("case %d grace %s: classified leaked", i, g)
			}
		}
	}
}

func TestExplainAndParse(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range Classes() {
		e := c.Explain()
		if e == "" || e == "unknown lease class" || strings.Contains(e, "\n") {
			t.Errorf("%s: bad explanation %q", c, e)
		}
		if seen[e] {
			t.Errorf("%s: explanation shared with another class", c)
		}
		seen[e] = true
		p, err := ParseClass(string(c))
		if err != nil || p != c {
			t.Errorf("ParseClass(%q) = %q, %v", c, p, err)
		}
	}
	if len(Classes()) != 10 {
		t.Errorf("want 10 classes, got %d", len(Classes()))
	}
	if _, err := ParseClass("leak"); err == nil {
		t.Error("ParseClass(leak) succeeded")
	}
	if Class("nope").Explain() != "unknown lease class" {
		t.Error("unknown class explained")
	}
	if a := Class("nope").Describe().Action; a == ActionDelete {
		t.Error("an unknown class would be deleted")
	}
}

// TestDescribe: every class has all of its words, the short meanings tell classes apart, and
// only Leaked is described as deleted (printers show this Action next to the class).
func TestDescribe(t *testing.T) {
	meanings := map[string]Class{}
	for _, c := range Classes() {
		d := c.Describe()
		if d.Meaning == "" || d.Explanation == "" || d.Action == "" {
			t.Errorf("%s: incomplete description %+v", c, d)
		}
		if other, ok := meanings[d.Meaning]; ok {
			t.Errorf("%s and %s share the meaning %q", c, other, d.Meaning)
		}
		meanings[d.Meaning] = c
		if (d.Action == ActionDelete) != (c == Leaked) {
			t.Errorf("%s: action %q; only leaked leases may be deleted", c, d.Action)
		}
		if c.Explain() != d.Explanation {
			t.Errorf("%s: Explain() differs from Describe().Explanation", c)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	if err := (Options{GracePeriod: -time.Second}).Validate(); err == nil {
		t.Error("negative grace accepted")
	}
	if err := (Options{}).Validate(); err != nil {
		t.Error(err)
	}
}

func TestNodeOwner(t *testing.T) {
	if NodeOwner(nodeLease()) != nil {
		t.Error("ownerless lease has a node owner")
	}
	l := nodeLease(ownedBy(metav1.OwnerReference{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "d"}, nodeRef("u")))
	if r := NodeOwner(l); r == nil || r.UID != "u" {
		t.Errorf("NodeOwner = %v", r)
	}
}

// TestClassOfAllocatesNothing: ClassOf runs on every lease at every metrics scrape.
func TestClassOfAllocatesNothing(t *testing.T) {
	cases := []struct {
		l    *coordinationv1.Lease
		node *NodeRef
	}{
		{nodeLease(ownedBy(nodeRef("node-uid-1"))), liveNode},
		{nodeLease(renewedAgo(2 * time.Hour)), nil},
		{nodeLease(), nil},
		{nodeLease(ownedBy(nodeRef("old"))), liveNode},
	}
	for i, c := range cases {
		if n := testing.AllocsPerRun(100, func() { ClassOf(c.l, c.node, now, Options{}) }); n != 0 {
			t.Errorf("case %d: %v allocations per ClassOf", i, n)
		}
	}
}
