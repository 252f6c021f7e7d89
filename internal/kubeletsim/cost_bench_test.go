package kubeletsim_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nodekeeper/nodekeeper/internal/kubeletsim"
)

// costPprofEnv names the file BenchmarkRenewalCost writes the API server's CPU profile of its
// window to; the simulator's goes to the same name with ".simulator" appended, the API
// server's /metrics at the window's start and end with ".metrics-start" and ".metrics-end".
const costPprofEnv = "NODEKEEPER_COST_PPROF"

// profileAPIServer writes a CPU profile of the API server over the next d to the file named by
// NODEKEEPER_COST_PPROF, if set; the channel closes when it is written.
func profileAPIServer(b *testing.B, d time.Duration) <-chan struct{} {
	done := make(chan struct{})
	path := os.Getenv(costPprofEnv)
	if path == "" {
		close(done)
		return done
	}
	if f, err := os.Create(path + ".simulator"); err != nil {
		b.Fatal(err)
	} else if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	} else {
		time.AfterFunc(d, func() { pprof.StopCPUProfile(); f.Close() })
	}
	writeMetrics := func(suffix string) {
		raw, err := env.AdminClient().CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
		if err == nil {
			err = os.WriteFile(path+suffix, raw, 0o644)
		}
		if err != nil {
			b.Errorf("API server metrics: %v", err)
		}
	}
	writeMetrics(".metrics-start")
	go func() {
		defer close(done)
		defer writeMetrics(".metrics-end")
		raw, err := env.AdminClient().CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
			Param("seconds", strconv.Itoa(int(d.Seconds())-1)).Timeout(d + time.Minute).DoRaw(context.Background())
		if err == nil {
			err = os.WriteFile(path, raw, 0o644)
		}
		if err != nil {
			b.Errorf("API server profile: %v", err)
		}
	}()
	return done
}

// waitNodesRegistered waits until the node lifecycle controller has recorded a RegisteredNode
// event for n nodes, which it does once it has taken a new node in (with a patch of the node).
// It gives up after timeout with a note, so a control plane without one does not hang the bench.
func waitNodesRegistered(ctx context.Context, b *testing.B, n int, timeout time.Duration) {
	start := time.Now()
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		evs, err := env.AdminClient().CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{
			FieldSelector:   fields.OneTermEqualSelector("reason", "RegisteredNode").String(),
			ResourceVersion: "0",
		})
		if err != nil {
			return false, nil
		}
		return len(evs.Items) >= n, nil
	})
	if err != nil {
		fmt.Printf("note: the node controller had not taken in all %d nodes after %s; its work counts in the window\n", n, timeout)
		return
	}
	fmt.Printf("node controller took in %d nodes in %s\n", n, time.Since(start).Round(time.Second))
}

// costEnvInt reads a positive integer from an environment variable, or def when it is unset.
func costEnvInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// costEnvDuration reads a positive duration from an environment variable, or def when it is unset.
func costEnvDuration(b *testing.B, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		b.Fatalf("%s=%q: want a positive duration such as 60s", name, v)
	}
	return d
}

// cost is what a fleet in steady state costs per kubelet, measured over a fixed window: CPU
// seconds of each process (from /proc, so other load on the machine changes them little),
// the simulator's allocations, and its goroutines and heap.
type cost struct {
	kubelets  int
	window    time.Duration
	renewals  int64              // lease PUTs answered during the window
	renewRate float64            // renewals per kubelet-second the kubelets need
	requests  int64              // every request the fleet sent during the window
	idleCores map[string]float64 // cores each process used before any kubelet ran
	cpu       map[string]float64 // CPU seconds each process used during the window
	mallocs   uint64             // simulator allocations during the window
	allocated uint64             // simulator bytes allocated during the window
	heap      uint64             // simulator heap in use per kubelet, bytes
	stack     uint64             // simulator goroutine stacks per kubelet, bytes
	routines  float64            // simulator goroutines per kubelet
	rssMiB    map[string]int64   // resident memory of each process after the window
}

// perKubeletSecond is the CPU seconds process spends per kubelet and second of steady state,
// above its idle use.
func (c cost) perKubeletSecond(process string) float64 {
	busy := c.cpu[process] - c.idleCores[process]*c.window.Seconds()
	return max(busy, 0) / (float64(c.kubelets) * c.window.Seconds())
}

// costProcesses are the processes of the 2-core box, in the order they are printed.
var costProcesses = []string{"simulator", "kube-apiserver", "etcd", "kube-controller-manager"}

// perRenewal is the CPU seconds process spends per lease renewal, above its idle use: all of a
// kubelet's work charged to the one request it sends every renew interval.
func (c cost) perRenewal(process string) float64 {
	busy := c.cpu[process] - c.idleCores[process]*c.window.Seconds()
	return max(busy, 0) / float64(max(c.renewals, 1))
}

// ceiling is how many kubelets cores can carry at this cost, after the idle use of every
// process. It charges the cost per renewal at the renew rate kubelets need (one per 10 s), not
// the rate they managed: on a saturated machine renewals fall behind, and CPU per kubelet-second
// then looks cheaper than keeping up would be.
func (c cost) ceiling(cores float64) (int, string) {
	perKubelet, idle := 0.0, 0.0
	top, topCost := "", 0.0
	for _, p := range costProcesses {
		perKubelet += c.perRenewal(p) * c.renewRate
		idle += c.idleCores[p]
		if c.perRenewal(p) > topCost {
			top, topCost = p, c.perRenewal(p)
		}
	}
	if perKubelet == 0 {
		return 0, ""
	}
	return int((cores - idle) / perKubelet), top
}

func (c cost) String() string {
	s := fmt.Sprintf("%d kubelets, %s window: %d renewals (%.2f/kubelet/s), %d requests\n",
		c.kubelets, c.window, c.renewals, float64(c.renewals)/float64(c.kubelets)/c.window.Seconds(), c.requests)
	for _, p := range costProcesses {
		s += fmt.Sprintf("  %-24s %7.1f µs CPU per kubelet-second (%6.0f µs per renewal), idle %.3f cores, RSS %d MiB\n", p,
			c.perKubeletSecond(p)*1e6, c.perRenewal(p)*1e6, c.idleCores[p], c.rssMiB[p])
	}
	n, top := c.ceiling(2)
	s += fmt.Sprintf("  simulator: %.0f allocs and %.1f KiB allocated per renewal, %.1f goroutines, %.1f KiB heap and %.1f KiB stacks per kubelet\n",
		float64(c.mallocs)/float64(max(c.renewals, 1)), float64(c.allocated)/1024/float64(max(c.renewals, 1)), c.routines,
		float64(c.heap)/1024, float64(c.stack)/1024)
	s += fmt.Sprintf("  ceiling of 2 cores at this cost per renewal and %.2f renewals per kubelet-second: %d kubelets (largest share: %s)", c.renewRate, n, top)
	return s
}

// BenchmarkRenewalCost measures what one simulated kubelet costs the machine in steady state:
// CPU per kubelet-second of the simulator, kube-apiserver, etcd and kube-controller-manager,
// the simulator's allocations per renewal, and its goroutines and memory per kubelet. Unlike
// BenchmarkCapacity's wall-clock ramp these are costs, which other load on the machine changes
// little, and they give the ceiling of a quiet 2-core machine: the cores left after the idle
// control plane, divided by the CPU one kubelet needs per second.
//
//	NODEKEEPER_COST_KUBELETS=1000 NODEKEEPER_COST_WINDOW=60s \
//	  go test ./internal/kubeletsim -run '^$' -bench RenewalCost -benchtime 1x -timeout 30m
func BenchmarkRenewalCost(b *testing.B) {
	n := costEnvInt(b, "NODEKEEPER_COST_KUBELETS", 500)
	window := costEnvDuration(b, "NODEKEEPER_COST_WINDOW", 60*time.Second)
	ctx := context.Background()

	c := cost{kubelets: n, window: window, idleCores: map[string]float64{}, cpu: map[string]float64{},
		renewRate: 1 / (kubeletsim.DefaultLeaseDurationSeconds * time.Second / 4).Seconds()}
	idle0, idleStart := cpuTimes(), time.Now()
	time.Sleep(10 * time.Second)
	idle1 := cpuTimes()
	for k, v := range idle1 {
		c.idleCores[k] = (v - idle0[k]) / time.Since(idleStart).Seconds()
	}
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	routines0 := runtime.NumGoroutine()

	fleet := env.NewFleet(b)
	cfgs := make([]kubeletsim.Config, n)
	for i := range cfgs {
		cfgs[i] = kubeletsim.Config{Name: kubeletsim.NodeName(i)}
	}
	if _, err := fleet.StartAll(ctx, cfgs, 16); err != nil {
		b.Fatal(err)
	}
	// Past the node controller's work on new nodes (an event and a patch per node, which would
	// count as steady state otherwise) and every kubelet's first renewal, then a fixed window.
	waitNodesRegistered(ctx, b, n, 5*time.Minute)
	time.Sleep(2 * kubeletsim.DefaultNodeStatusUpdateFrequency)

	b.ResetTimer()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	stats0, cpu0, t0 := fleet.Stats(), cpuTimes(), time.Now()
	// A profiler can attach to these processes for the window (for example perf record -p).
	fmt.Printf("cost window of %s starts: etcd, kube-apiserver, kube-controller-manager are PIDs %v, the simulator %d\n", window, env.PIDs(), os.Getpid())
	profiled := profileAPIServer(b, window)
	time.Sleep(window)
	<-profiled
	cpu1, stats1 := cpuTimes(), fleet.Stats()
	c.window = time.Since(t0)
	runtime.ReadMemStats(&m1)
	b.StopTimer()

	for k, v := range cpu1 {
		c.cpu[k] = v - cpu0[k]
	}
	st := stats1.Sub(stats0)
	c.renewals, c.requests = st.LeaseUpdate, st.Total
	c.mallocs, c.allocated = m1.Mallocs-m0.Mallocs, m1.TotalAlloc-m0.TotalAlloc
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	c.heap = (after.HeapInuse - min(after.HeapInuse, before.HeapInuse)) / uint64(n)
	c.stack = (after.StackInuse - min(after.StackInuse, before.StackInuse)) / uint64(n)
	c.routines = float64(runtime.NumGoroutine()-routines0) / float64(n)
	c.rssMiB = map[string]int64{"simulator": rssMiBOf("self")}
	for i, pid := range env.PIDs() {
		if i < len(costProcesses)-1 {
			c.rssMiB[[]string{"etcd", "kube-apiserver", "kube-controller-manager"}[i]] = rssMiBOf(strconv.Itoa(pid))
		}
	}
	if path := os.Getenv(costPprofEnv); path != "" {
		if f, err := os.Create(path + ".simulator-heap"); err == nil {
			pprof.WriteHeapProfile(f)
			f.Close()
		}
	}
	fmt.Println(c)

	for _, p := range costProcesses {
		b.ReportMetric(c.perRenewal(p)*1e6, p+"-µs/renewal")
	}
	b.ReportMetric(float64(c.mallocs)/float64(max(c.renewals, 1)), "sim-allocs/renewal")
	b.ReportMetric(c.routines, "sim-goroutines/kubelet")
	b.ReportMetric(float64(c.heap+c.stack)/1024, "sim-KiB/kubelet")
	ceiling, _ := c.ceiling(2)
	b.ReportMetric(float64(ceiling), "ceiling-kubelets")
}
