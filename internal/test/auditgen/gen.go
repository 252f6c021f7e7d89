// Package gen writes synthetic kube-apiserver audit logs with the traffic mix of a large EKS
// cluster: mostly kubelet lease renewals, some gets, lists and watches, leader-election
// renewals, node status patches, 404s, and a throttled client answered 429 with APF queue
// waits. It also plays node deletions whose outcome is known (a kubelet that shuts down, a
// modern zombie kubelet, a legacy zombie that re-creates its lease), so that a test can check
// an analysis against ground truth, and a benchmark can read gigabytes of realistic input.
//
// It can also play lease churn (the seed's cleanup one-liner run from a CronJob against the
// leases a pre-1.29 zombie kubelet keeps re-creating, and a one-off manual delete) and kubelets
// whose lease renewals APF answers 429 for a while (heartbeat gaps near and over the node
// monitor grace period).
//
// Events are written in stageTimestamp order, the way the API server's log backend writes
// them, with byte-level templates (the generator must outrun the reader it feeds).
package auditgen

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"time"
)

// Config describes the cluster and the log to write.
type Config struct {
	Nodes int       // kubelets renewing their lease every 10 s; default 2000
	Start time.Time // first event; default 2024-04-05T00:00:00Z
	Seed  uint64
	// Bytes stops the log once at least this much was written (0: run for Duration).
	Bytes int64
	// Duration of simulated time when Bytes is 0; default 10 minutes.
	Duration time.Duration
	// Deletions plays this many node deletions of each kind (shutdown, modern zombie, legacy
	// zombie), spread over the first half of the log; default 2 each; -1 for none.
	Deletions int
	// ThrottledClient adds a client hammering the API server and answered 429 in bursts.
	ThrottledClient bool
	// CleanupCronJob runs the seed's cleanup one-liner (list the leases of kube-node-lease, delete
	// the ownerless ones) every this often, as CleanupUser: it deletes the leases the legacy
	// zombie kubelets re-create within a renewal. 0: never.
	CleanupCronJob time.Duration
	// ManualLeaseDelete has kubernetes-admin delete the lease of one healthy node once, a minute
	// in; its kubelet creates it again at its next renewal.
	ManualLeaseDelete bool
	// HeartbeatTrouble has APF answer 429 to the lease renewals of three healthy kubelets for a
	// while, two minutes in: long enough for one to miss the 50 s grace period, for one to come
	// within a renewal of it (a gap of about 41 s), and for one to be throttled only once.
	HeartbeatTrouble bool
}

// CleanupUser is the service account the CronJob of Config.CleanupCronJob runs as.
const CleanupUser = "system:serviceaccount:kube-system:lease-cleanup"

// AdminUser is the user that deletes Nodes, and the lease of Config.ManualLeaseDelete.
const AdminUser = "kubernetes-admin"

// Truth is what the generator played, to compare an analysis with.
type Truth struct {
	Bytes, Events int64
	End           time.Time
	Deleted       []string // every node whose Node object was deleted
	Zombies       []string // kubelets still calling after their Node was deleted
	Leaked        []string // leases re-created by a legacy zombie kubelet and left ownerless
	Throttled     int64    // 429 answers (the throttled client's and the troubled kubelets')
	ThrottledUser string
	// Churns counts, by actor, the node leases it deleted that were created again within a
	// minute.
	Churns map[string]int64
	// Heartbeat trouble: the kubelets whose longest gap reached the grace period, came within a
	// renewal of it, and were only throttled.
	OverGrace, NearGrace, ThrottledOnly []string
}

type node struct {
	name, ip, instance string
	uid                string
	next               int64 // next lease renewal, ns
	state              int
	deletedAt          int64
	legacyLease        bool // the legacy zombie has re-created its lease
	// leaseGone: a healthy node's lease was deleted; its kubelet creates it at its next renewal.
	leaseGone     bool
	leaseDelBy    string // who deleted the lease last, and when
	leaseDelAt    int64
	throttleFor   int64 // HeartbeatTrouble: renewals are answered 429 for this long...
	throttleUntil int64 // ...from the first renewal after trouble starts to this time
}

const (
	alive = iota
	dead
	zombieModern
	zombieLegacy
)

// Generate writes the log to w.
func Generate(w io.Writer, cfg Config) (Truth, error) {
	if cfg.Nodes <= 0 {
		cfg.Nodes = 2000
	}
	if cfg.Start.IsZero() {
		cfg.Start = time.Date(2024, 4, 5, 0, 0, 0, 0, time.UTC)
	}
	if cfg.Bytes == 0 && cfg.Duration == 0 {
		cfg.Duration = 10 * time.Minute
	}
	if cfg.Deletions == 0 {
		cfg.Deletions = 2
	}
	g := &generator{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		bw: bufio.NewWriterSize(w, 1<<20)}
	return g.run()
}

type generator struct {
	cfg    Config
	rng    *rand.Rand
	bw     *bufio.Writer
	buf    []byte
	nodes  []*node
	truth  Truth
	seq    uint64
	rv     int64
	now    int64
	werr   error
	events []pending
}

// pending is an event waiting for its stageTimestamp to come.
type pending struct {
	done int64
	line []byte
}

func (g *generator) run() (Truth, error) {
	start := g.cfg.Start.UnixNano()
	for i := 0; i < g.cfg.Nodes; i++ {
		a, b, c := 10+i/65536%200, i/256%256, i%256
		n := &node{
			name:     fmt.Sprintf("ip-10-%d-%d-%d.ec2.internal", a, b, c),
			ip:       fmt.Sprintf("10.%d.%d.%d", a, b, c),
			instance: fmt.Sprintf("i-%017x", g.rng.Uint64()>>4),
			uid:      uuid(g.rng),
			next:     start + g.rng.Int64N(10e9),
		}
		g.nodes = append(g.nodes, n)
	}
	end := start + int64(g.cfg.Duration)
	if g.cfg.Bytes > 0 {
		end = int64(1<<62 - 1)
	}
	// Node deletions: spread over the first half of the planned time (or the first 5 minutes
	// when the log is sized in bytes).
	type plan struct {
		at   int64
		n    *node
		kind int
	}
	var plans []plan
	if g.cfg.Deletions > 0 {
		span := int64(g.cfg.Duration / 2)
		if g.cfg.Bytes > 0 {
			span = int64(5 * time.Minute)
		}
		k := 0
		for _, kind := range []int{dead, zombieModern, zombieLegacy} {
			for i := 0; i < g.cfg.Deletions && k < len(g.nodes); i++ {
				at := start + int64(30*time.Second) + span*int64(k+1)/int64(3*g.cfg.Deletions+1)
				plans = append(plans, plan{at: at, n: g.nodes[len(g.nodes)-1-k], kind: kind})
				k++
			}
		}
	}
	g.truth.Churns = map[string]int64{}
	trouble := int64(1<<62 - 1)
	if g.cfg.HeartbeatTrouble && len(g.nodes) >= 3 {
		trouble = start + int64(2*time.Minute)
		// Renewals fail from the first one after trouble starts (about one interval after the
		// last success) until throttleFor later; the first retry after that succeeds.
		for i, d := range []time.Duration{45 * time.Second, 31 * time.Second, 2 * time.Second} {
			g.nodes[i].throttleFor = int64(d)
		}
		g.truth.OverGrace, g.truth.NearGrace, g.truth.ThrottledOnly = []string{g.nodes[0].name}, []string{g.nodes[1].name}, []string{g.nodes[2].name}
	}
	nextCron := int64(1<<62 - 1)
	if g.cfg.CleanupCronJob > 0 {
		nextCron = start + int64(g.cfg.CleanupCronJob)
	}
	manualAt := int64(1<<62 - 1)
	if g.cfg.ManualLeaseDelete && len(g.nodes) > 3 {
		manualAt = start + int64(time.Minute)
	}
	nextCtrl := start
	nextOther := start
	nextBurst := start + int64(20*time.Second)
	g.truth.ThrottledUser = "system:serviceaccount:batch:report-exporter"
	for step := start; step < end; step += int64(100 * time.Millisecond) {
		g.now = step
		for len(plans) > 0 && plans[0].at <= step {
			g.deleteNode(plans[0].n, plans[0].kind)
			plans = plans[1:]
		}
		for nextCron <= step {
			g.cleanup(nextCron)
			nextCron += int64(g.cfg.CleanupCronJob)
		}
		if manualAt <= step {
			g.deleteLease(g.nodes[3], manualAt, AdminUser)
			manualAt = 1<<62 - 1
		}
		for _, n := range g.nodes {
			for n.next <= step+int64(100*time.Millisecond) {
				if n.throttleFor > 0 && n.next >= trouble && n.throttleUntil == 0 {
					n.throttleUntil = n.next + n.throttleFor
				}
				g.kubelet(n, n.next)
				n.next += int64(10*time.Second) + g.rng.Int64N(int64(400*time.Millisecond)) - int64(200*time.Millisecond)
			}
		}
		for nextCtrl <= step {
			g.controllers(nextCtrl)
			nextCtrl += int64(2 * time.Second)
		}
		for nextOther <= step {
			g.other(nextOther)
			nextOther += int64(time.Second) / 20
		}
		if g.cfg.ThrottledClient && nextBurst <= step {
			g.burst(nextBurst)
			nextBurst += int64(45 * time.Second)
		}
		g.flushUntil(step)
		if g.werr != nil {
			return g.truth, g.werr
		}
		if g.cfg.Bytes > 0 && g.truth.Bytes >= g.cfg.Bytes {
			break
		}
	}
	g.flushUntil(1<<62 - 1)
	g.truth.End = time.Unix(0, g.now).UTC()
	for _, n := range g.nodes {
		switch n.state {
		case zombieModern, zombieLegacy:
			g.truth.Zombies = append(g.truth.Zombies, n.name)
		}
		if n.state != alive {
			g.truth.Deleted = append(g.truth.Deleted, n.name)
		}
		if n.legacyLease {
			g.truth.Leaked = append(g.truth.Leaked, n.name)
		}
	}
	if err := g.bw.Flush(); err != nil {
		return g.truth, err
	}
	return g.truth, g.werr
}

// flushUntil writes the pending events whose stageTimestamp is before t, in order.
func (g *generator) flushUntil(t int64) {
	// pending is small (the events of the last 100 ms plus a few long requests): insertion
	// order is nearly sorted, so a simple selection of the ready ones is cheap.
	keep := g.events[:0]
	var ready []pending
	for _, p := range g.events {
		if p.done <= t {
			ready = append(ready, p)
		} else {
			keep = append(keep, p)
		}
	}
	g.events = keep
	for i := 1; i < len(ready); i++ {
		for k := i; k > 0 && ready[k].done < ready[k-1].done; k-- {
			ready[k], ready[k-1] = ready[k-1], ready[k]
		}
	}
	for _, p := range ready {
		if g.werr != nil {
			return
		}
		n, err := g.bw.Write(p.line)
		g.truth.Bytes += int64(n)
		g.truth.Events++
		g.werr = err
	}
}

func (g *generator) deleteNode(n *node, kind int) {
	t := g.now
	g.emit(ev{t: t, lat: 15e6, verb: "delete", user: "kubernetes-admin", groups: `["system:masters","system:authenticated"]`,
		extra: `{"arn":["arn:aws:iam::111122223333:user/ops"],"sessionName":[""]}`, ip: "198.51.100.7",
		ua: "kubectl/v1.30.2 (linux/amd64) kubernetes/39683505", res: "nodes", name: n.name, code: 200,
		uri: "/api/v1/nodes/" + n.name, level: "RequestResponse"})
	// The garbage collector removes the lease its ownerReference ties to the Node.
	g.emit(ev{t: t + 30e6, lat: 18e6, verb: "delete", user: gcUser,
		groups: `["system:serviceaccounts","system:serviceaccounts:kube-system","system:authenticated"]`, ip: "172.16.49.75",
		ua:  "kube-controller-manager/v1.30.4 (linux/amd64) kubernetes/07600c7/system:serviceaccount:kube-system:generic-garbage-collector",
		res: "leases", ns: "kube-node-lease", name: n.name, group: "coordination.k8s.io", code: 200,
		uri: "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/" + n.name})
	n.state, n.deletedAt = kind, t
	n.leaseDelBy, n.leaseDelAt = gcUser, t+48e6 // a legacy zombie creates it again: churn too
}

const gcUser = "system:serviceaccount:kube-system:generic-garbage-collector"

// kubelet plays one heartbeat of a kubelet.
func (g *generator) kubelet(n *node, t int64) {
	base := ev{t: t, user: "system:node:" + n.name, groups: `["system:bootstrappers","system:nodes","system:authenticated"]`,
		extra: `{"accessKeyId":["ASIAEXAMPLEEXAMPLE"],"arn":["arn:aws:sts::111122223333:assumed-role/eks-node-role/` + n.instance +
			`"],"canonicalArn":["arn:aws:iam::111122223333:role/eks-node-role"],"principalId":["AROAEXAMPLEEXAMPLE"],"sessionName":["` + n.instance + `"]}`,
		ip: n.ip, ua: "kubelet/v1.30.4 (linux/amd64) kubernetes/2ab5bc6", group: "coordination.k8s.io", res: "leases",
		ns: "kube-node-lease", name: n.name, uri: "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/" + n.name + "?timeout=10s"}
	switch n.state {
	case dead:
		// A machine shutting down after its Node was drained and deleted: a couple of
		// heartbeats answered 404 within 15 s, then silence. Not a zombie.
		if t-n.deletedAt > int64(15*time.Second) {
			n.next = 1<<62 - 1
			return
		}
		base.verb, base.code, base.lat = "get", 404, 2e6
		g.emit(base)
	case alive:
		if t < n.throttleUntil {
			// APF answers 429 with Retry-After: 1, and client-go retries after a second; the
			// kubelet gives up for this interval after five tries.
			for k := int64(0); k < 5; k++ {
				at := t + k*int64(time.Second)
				if at >= n.throttleUntil {
					t, base.t = at, at
					break
				}
				th := base
				th.t, th.verb, th.code, th.lat = at, "update", 429, 1e6
				g.emit(th)
				g.truth.Throttled++
				if k == 4 {
					return
				}
			}
		}
		if n.leaseGone {
			// The lease controller's GET answers 404: it creates the lease again, with its owner.
			base.verb, base.code, base.lat = "get", 404, 2e6
			g.emit(base)
			cr := base
			cr.t += 3e6
			cr.verb, cr.code, cr.lat = "create", 201, 5e6
			cr.uri = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases?timeout=10s"
			g.emit(cr)
			g.recreated(n, cr.t)
			return
		}
		base.verb, base.code, base.lat = "update", 200, 3e6+g.rng.Int64N(6e6)
		base.uid, base.rv = n.uid, true
		g.emit(base)
		if g.rng.IntN(30) == 0 { // node status every ~5 min
			st := base
			st.verb, st.res, st.sub, st.group, st.ns, st.uid = "patch", "nodes", "status", "", "", ""
			st.uri = "/api/v1/nodes/" + n.name + "/status?timeout=10s"
			st.level, st.lat = "RequestResponse", 8e6+g.rng.Int64N(12e6)
			g.emit(st)
		}
	case zombieModern:
		// 1.29+: GET the lease (404), then GET the Node to set the owner (404), no create.
		base.verb, base.code, base.lat = "get", 404, 2e6
		g.emit(base)
		nb := base
		nb.t += 3e6
		nb.res, nb.group, nb.ns = "nodes", "", ""
		nb.uri = "/api/v1/nodes/" + n.name + "?timeout=10s"
		g.emit(nb)
	case zombieLegacy:
		if !n.legacyLease {
			// < 1.29: GET 404, then an update that creates the lease (201) with no owner.
			base.verb, base.code, base.lat = "get", 404, 2e6
			base.ua = "kubelet/v1.27.9 (linux/amd64) kubernetes/d15213f"
			g.emit(base)
			up := base
			up.t += 4e6
			up.verb, up.code, up.lat = "update", 201, 5e6
			g.emit(up)
			n.legacyLease = true
			g.recreated(n, up.t)
			return
		}
		base.ua = "kubelet/v1.27.9 (linux/amd64) kubernetes/d15213f"
		base.verb, base.code, base.lat, base.rv = "update", 200, 4e6, true
		g.emit(base)
	}
}

// recreated counts a churn when n's lease comes back within a minute of its deletion.
func (g *generator) recreated(n *node, t int64) {
	n.leaseGone = false
	if n.leaseDelBy != "" && t-n.leaseDelAt <= int64(time.Minute) {
		g.truth.Churns[n.leaseDelBy]++
	}
	n.leaseDelBy = ""
}

// deleteLease plays a DELETE of n's lease by user (the lease exists).
func (g *generator) deleteLease(n *node, t int64, user string) {
	e := ev{t: t, lat: 12e6, verb: "delete", user: user, res: "leases", ns: "kube-node-lease", name: n.name,
		group: "coordination.k8s.io", code: 200, uri: "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/" + n.name}
	switch user {
	case AdminUser:
		e.groups, e.ip, e.ua = `["system:masters","system:authenticated"]`, "198.51.100.7", "kubectl/v1.30.2 (linux/amd64) kubernetes/39683505"
		e.extra = `{"arn":["arn:aws:iam::111122223333:user/ops"],"sessionName":[""]}`
	default:
		e.groups, e.ip, e.ua = `["system:serviceaccounts","system:serviceaccounts:kube-system","system:authenticated"]`, "10.20.7.31",
			"kubectl/v1.30.2 (linux/amd64) kubernetes/39683505"
	}
	g.emit(e)
	n.leaseDelBy, n.leaseDelAt = user, t+e.lat
	switch n.state {
	case alive:
		n.leaseGone = true
	case zombieLegacy:
		n.legacyLease = false
	}
}

// cleanup plays one run of the seed's one-liner: list the leases of kube-node-lease, then
// delete those without an ownerReference (the ones legacy zombie kubelets re-created).
func (g *generator) cleanup(t int64) {
	g.emit(ev{t: t, lat: 40e6, verb: "list", user: CleanupUser, groups: `["system:serviceaccounts","system:serviceaccounts:kube-system","system:authenticated"]`,
		ip: "10.20.7.31", ua: "kubectl/v1.30.2 (linux/amd64) kubernetes/39683505", res: "leases", ns: "kube-node-lease",
		group: "coordination.k8s.io", code: 200, uri: "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"})
	at := t + int64(300*time.Millisecond)
	for _, n := range g.nodes {
		if n.state == zombieLegacy && n.legacyLease {
			g.deleteLease(n, at, CleanupUser)
			at += int64(50 * time.Millisecond)
		}
	}
}

// controllers plays leader election and controller traffic.
func (g *generator) controllers(t int64) {
	for _, c := range []string{"kube-controller-manager", "kube-scheduler", "cloud-controller-manager"} {
		g.emit(ev{t: t, lat: 4e6, verb: "update", user: "system:" + c, groups: `["system:authenticated"]`, ip: "172.16.49.75",
			ua: c + "/v1.30.4 (linux/amd64) kubernetes/2ab5bc6/leader-election", res: "leases", ns: "kube-system", name: c,
			group: "coordination.k8s.io", code: 200, rv: true,
			uri: "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/" + c + "?timeout=5s"})
	}
}

var namespaces = []string{"default", "kube-system", "payments", "search", "batch", "monitoring", "ingress"}

// other plays the rest: controllers' and operators' gets and lists, watches, 404s.
func (g *generator) other(t int64) {
	ns := namespaces[g.rng.IntN(len(namespaces))]
	switch r := g.rng.IntN(20); {
	case r < 8:
		name := fmt.Sprintf("app-%d-config", g.rng.IntN(400))
		code := 200
		if g.rng.IntN(6) == 0 {
			code = 404
		}
		g.emit(ev{t: t, lat: 1e6 + g.rng.Int64N(3e6), verb: "get", user: "system:serviceaccount:" + ns + ":app", groups: `["system:serviceaccounts","system:authenticated"]`,
			ip: "10.20.1." + strconv.Itoa(g.rng.IntN(250)), ua: "app/1.4.2 (linux/amd64) kubernetes/abcdef0", res: "configmaps", ns: ns, name: name, code: code,
			uri: "/api/v1/namespaces/" + ns + "/configmaps/" + name})
	case r < 12:
		g.emit(ev{t: t, lat: 20e6 + g.rng.Int64N(200e6), verb: "list", user: "system:serviceaccount:monitoring:kube-state-metrics",
			groups: `["system:serviceaccounts","system:authenticated"]`, ip: "10.20.3.17", ua: "kube-state-metrics/v2.12.0 (linux/amd64) kubernetes/abcdef0",
			res: "pods", code: 200, uri: "/api/v1/pods?limit=500&resourceVersion=0"})
	case r < 15:
		// A watch ends after minutes: its stageTimestamp is now, its requestReceivedTimestamp long ago.
		lat := int64(5*time.Minute) + g.rng.Int64N(int64(4*time.Minute))
		g.emit(ev{t: t - lat, lat: lat, verb: "watch", user: "system:kube-scheduler", groups: `["system:authenticated"]`, ip: "172.16.49.75",
			ua: "kube-scheduler/v1.30.4 (linux/amd64) kubernetes/2ab5bc6/scheduler", res: "pods", code: 200,
			uri: "/api/v1/pods?allowWatchBookmarks=true&fieldSelector=status.phase%21%3DSucceeded&watch=true"})
	case r < 18:
		name := fmt.Sprintf("web-%x", g.rng.Uint32())
		g.emit(ev{t: t, lat: 6e6 + g.rng.Int64N(10e6), verb: "patch", user: "system:serviceaccount:kube-system:replicaset-controller",
			groups: `["system:serviceaccounts","system:authenticated"]`, ip: "172.16.49.75", ua: "kube-controller-manager/v1.30.4 (linux/amd64) kubernetes/2ab5bc6/system:serviceaccount:kube-system:replicaset-controller",
			res: "pods", sub: "status", ns: ns, name: name, code: 200, level: "Request",
			uri: "/api/v1/namespaces/" + ns + "/pods/" + name + "/status"})
	default:
		g.emit(ev{t: t, lat: 2e6, verb: "get", user: "system:serviceaccount:kube-system:coredns", groups: `["system:serviceaccounts","system:authenticated"]`,
			ip: "10.20.0.5", ua: "coredns/v1.11.1 (linux/amd64) kubernetes/abcdef0", res: "endpointslices", group: "discovery.k8s.io",
			ns: ns, code: 200, verb2: "list", uri: "/apis/discovery.k8s.io/v1/namespaces/" + ns + "/endpointslices?limit=500"})
	}
}

// burst plays a client that floods the API server: APF queues it, then rejects it with 429.
func (g *generator) burst(t int64) {
	for i := 0; i < 300; i++ {
		at := t + int64(i)*int64(3*time.Millisecond)
		e := ev{t: at, verb: "list", user: g.truth.ThrottledUser, groups: `["system:serviceaccounts","system:authenticated"]`,
			ip: "10.20.9.44", ua: "report-exporter/0.9 (linux/amd64) kubernetes/abcdef0", res: "events", ns: "batch",
			uri: "/api/v1/namespaces/batch/events?limit=500"}
		if i%3 == 0 {
			e.code, e.lat = 200, 400e6+g.rng.Int64N(600e6)
			e.apfWait = time.Duration(e.lat * 3 / 4)
		} else {
			e.code, e.lat = 429, 1e6
			g.truth.Throttled++
		}
		g.emit(e)
	}
}

type ev struct {
	t, lat                      int64
	verb, verb2                 string
	user, groups, extra, ip, ua string
	res, sub, ns, name, group   string
	uid                         string
	rv                          bool
	code                        int
	uri, level                  string
	apfWait                     time.Duration
}

// appendOptional appends the string member key of objectRef when value is set; b is inside
// the previous member's open string, and so is the result.
func appendOptional(b []byte, key, value string) []byte {
	if value == "" {
		return b
	}
	b = append(b, `","`...)
	b = append(b, key...)
	b = append(b, `":"`...)
	return append(b, value...)
}

func (g *generator) emit(e ev) {
	if e.verb2 != "" {
		e.verb = e.verb2
	}
	if e.level == "" {
		e.level = "Metadata"
	}
	b := g.buf[:0]
	b = append(b, `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"`...)
	b = append(b, e.level...)
	b = append(b, `","auditID":"`...)
	b = appendUUID(b, g.rng)
	b = append(b, `","stage":"ResponseComplete","requestURI":"`...)
	b = append(b, e.uri...)
	b = append(b, `","verb":"`...)
	b = append(b, e.verb...)
	b = append(b, `","user":{"username":"`...)
	b = append(b, e.user...)
	b = append(b, `","groups":`...)
	b = append(b, e.groups...)
	if e.extra != "" {
		b = append(b, `,"extra":`...)
		b = append(b, e.extra...)
	}
	b = append(b, `},"sourceIPs":["`...)
	b = append(b, e.ip...)
	b = append(b, `"],"userAgent":"`...)
	b = append(b, e.ua...)
	b = append(b, `","objectRef":{"resource":"`...)
	b = append(b, e.res...)
	b = appendOptional(b, "namespace", e.ns)
	b = appendOptional(b, "name", e.name)
	b = appendOptional(b, "uid", e.uid)
	b = appendOptional(b, "apiGroup", e.group)
	b = append(b, `","apiVersion":"v1`...)
	if e.rv {
		g.rv++
		b = append(b, `","resourceVersion":"`...)
		b = strconv.AppendInt(b, 1000000+g.rv, 10)
	}
	b = appendOptional(b, "subresource", e.sub)
	b = append(b, `"},"responseStatus":{"metadata":{}`...)
	switch {
	case e.code == 404:
		b = append(b, `,"status":"Failure","message":"`...)
		b = append(b, e.res...)
		b = append(b, ` \"`...)
		b = append(b, e.name...)
		b = append(b, `\" not found","reason":"NotFound","details":{"name":"`...)
		b = append(b, e.name...)
		b = append(b, `","kind":"`...)
		b = append(b, e.res...)
		b = append(b, `"}`...)
	case e.code == 429:
		b = append(b, `,"status":"Failure","message":"Too many requests, please try again later.","reason":"TooManyRequests"`...)
	}
	b = append(b, `,"code":`...)
	b = strconv.AppendInt(b, int64(e.code), 10)
	b = append(b, '}')
	if e.level == "RequestResponse" && e.verb == "patch" {
		b = append(b, `,"requestObject":{"status":{"conditions":[{"type":"Ready","status":"True","lastHeartbeatTime":"`...)
		b = appendTime(b, e.t)
		b = append(b, `","reason":"KubeletReady","message":"kubelet is posting ready status"}]}},"responseObject":{"kind":"Node","apiVersion":"v1","metadata":{"name":"`...)
		b = append(b, e.name...)
		b = append(b, `","labels":{"kubernetes.io/os":"linux","node.kubernetes.io/instance-type":"m6i.2xlarge","topology.kubernetes.io/zone":"ap-northeast-2a"}},"status":{"capacity":{"cpu":"8","memory":"32408364Ki","pods":"58"},"allocatable":{"cpu":"7910m","memory":"31391532Ki","pods":"58"}}}`...)
	}
	b = append(b, `,"requestReceivedTimestamp":"`...)
	b = appendTime(b, e.t)
	b = append(b, `","stageTimestamp":"`...)
	b = appendTime(b, e.t+e.lat)
	b = append(b, `","annotations":{"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":"`...)
	if e.apfWait > 0 {
		b = append(b, `","apiserver.latency.k8s.io/apf-queue-wait":"`...)
		b = append(b, e.apfWait.String()...)
		b = append(b, `","apiserver.latency.k8s.io/total":"`...)
		b = append(b, time.Duration(e.lat).String()...)
	}
	b = append(b, "\"}}\n"...)
	g.buf = b
	line := make([]byte, len(b))
	copy(line, b)
	g.events = append(g.events, pending{done: e.t + e.lat, line: line})
}

func appendTime(b []byte, ns int64) []byte {
	return time.Unix(0, ns).UTC().AppendFormat(b, "2006-01-02T15:04:05.000000Z")
}

const hexdigits = "0123456789abcdef"

func appendUUID(b []byte, r *rand.Rand) []byte {
	x, y := r.Uint64(), r.Uint64()
	for i := 0; i < 32; i++ {
		if i == 8 || i == 12 || i == 16 || i == 20 {
			b = append(b, '-')
		}
		v := x
		if i >= 16 {
			v = y
		}
		b = append(b, hexdigits[(v>>(4*(i%16)))&15])
	}
	return b
}

func uuid(r *rand.Rand) string { return string(appendUUID(nil, r)) }
