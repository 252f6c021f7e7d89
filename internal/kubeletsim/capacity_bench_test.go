package kubeletsim_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/nodekeeper/nodekeeper/internal/kubeletsim"
)

var (
	capStart       = flag.Int("kubeletsim.start", envInt("NODEKEEPER_CAPACITY_START", 1000), "BenchmarkCapacity: kubelets in the first step (env NODEKEEPER_CAPACITY_START)")
	capStep        = flag.Int("kubeletsim.step", envInt("NODEKEEPER_CAPACITY_STEP", 1000), "BenchmarkCapacity: kubelets added per step (env NODEKEEPER_CAPACITY_STEP)")
	capMax         = flag.Int("kubeletsim.max", envInt("NODEKEEPER_CAPACITY_MAX", 6000), "BenchmarkCapacity: stop ramping at this many kubelets (env NODEKEEPER_CAPACITY_MAX)")
	capSettle      = flag.Duration("kubeletsim.settle", 20*time.Second, "BenchmarkCapacity: wait after each ramp before observing")
	capObserve     = flag.Duration("kubeletsim.observe", 60*time.Second, "BenchmarkCapacity: observation window per step (> node-monitor-grace-period 50 s)")
	capParallel    = flag.Int("kubeletsim.parallel", 16, "BenchmarkCapacity: registrations in flight while ramping")
	capRampTimeout = flag.Duration("kubeletsim.ramp-timeout", 3*time.Minute, "BenchmarkCapacity: a step whose registrations take longer fails")
)

// envInt is the integer in environment variable name, or def when it is unset or not a
// positive integer (BenchmarkCapacity then rejects the ramp by its flags' values).
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return n
	}
	return def
}

// BenchmarkCapacity ramps the number of simulated kubelets heartbeating at the kubelet's default
// 10 s interval against the local control plane (etcd, kube-apiserver, kube-controller-manager
// with the node lifecycle controller, all on this machine) and reports the largest count at which
// every node stays healthy for a whole observation window: each lease renewed within its
// 40 s duration at every sample, and the node lifecycle controller never marking a node
// anything but Ready. It runs the ramp once whatever b.N is.
//
// Each step also prints what a renewal costs each process (CPU above the idle control plane)
// and the ceiling of 2 cores at that cost, and the step that fails says
// what saturated: the machine's CPU, which process used most of it, and how late renewals were.
// To ask "does it hold 5,000?" directly:
//
//	NODEKEEPER_CAPACITY_START=5000 NODEKEEPER_CAPACITY_STEP=1000 NODEKEEPER_CAPACITY_MAX=8000 \
//	  go test ./internal/kubeletsim -run '^$' -bench Capacity -benchtime 1x -timeout 90m
func BenchmarkCapacity(b *testing.B) {
	if *capStart < 1 || *capStep < 1 || *capMax < *capStart {
		b.Fatalf("bad ramp: start %d step %d max %d", *capStart, *capStep, *capMax)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	adminCfg := env.AdminConfig()
	adminCfg.ContentType = "application/vnd.kubernetes.protobuf"
	admin := kubernetes.NewForConfigOrDie(adminCfg)
	w := newWatcher(ctx, admin)

	idle := idleCores(10 * time.Second)
	fleet := env.NewFleet(b)
	var names []string
	best, stop := 0, ""
	var lastGood stepResult
	b.ResetTimer()
	for target := *capStart; target <= *capMax; target += *capStep {
		var cfgs []kubeletsim.Config
		for i := len(names); i < target; i++ {
			cfgs = append(cfgs, kubeletsim.Config{Name: kubeletsim.NodeName(i)})
		}
		rampStart := time.Now()
		// An overloaded control plane cannot register nodes; that ends the ramp like any
		// other failure instead of retrying forever.
		rampCtx, cancelRamp := context.WithTimeout(ctx, *capRampTimeout)
		_, err := fleet.StartAll(rampCtx, cfgs, *capParallel)
		cancelRamp()
		for _, c := range cfgs {
			names = append(names, c.Name)
		}
		ramp := time.Since(rampStart)
		if err != nil {
			fmt.Printf("%5d kubelets: FAIL: registration did not finish within %s: %.200v\n", target, *capRampTimeout, err)
			stop = fmt.Sprintf("registration of %d kubelets did not finish within %s", target, *capRampTimeout)
			break
		}
		time.Sleep(*capSettle)
		res := observe(ctx, w, fleet, names, *capObserve)
		res.kubelets, res.ramp, res.idle = target, ramp, idle
		// Printed as it happens: a ramp takes minutes and b.Logf output only appears at the end.
		fmt.Println(res)
		fmt.Println("       " + res.costLine())
		if !res.healthy() {
			stop = fmt.Sprintf("%d kubelets: %s; %s", target, res.firstProblem, res.saturation())
			break
		}
		best, lastGood = target, res
	}
	if stop == "" {
		stop = fmt.Sprintf("not reached: every step up to %d kept every node Ready", *capMax)
	}
	b.StopTimer()
	b.ReportMetric(float64(best), "kubelets")
	if best > 0 {
		b.ReportMetric(lastGood.maxAge.Seconds(), "max-renew-age-s")
		b.ReportMetric(float64(lastGood.rssMB)/float64(best)*1024, "sim-KiB/kubelet")
		ceiling, _ := lastGood.cost().ceiling(2)
		b.ReportMetric(float64(ceiling), "ceiling-kubelets")
	}
	fmt.Printf("kubeletsim capacity: %d kubelets kept every node Ready (ramp %d+%d..%d, %s observation); limit: %s\n",
		best, *capStart, *capStep, *capMax, *capObserve, stop)
}

// stepResult is what one observation window saw.
type stepResult struct {
	kubelets               int
	ramp                   time.Duration
	samples                int
	staleLeases, notReady  int // worst sample
	missingLeases          int // worst sample
	maxAge, p99Age         time.Duration
	requestsPerSec, errors float64
	cpu                    map[string]float64 // cores used during the window, by component
	idle                   map[string]float64 // cores used before any kubelet ran, by component
	machineBusy            float64            // cores the whole machine used during the window
	renewInterval          time.Duration
	window                 time.Duration
	renewals               int64 // lease PUTs answered during the window
	rssMB                  int64
	goroutines             int
	firstProblem           string
}

func (r stepResult) healthy() bool {
	return r.samples > 0 && r.staleLeases == 0 && r.notReady == 0 && r.missingLeases == 0
}

func (r stepResult) String() string {
	var cpu []string
	for _, k := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "simulator"} {
		cpu = append(cpu, fmt.Sprintf("%s %.2f", k, r.cpu[k]))
	}
	verdict := "OK"
	if !r.healthy() {
		verdict = "FAIL: " + r.firstProblem
	}
	return fmt.Sprintf("%5d kubelets: %s | ramp %s, %d samples, renew age max %s p99 %s, stale %d, missing %d, not ready %d | %.0f req/s, %.0f errors/s | CPU cores: %s | simulator RSS %d MiB, %d goroutines",
		r.kubelets, verdict, r.ramp.Round(time.Second), r.samples, r.maxAge.Round(time.Millisecond), r.p99Age.Round(time.Millisecond),
		r.staleLeases, r.missingLeases, r.notReady, r.requestsPerSec, r.errors, strings.Join(cpu, ", "), r.rssMB, r.goroutines)
}

// cost is the window's CPU as a steady-state cost per kubelet (see BenchmarkRenewalCost).
func (r stepResult) cost() cost {
	c := cost{kubelets: r.kubelets, window: r.window, idleCores: r.idle, cpu: map[string]float64{}, renewals: r.renewals}
	if r.renewInterval > 0 {
		c.renewRate = 1 / r.renewInterval.Seconds()
	}
	for k, v := range r.cpu {
		c.cpu[k] = v * r.window.Seconds()
	}
	return c
}

// costLine is the step's CPU per renewal of each process and the 2-core ceiling it implies.
func (r stepResult) costLine() string {
	c := r.cost()
	var parts []string
	for _, p := range costProcesses {
		parts = append(parts, fmt.Sprintf("%s %.0f", p, c.perRenewal(p)*1e6))
	}
	n, top := c.ceiling(2)
	return fmt.Sprintf("cost µs CPU per renewal: %s | 2-core ceiling at this cost %d (largest: %s) | machine busy %.2f of %d cores",
		strings.Join(parts, ", "), n, top, r.machineBusy, runtime.NumCPU())
}

// saturation says what ran out when a step failed: the machine's CPU (and which process used
// most of it) when it was nearly all busy, and how late the latest renewal was.
func (r stepResult) saturation() string {
	top, topCores, own := "", 0.0, 0.0
	for _, p := range costProcesses {
		own += r.cpu[p]
		if r.cpu[p] > topCores {
			top, topCores = p, r.cpu[p]
		}
	}
	lag := max(r.maxAge-r.renewInterval, 0)
	cores := float64(runtime.NumCPU())
	verdict := "CPU not saturated"
	if r.machineBusy >= 0.9*cores {
		verdict = "CPU saturated"
	}
	return fmt.Sprintf("%s: machine %.2f of %.0f cores busy, the control plane and simulator %.2f (most: %s %.2f); latest renewal %s after its interval",
		verdict, r.machineBusy, cores, own, top, topCores, lag.Round(time.Millisecond))
}

// idleCores measures the cores each process uses for d before any kubelet runs.
func idleCores(d time.Duration) map[string]float64 {
	c0, t0 := cpuTimes(), time.Now()
	time.Sleep(d)
	c1 := cpuTimes()
	out := map[string]float64{}
	for k, v := range c1 {
		out[k] = (v - c0[k]) / time.Since(t0).Seconds()
	}
	return out
}

// machineCPU returns the busy and total CPU seconds of the whole machine so far, from /proc/stat.
func machineCPU() (busy, total float64) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal ...
	for i, v := range f[1:] {
		n, _ := strconv.ParseFloat(v, 64)
		if i >= 8 { // guest time is already in user
			break
		}
		total += n / 100
		if i != 3 && i != 4 {
			busy += n / 100
		}
	}
	return busy, total
}

// observe samples every second for d and records the worst state it saw.
func observe(ctx context.Context, w *watcher, fleet *kubeletsim.Fleet, names []string, d time.Duration) stepResult {
	res := stepResult{cpu: map[string]float64{}}
	cpu0, t0 := cpuTimes(), time.Now()
	busy0, _ := machineCPU()
	stats0 := fleet.Stats()
	var ages []time.Duration
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for end := time.Now().Add(d); time.Now().Before(end); {
		select {
		case <-ctx.Done():
			return res
		case <-tick.C:
		}
		now := time.Now()
		stale, missing, notReady := 0, 0, 0
		for _, n := range names {
			l := w.lease(n)
			if l == nil || l.Spec.RenewTime == nil {
				missing++
				if res.firstProblem == "" {
					res.firstProblem = "no lease for " + n
				}
				continue
			}
			age := now.Sub(l.Spec.RenewTime.Time)
			ages = append(ages, age)
			if age > time.Duration(*l.Spec.LeaseDurationSeconds)*time.Second {
				stale++
				if res.firstProblem == "" {
					res.firstProblem = fmt.Sprintf("lease %s not renewed for %s", n, age.Round(time.Millisecond))
				}
			}
			if !w.ready(n) {
				notReady++
				if res.firstProblem == "" {
					res.firstProblem = "node " + n + " not Ready"
				}
			}
		}
		res.samples++
		res.staleLeases = max(res.staleLeases, stale)
		res.missingLeases = max(res.missingLeases, missing)
		res.notReady = max(res.notReady, notReady)
	}
	elapsed := time.Since(t0).Seconds()
	cpu1 := cpuTimes()
	busy1, _ := machineCPU()
	res.machineBusy = (busy1 - busy0) / elapsed
	if ks := fleet.Kubelets(); len(ks) > 0 {
		res.renewInterval = ks[0].Config().RenewInterval
	}
	for k, v := range cpu1 {
		res.cpu[k] = (v - cpu0[k]) / elapsed
	}
	st := fleet.Stats().Sub(stats0)
	res.window, res.renewals = time.Duration(elapsed*float64(time.Second)), st.LeaseUpdate
	res.requestsPerSec = float64(st.Total) / elapsed
	res.errors = float64(st.Errors) / elapsed
	sort.Slice(ages, func(i, j int) bool { return ages[i] < ages[j] })
	if len(ages) > 0 {
		res.maxAge = ages[len(ages)-1]
		res.p99Age = ages[len(ages)*99/100]
	}
	res.rssMB = rssMiB()
	res.goroutines = runtime.NumGoroutine()
	return res
}

// watcher keeps the benchmark's view of leases and nodes from informers, so sampling thousands
// of objects every second costs the API server nothing beyond the watch.
type watcher struct {
	leases cache.Store
	nodes  cache.Store
}

func newWatcher(ctx context.Context, c kubernetes.Interface) *watcher {
	lf := informers.NewSharedInformerFactoryWithOptions(c, 0, informers.WithNamespace(kubeletsim.NodeLeaseNamespace))
	nf := informers.NewSharedInformerFactory(c, 0)
	li := lf.Coordination().V1().Leases().Informer()
	ni := nf.Core().V1().Nodes().Informer()
	lf.Start(ctx.Done())
	nf.Start(ctx.Done())
	cache.WaitForCacheSync(ctx.Done(), li.HasSynced, ni.HasSynced)
	return &watcher{leases: li.GetStore(), nodes: ni.GetStore()}
}

func (w *watcher) lease(name string) *coordinationv1.Lease {
	obj, ok, _ := w.leases.GetByKey(kubeletsim.NodeLeaseNamespace + "/" + name)
	if !ok {
		return nil
	}
	return obj.(*coordinationv1.Lease)
}

func (w *watcher) ready(name string) bool {
	obj, ok, _ := w.nodes.GetByKey(name)
	if !ok {
		return false
	}
	for _, c := range obj.(*corev1.Node).Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// cpuTimes returns the CPU seconds used so far by each control plane component and by this
// process (the simulator), from /proc.
func cpuTimes() map[string]float64 {
	out := map[string]float64{}
	read := func(pid string) (string, float64) {
		data, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil {
			return "", 0
		}
		s := string(data)
		open, closeIdx := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || closeIdx < open {
			return "", 0
		}
		comm := s[open+1 : closeIdx]
		f := strings.Fields(s[closeIdx+2:])
		if len(f) < 13 {
			return "", 0
		}
		// Fields 14 and 15 of stat (utime, stime) in clock ticks of 1/100 s.
		ut, _ := strconv.ParseFloat(f[11], 64)
		st, _ := strconv.ParseFloat(f[12], 64)
		return comm, (ut + st) / 100
	}
	// PIDs lists etcd, kube-apiserver, kube-controller-manager in that order.
	components := []string{"etcd", "kube-apiserver", "kube-controller-manager"}
	for i, pid := range env.PIDs() {
		if comm, v := read(strconv.Itoa(pid)); comm != "" && i < len(components) {
			out[components[i]] = v
		}
	}
	_, out["simulator"] = read("self")
	return out
}

func rssMiB() int64 { return rssMiBOf("self") }

// rssMiBOf is the resident memory of process pid ("self" for this one) in MiB, 0 if unknown.
func rssMiBOf(pid string) int64 {
	data, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			f := strings.Fields(line)
			if len(f) >= 2 {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				return kb / 1024
			}
		}
	}
	return 0
}
