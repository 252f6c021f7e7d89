//go:build linux

package ultra

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"text/tabwriter"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/nodekeeper/nodekeeper/internal/controlplane"
	"github.com/nodekeeper/nodekeeper/internal/doctor"
	"github.com/nodekeeper/nodekeeper/internal/kube"
	"github.com/nodekeeper/nodekeeper/internal/kubeletsim"
	"github.com/nodekeeper/nodekeeper/internal/lease"
	"github.com/nodekeeper/nodekeeper/internal/leasesview"
	"github.com/nodekeeper/nodekeeper/internal/test/promscrape"
	"github.com/nodekeeper/nodekeeper/internal/test/testenv"
)

// The sizes, from the environment (NODEKEEPER_ULTRA_*), and what each part of the run measures.
type sizes struct {
	nodes, leaked         int // the main cluster: Nodes with their owned leases, and ownerless leases leaked long ago
	explainBase           int // explain is timed once the first explainBase Nodes exist, then at nodes
	doctorNodes           int // the doctor's cluster: Nodes, pods (10 per node) and events (20 per node)
	runs                  int // paired runs of leases -A and its floor and peer
	idle                  time.Duration
	controllerQPS         string
	skip                  map[string]bool
	capacityArgs, auditRx string
	gcPairs               int    // rounds of gc --yes against rawdelete
	gcBaseline            string // another nodekeeper build whose gc --yes each round also runs
}

func readSizes(b *testing.B) sizes {
	num := func(name string, def int) int {
		s := os.Getenv(name)
		if s == "" {
			return def
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("%s=%q: want a positive whole number", name, s)
		}
		return n
	}
	s := sizes{nodes: num("NODEKEEPER_ULTRA_NODES", 100000)}
	s.leaked = num("NODEKEEPER_ULTRA_LEAKED", s.nodes/10)
	s.explainBase = min(num("NODEKEEPER_ULTRA_EXPLAIN_BASE", 2000), s.nodes)
	s.doctorNodes = num("NODEKEEPER_ULTRA_DOCTOR_NODES", max(s.nodes/10, 100))
	s.runs = num("NODEKEEPER_ULTRA_RUNS", 3)
	s.idle = time.Duration(num("NODEKEEPER_ULTRA_IDLE_SECONDS", 120)) * time.Second
	s.gcPairs = num("NODEKEEPER_ULTRA_GC_PAIRS", 1)
	s.gcBaseline = os.Getenv("NODEKEEPER_ULTRA_GC_BASELINE")
	s.controllerQPS = os.Getenv("NODEKEEPER_ULTRA_CONTROLLER_QPS")
	if s.controllerQPS == "" {
		s.controllerQPS = "0"
	}
	s.skip = map[string]bool{}
	for _, p := range strings.Split(os.Getenv("NODEKEEPER_ULTRA_SKIP"), ",") {
		if p = strings.TrimSpace(p); p != "" {
			s.skip[p] = true
		}
	}
	s.capacityArgs = os.Getenv("NODEKEEPER_ULTRA_CAPACITY_ARGS")
	s.auditRx = os.Getenv("NODEKEEPER_ULTRA_AUDIT_BENCH")
	if s.auditRx == "" {
		s.auditRx = "BenchmarkAuditVsScan$"
	}
	return s
}

// The identities of the measured processes: the audit policy records their requests only (at
// Metadata level, so the log costs the API server next to nothing at 100,000 objects), and the
// counts come from the API server, not from the client.
const (
	userController = "nodekeeper-ultra-controller"
	userCLI        = "nodekeeper-ultra-cli"
	userExplain    = "nodekeeper-ultra-explain"
	userDoctor     = "nodekeeper-ultra-doctor"
)

const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  users: ["` + userController + `", "` + userCLI + `", "` + userExplain + `", "` + userDoctor + `"]
- level: None
`

// apiServerArgs let the API server take 64 writers and the controller's and the CLI's lists at
// once without priority-and-fairness queueing that a 2-core machine would not need.
var apiServerArgs = []string{"--max-requests-inflight=800", "--max-mutating-requests-inflight=400"}

// row is one line of the table: the figure, nodekeeper's value, the floor's, the peer's, the
// target and whether it is met ("" when there is no target).
type row struct{ what, value, floor, peer, target, met string }

// BenchmarkUltra is issue 32's "Done when" table. One run, one table:
//
//   - the main cluster: NODEKEEPER_ULTRA_NODES Nodes (100,000) with their owned leases, and
//     NODEKEEPER_ULTRA_LEAKED (a tenth) ownerless leases last renewed 2 h ago and backdated, so
//     they are leaked; on it, in this order: explain NODE at NODEKEEPER_ULTRA_EXPLAIN_BASE Nodes
//     (2,000, before the rest are created) and at all of them; leases -A against the floor
//     (./floorlist and ListFloor in-process) and kubectl get lease -A; gc --dry-run; gc --yes;
//     the leaked set again and ../rawdelete -prefix (64 protobuf DELETEs in flight); the leaked
//     set again and the controller (the release binary, --qps NODEKEEPER_ULTRA_CONTROLLER_QPS,
//     default 0) from its start to its first and its last deletion, its peak RSS, its requests,
//     then NODEKEEPER_ULTRA_IDLE_SECONDS (120) idle: its LISTs and requests then, and its CPU;
//   - a second cluster for doctor: NODEKEEPER_ULTRA_DOCTOR_NODES Nodes (a tenth of the main
//     cluster's, 10,000), ten pods per Node and twenty events per Node;
//   - the kubelet simulator's ceiling (internal/kubeletsim BenchmarkCapacity, with
//     NODEKEEPER_ULTRA_CAPACITY_ARGS such as -kubeletsim.max=2000), audit against grep -c -F
//     (internal/audit BenchmarkAuditVsScan), each on its own control plane after the others stopped;
//   - the release binaries' sizes beside kubectl's.
//
// NODEKEEPER_ULTRA_SKIP=main,capacity,audit,doctor leaves parts out (main: the main cluster), and
// so do explain, leases, gc and controller on the main cluster (explain,gc,controller,capacity,
// audit,doctor: leases -A alone). NODEKEEPER_ULTRA_GC_PAIRS and NODEKEEPER_ULTRA_GC_BASELINE repeat
// gc against raw (see gcVsRaw).
// NODEKEEPER_ULTRA_DOCTOR_BASELINE names another nodekeeper binary (one built from main, say):
// doctor then runs NODEKEEPER_ULTRA_RUNS times each, the two alternating on the same cluster,
// and the table says both, with each one's requests by verb, resource and page size.
//
//	go test ./internal/test/ultra -run '^$' -bench Ultra -benchtime 1x -timeout 180m
func BenchmarkUltra(b *testing.B) {
	s := readSizes(b)
	for range b.N {
		var rows []row
		add := func(r row) {
			rows = append(rows, r)
			progress("%s: %s (floor %s, peer %s)", r.what, r.value, dash(r.floor), dash(r.peer))
		}
		start := time.Now()

		progress("building the release binaries")
		bins := b.TempDir()
		nk, nkSize := buildRelease(b, bins, "github.com/nodekeeper/nodekeeper/cmd/nodekeeper")
		ctrl, ctrlSize := buildRelease(b, bins, "github.com/nodekeeper/nodekeeper/cmd/nodekeeper-controller")
		floorBin, _ := buildRelease(b, bins, "github.com/nodekeeper/nodekeeper/internal/test/ultra/floorlist")
		rawBin, _ := buildRelease(b, bins, "github.com/nodekeeper/nodekeeper/internal/test/rawdelete")
		kubectl := kubectlPath(b)
		kubectlSize := fileSize(b, kubectl)

		if !s.skip["main"] {
			mainCluster(b, s, nk, ctrl, floorBin, rawBin, kubectl, add)
		}
		if !s.skip["doctor"] {
			doctorCluster(b, s, nk, add)
		}

		if s.skip["capacity"] {
			add(row{"kubelet simulator ceiling (renewing every 10 s, all Ready)", "skipped", "", "2,000 (today's fault runs)", "≥ 5,000", ""})
		} else {
			progress("kubelet simulator ceiling: go test -bench Capacity ./internal/kubeletsim %s", s.capacityArgs)
			m := goBench(b, filepath.Join(b.TempDir(), "capacity.txt"), "github.com/nodekeeper/nodekeeper/internal/kubeletsim", "Capacity", strings.Fields(s.capacityArgs)...)
			v, ok := m["kubelets"]
			add(row{"kubelet simulator ceiling (renewing every 10 s, all Ready)", metric(v, ok, "%.0f"), "", "2,000 (today's fault runs)", "≥ 5,000", verdict(ok, v >= 5000)})
		}
		if s.skip["audit"] {
			add(row{"audit, worst-case log (300,000 events, 7,500 leaks)", "skipped", "grep -c -F", "", "≤ 2× scan", ""})
		} else {
			progress("audit against grep -c -F: go test -bench %s ./internal/audit", s.auditRx)
			m := goBench(b, filepath.Join(b.TempDir(), "audit.txt"), "github.com/nodekeeper/nodekeeper/internal/audit", s.auditRx)
			a, okA := m["audit-s"]
			sc, okS := m["scan-s"]
			x, okX := m["x-scan"]
			add(row{"audit, worst-case log (300,000 events, 7,500 leaks)",
				metric(a, okA, "%.2f s") + " (" + metric(x, okX, "%.1f×") + " scan)", metric(sc, okS, "%.2f s (grep -c -F)"), "", "≤ 2× scan", verdict(okX, x <= 2)})
		}
		add(row{"binary size: nodekeeper (CGO_ENABLED=0 -trimpath -s -w)", mib(nkSize), "", mib(kubectlSize) + " (kubectl)", "≤ kubectl", verdict(true, nkSize <= kubectlSize)})
		add(row{"binary size: nodekeeper-controller (same flags)", mib(ctrlSize), "", "", "≤ 25 MiB", verdict(true, ctrlSize <= 25<<20)})

		printTable(s, rows, time.Since(start))
	}
}

// mainCluster seeds the 100,000-node cluster and measures explain, leases -A, gc and the controller on it.
func mainCluster(b *testing.B, s sizes, nk, ctrl, floorBin, rawBin, kubectl string, add func(row)) {
	ctx := context.Background()
	progress("starting the main control plane")
	e, err := testenv.Start(ctx, testenv.Options{AuditPolicy: auditPolicy, APIServerArgs: apiServerArgs, StartTimeout: 5 * time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Stop()
	kc := func(user string) string {
		path := filepath.Join(b.TempDir(), user+".kubeconfig")
		if err := e.WriteKubeconfig(path, e.UserConfig(user, "system:masters")); err != nil {
			b.Fatal(err)
		}
		return path
	}
	cliKC, explainKC, ctrlKC := kc(userCLI), kc(userExplain), kc(userController)
	admin := protobufAdmin(b, e)

	// explain at the small size first, then the rest of the Nodes.
	t0 := time.Now()
	seedNodes(b, admin, 0, s.explainBase)
	progress("%d Nodes with their leases created in %s", s.explainBase, time.Since(t0).Round(time.Second))
	target := kubeletsim.NodeName(s.explainBase / 2)
	var smallWall time.Duration
	var smallReq int
	if !s.skip["explain"] {
		smallWall, smallReq = explain(b, e, nk, explainKC, target)
	}
	t0 = time.Now()
	seedNodes(b, admin, s.explainBase, s.nodes)
	progress("%d Nodes with their leases created in %s (%.0f objects/s)", s.nodes, time.Since(t0).Round(time.Second),
		float64(2*(s.nodes-s.explainBase))/time.Since(t0).Seconds())
	t0 = time.Now()
	e.SeedLeakedLeases(b, "ip-10-200-0", s.leaked, time.Now().Add(-2*time.Hour))
	progress("%d leaked leases created and backdated in %s", s.leaked, time.Since(t0).Round(time.Second))
	if !s.skip["explain"] {
		bigWall, bigReq := explain(b, e, nk, explainKC, target)
		add(row{fmt.Sprintf("explain NODE at %s Nodes: wall, API requests", count(s.nodes)), fmt.Sprintf("%s, %d requests", secs(bigWall), bigReq), "",
			fmt.Sprintf("%s, %d requests (at %s Nodes)", secs(smallWall), smallReq, count(s.explainBase)), "as fast as at 2,000",
			verdict(true, bigReq <= smallReq && bigWall <= smallWall*3/2+200*time.Millisecond)})
	}
	if !s.skip["leases"] {
		leasesAll(b, s, e, nk, floorBin, kubectl, cliKC, add)
	}
	if !s.skip["gc"] {
		gcVsRaw(b, s, e, nk, rawBin, cliKC, admin, add)
	}
	if !s.skip["controller"] {
		// The controller, on a fresh leaked set (the first one, when gc did not delete it).
		prefix := "ip-10-200-0"
		if !s.skip["gc"] {
			prefix = "ip-10-202-0"
			t0 = time.Now()
			e.SeedLeakedLeases(b, prefix, s.leaked, time.Now().Add(-2*time.Hour))
			progress("leaked set created again in %s", time.Since(t0).Round(time.Second))
		}
		controller(b, s, e, ctrl, ctrlKC, admin, prefix, add)
	}
}

// leasesAll times leases -A against the floor in-process and as a process, and kubectl; the order rotates.
func leasesAll(b *testing.B, s sizes, e *testenv.Env, nk, floorBin, kubectl, cliKC string, add func(row)) {
	ctx := context.Background()

	// leases -A: the floor in-process and as a process, nodekeeper, kubectl; the order rotates.
	// The floor reads pages of the size leases -A reads by default (kubectl's are 500).
	wantLeases := s.nodes + s.leaked
	if l, n, err := ListFloor(ctx, e.UserConfig(userCLI, "system:masters"), leasesview.DefaultChunkSize); err != nil || l < wantLeases || n != s.nodes {
		b.Fatalf("the floor listed %d leases and %d Nodes (%v), want at least %d and %d", l, n, err, wantLeases, s.nodes)
	}
	var floorRuns, inRuns, nkRuns, kcRuns []run
	sides := []func(){
		func() {
			floorRuns = append(floorRuns, timeProcess(b, floorBin, "--kubeconfig", cliKC, "-chunk-size", strconv.FormatInt(leasesview.DefaultChunkSize, 10)))
		},
		func() { nkRuns = append(nkRuns, timeProcess(b, nk, "leases", "-A", "--kubeconfig", cliKC)) },
		func() { kcRuns = append(kcRuns, timeProcess(b, kubectl, "get", "lease", "-A", "--kubeconfig", cliKC)) },
		func() {
			t := time.Now()
			if _, _, err := ListFloor(ctx, e.UserConfig(userCLI, "system:masters"), leasesview.DefaultChunkSize); err != nil {
				b.Fatal(err)
			}
			inRuns = append(inRuns, run{wall: time.Since(t)})
		},
	}
	for i := range s.runs {
		for j := range sides {
			sides[(i+j)%len(sides)]()
		}
	}
	floorWall, nkWall, kcWall := medianWall(floorRuns), medianWall(nkRuns), medianWall(kcRuns)
	add(row{fmt.Sprintf("leases -A over %s leases and %s Nodes: wall (median of %d)", count(wantLeases), count(s.nodes), s.runs),
		fmt.Sprintf("%s (%.2f× floor)", secs(nkWall), nkWall.Seconds()/floorWall.Seconds()),
		fmt.Sprintf("%s process, %s in-process (same page size)", secs(floorWall), secs(medianWall(inRuns))),
		secs(kcWall) + " (kubectl get lease -A)", "≤ 1.25× floor, < kubectl",
		verdict(true, nkWall.Seconds() <= 1.25*floorWall.Seconds() && nkWall < kcWall)})
	add(row{"leases -A: peak RSS", kib(maxPeak(nkRuns)), kib(maxPeak(floorRuns)), kib(maxPeak(kcRuns)) + " (kubectl)", "", ""})
}

// gcVsRaw times gc --dry-run once, then gc --yes against ../rawdelete -prefix (64 protobuf
// DELETEs in flight) on freshly seeded leaked sets, NODEKEEPER_ULTRA_GC_PAIRS rounds (1) whose
// order rotates; with NODEKEEPER_ULTRA_GC_BASELINE (another nodekeeper build) each round also runs
// that build's gc --yes, so that two builds are compared in the same conditions. The requests of
// each gc run come from the audit log.
func gcVsRaw(b *testing.B, s sizes, e *testenv.Env, nk, rawBin, cliKC string, admin kubernetes.Interface, add func(row)) {
	wantLeases := s.nodes + s.leaked
	dry := timeProcess(b, nk, "gc", "--dry-run", "--kubeconfig", cliKC)
	add(row{fmt.Sprintf("gc --dry-run, %s leaked among %s leases", count(s.leaked), count(wantLeases)), secs(dry.wall), "", "", "", ""})
	type side struct {
		name string
		bin  string
		args []string
	}
	sides := []side{{"gc", nk, []string{"gc", "--yes", "--kubeconfig", cliKC}}}
	if s.gcBaseline != "" {
		sides = append(sides, side{"baseline gc", s.gcBaseline, []string{"gc", "--yes", "--kubeconfig", cliKC}})
	}
	sides = append(sides, side{"raw", rawBin, []string{"--kubeconfig", cliKC}})
	runs := map[string][]run{}
	ratios := map[string][]float64{}
	seeded := 0
	for i := range s.gcPairs {
		walls := map[string]time.Duration{}
		for j := range sides {
			sd := sides[(i+j)%len(sides)]
			// The first leaked set is the one seeded with the Nodes (ip-10-200-0).
			prefix := "ip-10-200-0"
			if i > 0 || j > 0 {
				seeded++
				prefix = fmt.Sprintf("ip-10-%d-0", 210+seeded)
				t0 := time.Now()
				e.SeedLeakedLeases(b, prefix, s.leaked, time.Now().Add(-2*time.Hour))
				progress("leaked set %s created in %s", prefix, time.Since(t0).Round(time.Second))
			}
			args := sd.args
			if sd.name == "raw" {
				args = append(slices.Clone(args), "-prefix", prefix+"-")
			}
			since := time.Now()
			r := timeProcess(b, sd.bin, args...)
			until := time.Now()
			if left := countLeaked(b, admin, prefix); left != 0 {
				b.Fatalf("%s left %d leaked leases", sd.name, left)
			}
			evs := e.AuditEvents(b, userCLI, func(ev testenv.AuditEvent) bool {
				return ev.User.Username == userCLI && !ev.Received.Before(since) && ev.Received.Before(until)
			})
			progress("round %d: %s %s (%.0f/s, CPU %s): %s", i+1, sd.name, secs(r.wall), float64(s.leaked)/r.wall.Seconds(), secs(r.cpu), phases(evs, since))
			runs[sd.name] = append(runs[sd.name], r)
			walls[sd.name] = r.wall
		}
		for _, sd := range sides[:len(sides)-1] {
			ratios[sd.name] = append(ratios[sd.name], walls["raw"].Seconds()/walls[sd.name].Seconds())
		}
	}
	if live := countLeaked(b, admin, ""); live != s.nodes {
		b.Fatalf("%d leases left in %s after the deletes, want the %d live Nodes' leases", live, lease.NodeLeaseNamespace, s.nodes)
	}
	rate := func(d time.Duration) float64 { return float64(s.leaked) / d.Seconds() }
	raw := medianWall(runs["raw"])
	for _, sd := range sides[:len(sides)-1] {
		w := medianWall(runs[sd.name])
		ratio := medianFloat(ratios[sd.name])
		add(row{fmt.Sprintf("%s --yes, %s leaked: wall (deletes/s), median of %d", sd.name, count(s.leaked), s.gcPairs),
			fmt.Sprintf("%s (%.0f/s, %.2f of raw, median of pair ratios)", secs(w), rate(w), ratio),
			fmt.Sprintf("%s (%.0f/s, 64 raw DELETEs)", secs(raw), rate(raw)), "", "≥ raw rate", verdict(true, ratio >= 1)})
	}
}

// controller runs the controller binary on the seeded cluster, whose leaked set is the leases
// named prefix-*, and adds its rows.
func controller(b *testing.B, s sizes, e *testenv.Env, bin, kc string, admin kubernetes.Interface, prefix string, add func(row)) {
	addr := testenv.FreeAddr(b)
	logPath := filepath.Join(b.TempDir(), "controller.log")
	logf, err := os.Create(logPath)
	if err != nil {
		b.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(bin, "--kubeconfig", kc, "--leader-elect=false", "--metrics-bind-address", addr,
		"--metrics-secure=false", "--health-probe-bind-address", "0", "--qps", s.controllerQPS)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Killed with the benchmark: an interrupted run leaves no controller behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	defer func() {
		select {
		case <-exited:
		default:
			_ = cmd.Process.Kill()
			<-exited
		}
	}()
	pid := cmd.Process.Pid
	var synced, first, all time.Time
	deadline := start.Add(45 * time.Minute)
	for all.IsZero() {
		select {
		case <-exited:
			b.Fatalf("the controller exited: see %s", logPath)
		default:
		}
		if time.Now().After(deadline) {
			b.Fatalf("the controller did not delete %d leases within 45 minutes: see %s", s.leaked, logPath)
		}
		m := scrape(addr)
		now := time.Now()
		if synced.IsZero() && m["nodekeeper_cache_synced"] == 1 {
			synced = now
			progress("controller: caches synced after %s", now.Sub(start).Round(time.Millisecond))
		}
		deleted := m[`nodekeeper_lease_deletions_total{result="deleted"}`]
		if first.IsZero() && deleted >= 1 {
			first = now
		}
		if deleted >= float64(s.leaked) {
			all = now
		}
		time.Sleep(50 * time.Millisecond)
	}
	peakConverge := procStatus(pid, "VmHWM")
	progress("controller: %d deleted after %s; idle for %s", s.leaked, all.Sub(start).Round(time.Millisecond), s.idle)
	idleStart, cpu0 := time.Now(), procCPU(pid)
	time.Sleep(s.idle)
	idleCPU := procCPU(pid) - cpu0
	idleEnd := time.Now()
	rssIdle := procStatus(pid, "VmRSS")
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		b.Errorf("the controller ignored SIGTERM for 30 s")
	}
	var peak int64
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			peak = ru.Maxrss
		}
	}
	peak = max(peak, peakConverge)

	if left := countLeaked(b, admin, prefix); left != 0 {
		b.Errorf("the controller left %d leaked leases", left)
	}
	events := e.AuditEvents(b, userController, func(ev testenv.AuditEvent) bool { return ev.User.Username == userController })
	byVerb := func(from, to time.Time) (map[string]int, int) {
		m, n := map[string]int{}, 0
		for _, ev := range events {
			if !ev.Received.Before(from) && ev.Received.Before(to) {
				m[ev.Verb+" "+ev.Resource()]++
				n++
			}
		}
		return m, n
	}
	converge, convergeN := byVerb(start, all)
	afterSync, _ := byVerb(synced, idleEnd)
	idle, idleN := byVerb(idleStart, idleEnd)
	pages := func(n int) int { return (n + int(kube.DefaultChunkSize) - 1) / int(kube.DefaultChunkSize) }
	floorReq := pages(s.nodes+s.leaked) + pages(s.nodes) + 2 + s.leaked // two paginated LISTs, two WATCHes, one DELETE per leaked lease
	qps := "--qps " + s.controllerQPS

	add(row{"controller (" + qps + "): start → first leaked lease deleted", secs(first.Sub(start)), "", "", "", ""})
	add(row{fmt.Sprintf("controller: start → all %s leaked leases deleted", count(s.leaked)),
		fmt.Sprintf("%s (caches synced at %s)", secs(all.Sub(start)), secs(synced.Sub(start))), "", "", "", ""})
	add(row{"controller: peak RSS (ru_maxrss, VmHWM)", kib(peak), "", "", "≤ 1 GiB, metadata-only Nodes", verdict(true, peak <= 1<<20)})
	progress("controller: requests to convergence: %s", verbs(converge))
	progress("controller: requests in the idle window: %s", verbs(idle))
	add(row{"controller: API requests, start → converged (audit log)",
		fmt.Sprintf("%d (%d DELETE, %d GET Node, %d Event)", convergeN, converge["delete leases"], converge["get nodes"], converge["create events"]),
		fmt.Sprintf("%d (LIST pages, 2 WATCH, 1 DELETE a leak)", floorReq), "", "", ""})
	lists := afterSync["list leases"] + afterSync["list nodes"]
	add(row{"controller: LISTs after its caches synced (to the idle end)", strconv.Itoa(lists), "0", "", "no periodic re-LIST", verdict(true, lists == 0)})
	add(row{fmt.Sprintf("controller: steady state, %s idle after converging", s.idle),
		fmt.Sprintf("%.2f%% of a core, %.0f requests/min (%d Event), RSS %s", 100*idleCPU.Seconds()/idleEnd.Sub(idleStart).Seconds(),
			float64(idleN)/idleEnd.Sub(idleStart).Minutes(), idle["create events"], kib(rssIdle)), "", "", "", ""})
}

// doctorCluster seeds a second control plane with Nodes, pods and events, and times doctor on it.
func doctorCluster(b *testing.B, s sizes, nk string, add func(row)) {
	ctx := context.Background()
	progress("starting the doctor's control plane")
	e, err := testenv.Start(ctx, testenv.Options{AuditPolicy: auditPolicy, APIServerArgs: apiServerArgs, StartTimeout: 5 * time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Stop()
	admin := protobufAdmin(b, e)
	nodes, pods, events := s.doctorNodes, 10*s.doctorNodes, 20*s.doctorNodes
	t0 := time.Now()
	seedNodes(b, admin, 0, nodes)
	seedPodsAndEvents(b, admin, nodes, pods, events)
	progress("doctor's cluster: %d Nodes, %d pods, %d events created in %s", nodes, pods, events, time.Since(t0).Round(time.Second))
	path := filepath.Join(b.TempDir(), "doctor.kubeconfig")
	if err := e.WriteKubeconfig(path, e.UserConfig(userDoctor, "system:masters")); err != nil {
		b.Fatal(err)
	}
	// One doctor run: its wall time and peak RSS, and its requests as the API server's audit log
	// has them, all and by verb, resource and page size.
	doctorRun := func(bin string) (run, int, string) {
		since := time.Now()
		r := timeProcess(b, bin, "doctor", "--kubeconfig", path, "--fail-on", "none")
		progress("%s doctor: CPU %s", filepath.Base(bin), r.cpu.Round(10*time.Millisecond))
		evs := e.AuditEvents(b, userDoctor, func(ev testenv.AuditEvent) bool { return ev.User.Username == userDoctor && !ev.Received.Before(since) })
		return r, len(evs), requestShapes(evs)
	}
	if p := os.Getenv("NODEKEEPER_ULTRA_DOCTOR_PROFILE"); p != "" {
		profileDoctor(b, e.UserConfig(userDoctor, "system:masters"), p)
	}
	what := fmt.Sprintf("doctor at %s Nodes, %s pods, %s events", count(nodes), count(pods), count(events))
	baseline := os.Getenv("NODEKEEPER_ULTRA_DOCTOR_BASELINE")
	if baseline == "" {
		r, n, shapes := doctorRun(nk)
		progress("doctor's requests: %s", shapes)
		add(row{what + ": wall, API requests", fmt.Sprintf("%s, %d requests", secs(r.wall), n), "", "", "< 60 s", verdict(true, r.wall < time.Minute)})
		add(row{"doctor: peak RSS (ru_maxrss)", kib(r.peakKiB), "", "", "< 512 MiB", verdict(true, r.peakKiB < 512<<10)})
		return
	}
	var these, base []run
	var n, nBase int
	for i := range s.runs {
		r, c, shapes := doctorRun(nk)
		progress("doctor run %d: %s, %s, %d requests: %s", i+1, secs(r.wall), kib(r.peakKiB), c, shapes)
		rb, cb, shapesB := doctorRun(baseline)
		progress("baseline doctor run %d: %s, %s, %d requests: %s", i+1, secs(rb.wall), kib(rb.peakKiB), cb, shapesB)
		these, base, n, nBase = append(these, r), append(base, rb), c, cb
	}
	// The same findings from both: each report as JSON, its time of generation, its duration,
	// its stats (requests, pages) and the ages its messages quote ("last renewed 42s ago": the
	// runs are seconds apart) left out.
	reports := [2]string{}
	for i, bin := range []string{nk, baseline} {
		out, err := exec.Command(bin, "doctor", "--kubeconfig", path, "--fail-on", "none", "-o", "json").Output()
		if err != nil {
			b.Fatalf("%s doctor -o json: %v", filepath.Base(bin), err)
		}
		reports[i] = regexp.MustCompile(`"generated": *"[^"]*"|"durationSeconds": *[0-9.e+-]+|"stats": *\{[^}]*\}|[0-9][0-9a-z.]* ago`).ReplaceAllString(string(out), "")
	}
	if reports[0] != reports[1] {
		at := 0
		for at < min(len(reports[0]), len(reports[1])) && reports[0][at] == reports[1][at] {
			at++
		}
		from := max(at-500, 0)
		b.Fatalf("doctor's report differs from the baseline's at byte %d:\n%.1000s\n---\n%.1000s", at, reports[0][from:], reports[1][from:])
	}
	progress("doctor's JSON report (%d bytes) is the baseline's", len(reports[0]))
	w := medianWall(these)
	add(row{what + ": median wall, API requests", fmt.Sprintf("%s, %d requests", secs(w), n), "", fmt.Sprintf("%s, %d requests (baseline)", secs(medianWall(base)), nBase), "< 60 s", verdict(true, w < time.Minute)})
	add(row{"doctor: peak RSS (ru_maxrss)", kib(maxPeak(these)), "", kib(maxPeak(base)) + " (baseline)", "< 512 MiB", verdict(true, maxPeak(these) < 512<<10)})
}

// profileDoctor runs doctor in-process as the CLI does (its default rate limit) with a CPU
// profile written to path (NODEKEEPER_ULTRA_DOCTOR_PROFILE): where the client's own time goes.
func profileDoctor(b *testing.B, cfg *rest.Config, path string) {
	b.Helper()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	cfg, requests := kube.CountRequests(kube.Configure(cfg, "doctor", doctor.DefaultRateLimit))
	clients, err := kube.NewClients(cfg)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	rep, err := doctor.Run(context.Background(), doctor.DepsFrom(clients, requests), doctor.Options{Target: cfg.Host})
	pprof.StopCPUProfile()
	if err != nil {
		b.Fatal(err)
	}
	progress("in-process doctor: %s, %d requests, stats %v; CPU profile in %s", time.Since(start).Round(time.Millisecond), requests(), rep.Stats, path)
}

// requestShapes counts requests by verb, resource and, for LISTs, page size (limit=), and says
// how long the API server spent on them (received to response sent, as its audit log has it).
func requestShapes(evs []testenv.AuditEvent) string {
	m := map[string]int{}
	var server time.Duration
	for _, ev := range evs {
		server += ev.Completed.Sub(ev.Received)
		k := ev.Verb
		if ev.ObjectRef != nil {
			k += " " + ev.ObjectRef.Resource
		}
		if u, err := url.Parse(ev.RequestURI); err == nil && u.Query().Get("limit") != "" {
			k += " limit=" + u.Query().Get("limit")
		}
		m[k]++
	}
	return fmt.Sprintf("API server %s: %s", server.Round(10*time.Millisecond), verbs(m))
}

// protobufAdmin is the admin client the seeding uses: protobuf, no client-side rate limit.
func protobufAdmin(b *testing.B, e *testenv.Env) kubernetes.Interface {
	cfg := kube.Protobuf(e.AdminConfig())
	cfg.QPS = -1
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// seedNodes creates the Nodes kubeletsim.NodeName(from..to-1), shaped by their labels like EKS
// managed-node-group nodes but without status (objects only: no kubelet runs), each with its
// kubelet's lease, owned by the Node and renewed now, 64 creates in flight.
func seedNodes(b *testing.B, c kubernetes.Interface, from, to int) {
	b.Helper()
	ctx := context.Background()
	now := metav1.NewMicroTime(time.Now())
	if err := testenv.Parallel(to-from, 64, func(i int) error {
		i += from
		name := kubeletsim.NodeName(i)
		node, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"kubernetes.io/hostname":           name,
			"kubernetes.io/os":                 "linux",
			"node.kubernetes.io/instance-type": "m5.large",
			"topology.kubernetes.io/zone":      fmt.Sprintf("us-west-2%c", 'a'+i%3),
			"eks.amazonaws.com/nodegroup":      fmt.Sprintf("ng-%d", i%20),
		}}}, metav1.CreateOptions{FieldManager: "nodekeeper-bench"})
		if err != nil {
			return err
		}
		_, err = c.CoordinationV1().Leases(lease.NodeLeaseNamespace).Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: name, UID: node.UID}}},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(name), LeaseDurationSeconds: ptr.To[int32](40), RenewTime: &now},
		}, metav1.CreateOptions{FieldManager: "nodekeeper-bench"})
		return err
	}); err != nil {
		b.Fatal(err)
	}
}

// seedPodsAndEvents creates pods spread over the Nodes (bound by nodeName: no scheduler runs) in
// ten namespaces, and events about them, a tenth FailedCreatePodSandBox warnings as a cluster
// short of addresses writes them, the rest the normal lifecycle of a pod.
func seedPodsAndEvents(b *testing.B, c kubernetes.Interface, nodes, pods, events int) {
	b.Helper()
	ctx := context.Background()
	for i := range 10 {
		ns := fmt.Sprintf("team-%d", i)
		if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		// No kube-controller-manager runs to create each namespace's default ServiceAccount, which
		// the ServiceAccount admission plugin wants before it admits a pod.
		if _, err := c.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	podName := func(i int) (string, string) { return fmt.Sprintf("team-%d", i%10), fmt.Sprintf("app-%d", i) }
	if err := testenv.Parallel(pods, 64, func(i int) error {
		ns, name := podName(i)
		_, err := c.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": fmt.Sprintf("app-%d", i%100)}},
			Spec: corev1.PodSpec{NodeName: kubeletsim.NodeName(i % nodes),
				Containers: []corev1.Container{{Name: "app", Image: "public.ecr.aws/docker/library/busybox:1.36"}}},
		}, metav1.CreateOptions{FieldManager: "nodekeeper-bench"})
		return err
	}); err != nil {
		b.Fatal(err)
	}
	reasons := []struct{ typ, reason, msg string }{
		{corev1.EventTypeWarning, "FailedCreatePodSandBox", `Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox: plugin type="aws-cni" name="aws-cni" failed (add): add cmd: failed to assign an IP address to container`},
		{corev1.EventTypeNormal, "Scheduled", "Successfully assigned the pod to a node"},
		{corev1.EventTypeNormal, "Pulled", `Container image "public.ecr.aws/docker/library/busybox:1.36" already present on machine`},
		{corev1.EventTypeNormal, "Created", "Created container app"},
		{corev1.EventTypeNormal, "Started", "Started container app"},
	}
	now := metav1.NewTime(time.Now())
	if err := testenv.Parallel(events, 64, func(i int) error {
		ns, pod := podName(i % pods)
		r := reasons[i%len(reasons)]
		if i%10 == 0 {
			r = reasons[0]
		} else if r.reason == reasons[0].reason {
			r = reasons[1]
		}
		_, err := c.CoreV1().Events(ns).Create(ctx, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", pod, i)},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: pod, APIVersion: "v1"},
			Type:           r.typ, Reason: r.reason, Message: r.msg,
			Source:         corev1.EventSource{Component: "kubelet", Host: kubeletsim.NodeName((i % pods) % nodes)},
			FirstTimestamp: now, LastTimestamp: now, Count: 1,
		}, metav1.CreateOptions{FieldManager: "nodekeeper-bench"})
		return err
	}); err != nil {
		b.Fatal(err)
	}
}

// explain times `nodekeeper explain NODE` and counts its requests in the audit log.
func explain(b *testing.B, e *testenv.Env, nk, kc, node string) (time.Duration, int) {
	b.Helper()
	since := time.Now()
	r := timeProcess(b, nk, "explain", node, "--kubeconfig", kc)
	n := len(e.AuditEvents(b, userExplain, func(ev testenv.AuditEvent) bool { return ev.User.Username == userExplain && !ev.Received.Before(since) }))
	return r.wall, n
}

// countLeaked counts the leases in kube-node-lease whose name starts with prefix (all of them for "").
func countLeaked(b *testing.B, c kubernetes.Interface, prefix string) int {
	b.Helper()
	n := 0
	opts := metav1.ListOptions{Limit: 500}
	for {
		l, err := c.CoordinationV1().Leases(lease.NodeLeaseNamespace).List(context.Background(), opts)
		if err != nil {
			b.Fatal(err)
		}
		for _, x := range l.Items {
			if strings.HasPrefix(x.Name, prefix) {
				n++
			}
		}
		if opts.Continue = l.Continue; opts.Continue == "" {
			return n
		}
	}
}

func scrape(addr string) map[string]float64 {
	samples, err := promscrape.Get("http://" + addr + "/metrics")
	out := map[string]float64{}
	if err != nil {
		return out
	}
	for _, s := range samples {
		out[s.Series()] = s.Value
	}
	return out
}

// kubectlPath is the kubectl built with the control plane (the API server's release), else PATH's.
func kubectlPath(b *testing.B) string {
	if dir, err := controlplane.BinDir(""); err == nil {
		if p := filepath.Join(dir, "kubectl"); fileExists(p) {
			return p
		}
	}
	p, err := exec.LookPath("kubectl")
	if err != nil {
		b.Fatalf("kubectl is the peer of leases -A and of the binary size: %v", err)
	}
	return p
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

func fileSize(b *testing.B, p string) int64 {
	fi, err := os.Stat(p)
	if err != nil {
		b.Fatal(err)
	}
	return fi.Size()
}

func printTable(s sizes, rows []row, took time.Duration) {
	fmt.Printf("\nnodekeeper at ultra scale: %s Nodes + %s leaked leases (doctor: %s Nodes), %d paired runs, whole processes, %s UTC, run took %s\n",
		count(s.nodes), count(s.leaked), count(s.doctorNodes), s.runs, time.Now().UTC().Format("2006-01-02 15:04"), took.Round(time.Second))
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "FIGURE\tNODEKEEPER\tFLOOR\tPEER\tTARGET\tMET")
	for _, r := range rows {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", r.what, r.value, dash(r.floor), dash(r.peer), dash(r.target), dash(r.met))
	}
	_ = w.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func verdict(known, ok bool) string {
	switch {
	case !known:
		return "n/a"
	case ok:
		return "yes"
	}
	return "NO"
}

func metric(v float64, ok bool, format string) string {
	if !ok {
		return "n/a"
	}
	return fmt.Sprintf(format, v)
}

func secs(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }
func kib(k int64) string          { return fmt.Sprintf("%.1f MiB", float64(k)/1024) }
func mib(bytes int64) string      { return fmt.Sprintf("%.1f MiB", float64(bytes)/(1<<20)) }

// count writes n with thousands separators, as the issue and the docs do.
func count(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// verbs writes the request counts by verb and resource, largest first.
func verbs(m map[string]int) string {
	type kv struct {
		k string
		v int
	}
	var all []kv
	for k, v := range m {
		all = append(all, kv{k, v})
	}
	for i := range all {
		for j := i + 1; j < len(all); j++ {
			if all[j].v > all[i].v || (all[j].v == all[i].v && all[j].k < all[i].k) {
				all[i], all[j] = all[j], all[i]
			}
		}
	}
	parts := make([]string, len(all))
	for i, x := range all {
		parts[i] = fmt.Sprintf("%d %s", x.v, x.k)
	}
	return strings.Join(parts, ", ")
}

// medianFloat is the median of xs.
func medianFloat(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// phases writes each kind of request of one process's audit events with its count, the span
// from the first's arrival to the last's completion (seconds since start) and the mean time the
// API server took for one, which shows where a run's wall time went.
func phases(evs []testenv.AuditEvent, start time.Time) string {
	type span struct {
		n             int
		first, last   time.Time
		serverSeconds float64
	}
	m := map[string]*span{}
	var order []string
	for _, ev := range evs {
		k := ev.Verb + " " + ev.Resource()
		sp := m[k]
		if sp == nil {
			sp = &span{first: ev.Received}
			m[k] = sp
			order = append(order, k)
		}
		sp.n++
		if ev.Received.Before(sp.first) {
			sp.first = ev.Received
		}
		if ev.Completed.After(sp.last) {
			sp.last = ev.Completed
		}
		sp.serverSeconds += ev.Completed.Sub(ev.Received).Seconds()
	}
	parts := make([]string, len(order))
	for i, k := range order {
		sp := m[k]
		parts[i] = fmt.Sprintf("%d %s [%.2f–%.2f s, %.1f ms each]", sp.n, k, sp.first.Sub(start).Seconds(), sp.last.Sub(start).Seconds(), 1000*sp.serverSeconds/float64(sp.n))
	}
	return strings.Join(parts, ", ")
}
