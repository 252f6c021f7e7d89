package checks_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodekeeper/nodekeeper/internal/cli"
	"github.com/nodekeeper/nodekeeper/internal/controller/checks"
	"github.com/nodekeeper/nodekeeper/internal/controller/command"
	"github.com/nodekeeper/nodekeeper/internal/kubeletsim"
	"github.com/nodekeeper/nodekeeper/internal/test/kubeletstub"
	"github.com/nodekeeper/nodekeeper/internal/test/promscrape"
	"github.com/nodekeeper/nodekeeper/internal/test/testenv"
)

// controllerArgsEnv, when set, makes the test binary run the controller's command with these
// arguments (separated by \x1f) instead of the tests: the benchmark's controllers are processes
// of their own, so that their CPU time and peak RSS are theirs alone.
const controllerArgsEnv = "NODEKEEPER_CHECKS_BENCH_CONTROLLER"

// runControllerChild runs the controller's command as nodekeeper-controller does.
func runControllerChild(args string) int {
	ctx, stop := cli.NotifyContext(context.Background())
	defer stop()
	root := command.NewRoot(os.Stdin, os.Stdout, os.Stderr)
	root.SetArgs(strings.Split(args, "\x1f"))
	return cli.Execute(ctx, root, os.Stderr)
}

type child struct {
	cmd    *exec.Cmd
	addr   string
	log    string // the child's stdout and stderr
	exited chan struct{}
}

// startController runs the controller's command in a process of its own (the test binary in
// the child mode of TestMain) with its metrics on a free loopback port (plain HTTP) and no
// probes; env is added to the process's environment. The child is stopped when the test ends.
func startController(t testing.TB, env []string, args ...string) *child {
	t.Helper()
	addr := testenv.FreeAddr(t)
	args = append([]string{"--metrics-bind-address=" + addr, "--metrics-secure=false", "--health-probe-bind-address=0"}, args...)
	c := &child{addr: addr, log: filepath.Join(t.TempDir(), "controller.log"), exited: make(chan struct{})}
	logf, err := os.Create(c.log)
	if err != nil {
		t.Fatal(err)
	}
	c.cmd = exec.Command(os.Args[0], "-test.run=^$")
	c.cmd.Env = append(append(os.Environ(), env...), controllerArgsEnv+"="+strings.Join(args, "\x1f"))
	c.cmd.Stdout, c.cmd.Stderr = logf, logf
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.cmd.Wait(); logf.Close(); close(c.exited) }()
	t.Cleanup(func() { c.stop() })
	return c
}

// stop sends SIGTERM, as the kubelet does to a pod it stops, and waits for the process to end
// (killing it if it has not after 30 s).
func (c *child) stop() {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(30 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.exited
	}
}

// tail is the end of the child's log, for a failing test's message.
func (c *child) tail() string {
	raw, _ := os.ReadFile(c.log)
	if len(raw) > 4000 {
		raw = raw[len(raw)-4000:]
	}
	return string(raw)
}

// startBenchController runs a controller with the benchmark's settings: no leader election (each
// controller acts alone) and a grace period that deletes no lease.
func startBenchController(b *testing.B, kubeconfig string, extra ...string) *child {
	b.Helper()
	return startController(b, nil, append([]string{"--kubeconfig=" + kubeconfig, "--leader-elect=false", "--grace-period=8760h"}, extra...)...)
}

// metric sums the samples of name (with label=value when label is set) on the child's /metrics.
func (c *child) metric(name, label, value string) (float64, error) {
	samples, err := promscrape.Get("http://" + c.addr + "/metrics")
	if err != nil {
		return 0, err
	}
	if label == "" {
		return promscrape.Sum(samples, name), nil
	}
	return promscrape.Sum(samples, name, label, value), nil
}

// cpuSeconds is the child's user+system CPU time so far.
func (c *child) cpuSeconds(b *testing.B) float64 {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	// The fields after the command name (in parentheses, which may hold spaces).
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100 // USER_HZ is 100 on Linux
}

// peakRSSMiB is the child's VmHWM.
func (c *child) peakRSSMiB(b *testing.B) float64 {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kib, _ := strconv.Atoi(f[1])
			return float64(kib) / 1024
		}
	}
	b.Fatal("no VmHWM")
	return 0
}

// benchEnv reads a positive integer or duration setting of the benchmark from the environment.
func benchEnv[T int | time.Duration](b *testing.B, name string, def T) T {
	b.Helper()
	raw := os.Getenv(name)
	if raw == "" {
		return def
	}
	var v T
	switch p := any(&v).(type) {
	case *int:
		n, err := strconv.Atoi(raw)
		if err != nil {
			b.Fatalf("%s=%q: want a whole number", name, raw)
		}
		*p = n
	case *time.Duration:
		d, err := time.ParseDuration(raw)
		if err != nil {
			b.Fatalf("%s=%q: want a duration such as 150s", name, raw)
		}
		*p = d
	}
	if v <= 0 {
		b.Fatalf("%s=%q: want a positive value", name, raw)
	}
	return v
}

// runEnd is the end of one check run as the child's log says it ("Check run", at -v=1 for
// checks.go), with both controllers' CPU time read the moment the test saw it.
type runEnd struct {
	seen             time.Time
	duration         time.Duration
	result           string
	cpu, baselineCPU float64
}

var (
	runLine     = regexp.MustCompile(`\] "Check run" .*result="(\w+)" duration="([^"]+)"`)
	runFailLine = regexp.MustCompile(`\] "Check run failed`)
)

// nextRun waits for the child's next "Check run" log line after offset (polled every 100 ms,
// which costs the child nothing) and reads the CPU time of the child and of baseline at once.
func (c *child) nextRun(b *testing.B, offset *int64, baseline *child, timeout time.Duration) runEnd {
	b.Helper()
	deadline := time.Now().Add(timeout)
	for {
		raw, err := os.ReadFile(c.log)
		if err != nil {
			b.Fatal(err)
		}
		if int64(len(raw)) > *offset {
			chunk := raw[*offset:]
			if end := bytes.LastIndexByte(chunk, '\n'); end >= 0 {
				for _, line := range strings.Split(string(chunk[:end]), "\n") {
					*offset += int64(len(line)) + 1
					if runFailLine.MatchString(line) {
						b.Fatalf("a check run failed (a run longer than the interval is cut at it: raise %s):\n%s", benchIntervalEnv, line)
					}
					m := runLine.FindStringSubmatch(line)
					if m == nil {
						continue
					}
					r := runEnd{seen: time.Now(), result: m[1], cpu: c.cpuSeconds(b), baselineCPU: baseline.cpuSeconds(b)}
					if r.duration, err = time.ParseDuration(m[2]); err != nil {
						b.Fatalf("check run duration %q: %v", m[2], err)
					}
					return r
				}
			}
		}
		select {
		case <-c.exited:
			b.Fatalf("the controller with --checks exited:\n%s", c.tail())
		default:
		}
		if time.Now().After(deadline) {
			b.Fatalf("no check run ended within %s:\n%s", timeout, c.tail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// The benchmark's settings (environment variables): the cluster's size, the check interval it
// runs the controller at and how many runs it measures after the first.
const (
	benchNodesEnv    = "NODEKEEPER_CHECKS_BENCH_NODES"
	benchIntervalEnv = "NODEKEEPER_CHECKS_BENCH_INTERVAL"
	benchRunsEnv     = "NODEKEEPER_CHECKS_BENCH_RUNS"
)

// BenchmarkControllerChecks2000 measures what `controller --checks` costs at issue 28's scale:
// 2,000 Nodes (t3.small, ten node groups), 20,000 pods of which 300 are stuck (on 30 nodes whose
// ipamd reports subnet exhaustion), 2,000 aws-node pods whose ipamd metrics are read through the
// real pod proxy. NODEKEEPER_CHECKS_BENCH_NODES scales it all (ten pods a node, 1.5 % of the
// nodes with ten stuck pods each), to prove the benchmark at a small size.
//
// Method. Two controllers run the real command as processes of their own on the same cluster:
// today's (no --checks) and one with --checks. The second runs its checks every
// NODEKEEPER_CHECKS_BENCH_INTERVAL (default 180 s, not the 5-minute default, so that the
// benchmark ends in about ten minutes on a quiet two-core machine: a run takes about 11 s at
// 200 nodes and 18 s at 300 on a loaded one, and grows with the nodes, one pod-proxy read of
// ipamd's metrics each through the loop's client limit of 20 requests per second, so about
// 120 s at 2,000; a run longer than the interval is cut at it, and the benchmark then fails and
// says to raise the interval). The first run warms up and
// is not counted; of each of the NODEKEEPER_CHECKS_BENCH_RUNS (default 2) runs after it the
// benchmark reads the process's CPU time (/proc: utime+stime) just before the run starts (its
// start is the previous start plus the interval, and the previous start is the end the log
// reports minus the duration it reports) and the moment its "Check run" log line appears, and
// in between the runs it reads the idle CPU rate. A run's CPU is its window's CPU less the idle
// rate over the window's time outside the run. Over an hour at the default 5-minute interval
// the controller with --checks then spends 12 runs' CPU plus its idle rate, and the check
// loop's share of one core is 12 runs' CPU over 3,600 s (issue 28's target: at most 5 %). The
// run's cost does not depend on the interval: each run lists and reads everything afresh
// (no informer). API requests are client-go's rest_client_requests_total of each process over
// the measured intervals; peak RSS is each process's VmHWM at the end (target: at most 2x
// today's). It fails rather than print the figures of a run that failed or was cut short.
func BenchmarkControllerChecks2000(b *testing.B) {
	nodes := benchEnv(b, benchNodesEnv, 2000)
	interval := benchEnv(b, benchIntervalEnv, 180*time.Second)
	measured := benchEnv(b, benchRunsEnv, 2)
	const (
		podsPerNode  = 10
		groups       = 10
		idleMargin   = 2 * time.Second // the idle reading is taken this long before a run starts
		runsPerHour  = 12              // at the default 5-minute interval
		hour         = 3600.0
		coreTarget   = 5.0 // % of one core
		rssTarget    = 2.0
		setupTimeout = 20 * time.Minute
	)
	stuckNodes := max(1, nodes*30/2000) // 10 stuck pods each: 300 at 2,000 nodes
	e, err := testenv.Start(context.Background(), testenv.Options{StartTimeout: 5 * time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	prev := env
	env = e
	b.Cleanup(func() { env = prev; e.Stop() })
	ctx := context.Background()
	admin := env.AdminClient()
	setup := time.Now()

	ds := env.CreateAWSNode(b, "aws-node", "602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon-k8s-cni:v1.23.0-eksbuild.1",
		map[string]string{"CLUSTER_ENDPOINT": "https://example.eks.amazonaws.com", "WARM_ENI_TARGET": "1"})
	ns, err := kubeletstub.New()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ns.Close() })
	healthy, subnet := ipamdBody(b, 6, 4, 0), ipamdBody(b, 3, 3, 6)
	ipamd, err := kubeletstub.StartIPAMD(ns, make([]int, nodes), func(i int) []byte {
		if i < stuckNodes {
			return subnet
		}
		return healthy
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ipamd.Close() })
	eps := ipamd.Endpoints()
	names := make([]string, nodes)
	if err := testenv.Parallel(nodes, 32, func(i int) error {
		names[i] = fmt.Sprintf("ip-10-90-%d-%d.ec2.internal", i/250, i%250+1)
		return createBenchNode(ctx, admin, names[i], fmt.Sprintf("mng-%d", i%groups), ns.NSIP)
	}); err != nil {
		b.Fatal(err)
	}
	if err := testenv.Parallel(nodes, 32, func(i int) error {
		return createAWSNodePod(ctx, admin, ds, names[i], ns.NSIP, eps[i].Port)
	}); err != nil {
		b.Fatal(err)
	}
	const team = "bench-team"
	if err := kubeletsim.EnsureNamespace(ctx, admin, team); err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	if err := testenv.Parallel(nodes*podsPerNode, 32, func(i int) error {
		node := i % nodes
		spec := kubeletsim.PodSpec{Namespace: team, Name: fmt.Sprintf("app-%05d", i), Node: names[node], ScheduledAt: now.Add(-20 * time.Minute)}
		if node < stuckNodes {
			_, err := kubeletsim.CreateStuckPod(ctx, admin, spec)
			return err
		}
		_, err := kubeletsim.CreateRunningPod(ctx, admin, spec, fmt.Sprintf("100.%d.%d.%d", 64+i/65536, i/256%256, i%256))
		return err
	}); err != nil {
		b.Fatal(err)
	}
	b.Logf("setup: %d nodes in %d node groups, %d pods (%d stuck), %d aws-node pods in %s", nodes, groups, nodes*podsPerNode, stuckNodes*podsPerNode, nodes, time.Since(setup).Round(time.Second))

	kubeconfig := filepath.Join(b.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig, env.UserConfig("nodekeeper-controller", "system:masters")); err != nil {
		b.Fatal(err)
	}
	for range b.N {
		today := startBenchController(b, kubeconfig)
		withChecks := startBenchController(b, kubeconfig, "--checks", "--checks-interval="+interval.String(), "--vmodule=checks=1")
		var offset int64
		first := withChecks.nextRun(b, &offset, today, setupTimeout)
		reqs0, err := withChecks.metric("rest_client_requests_total", "", "")
		if err != nil {
			b.Fatal(err)
		}
		todayReqs0, _ := today.metric("rest_client_requests_total", "", "")
		hits0 := ipamd.TotalHits()
		// The first idle reading starts after these scrapes, whose CPU is not the idle loop's.
		first.cpu, first.seen = withChecks.cpuSeconds(b), time.Now()

		var idleCPU, idleWall, runCPU, runWall float64
		var durations []float64
		prev := first
		for k := range measured {
			before := prev.seen.Add(-prev.duration).Add(interval - idleMargin)
			if wait := time.Until(before); wait > 0 {
				time.Sleep(wait)
			} else {
				b.Fatalf("run %d took %s, too close to the %s interval to read the idle CPU before the next: raise %s", k+1, prev.duration, interval, benchIntervalEnv)
			}
			cpuBefore, at := withChecks.cpuSeconds(b), time.Now()
			idleCPU += cpuBefore - prev.cpu
			idleWall += at.Sub(prev.seen).Seconds()
			r := withChecks.nextRun(b, &offset, today, interval+setupTimeout)
			if r.result != checks.ResultSuccess && r.result != checks.ResultPartial {
				b.Fatalf("measured run %d: result %s", k+1, r.result)
			}
			runCPU += r.cpu - cpuBefore
			runWall += r.seen.Sub(at).Seconds()
			durations = append(durations, r.duration.Seconds())
			prev = r
		}
		reqs1, _ := withChecks.metric("rest_client_requests_total", "", "")
		todayReqs1, _ := today.metric("rest_client_requests_total", "", "")
		hits := ipamd.TotalHits() - hits0
		stuck, _ := withChecks.metric("nodekeeper_pods_stuck", "cause", "subnet")
		peak, basePeak := withChecks.peakRSSMiB(b), today.peakRSSMiB(b)

		n := float64(measured)
		var total float64
		for _, d := range durations {
			total += d
		}
		idleRate := idleCPU / idleWall
		todayRate := (prev.baselineCPU - first.baselineCPU) / prev.seen.Sub(first.seen).Seconds()
		// Each run's window holds the run and some idle time around it (the margin before it,
		// the polling after it): that time's idle CPU is not the run's.
		perRun := (runCPU - idleRate*(runWall-total)) / n
		loopShare := 100 * runsPerHour * perRun / hour
		controllerShare := loopShare + 100*idleRate
		var t strings.Builder
		fmt.Fprintf(&t, "controller --checks at %d nodes, %d pods (%d stuck), %d aws-node metrics endpoints; %d runs measured at a %s interval after a first one:\n",
			nodes, nodes*podsPerNode, stuckNodes*podsPerNode, nodes, measured, interval)
		row := func(what, format string, args ...any) {
			fmt.Fprintf(&t, "  %-44s "+format+"\n", append([]any{what}, args...)...)
		}
		row("API requests per interval", "%.0f (pod-proxy ipamd reads among them: %.0f; today's controller in the same time: %.0f)",
			(reqs1-reqs0)/n, float64(hits)/n, (todayReqs1-todayReqs0)/n)
		row("check run duration", "%.1f s on average (first run %.1f s)", total/n, first.duration.Seconds())
		row("CPU seconds per check run", "%.2f s", perRun)
		row("idle CPU between runs", "%.4f cores (today's controller: %.4f cores)", idleRate, todayRate)
		row("hour at the 5m default: check loop", "%.2f %% of one core (12 runs x %.2f s / 3600 s; target at most %.0f %%)", loopShare, perRun, coreTarget)
		row("hour at the 5m default: whole controller", "%.2f %% of one core with --checks, %.2f %% today", controllerShare, 100*todayRate)
		row("peak RSS (VmHWM)", "%.1f MiB with --checks, %.1f MiB today: %.2fx (target at most %.0fx)", peak, basePeak, peak/basePeak, rssTarget)
		row("stuck pods under cause subnet", "%.0f", stuck)
		// On stdout: the testing package cuts a benchmark's log at ten lines.
		fmt.Print(t.String())
		b.ReportMetric((reqs1-reqs0)/n, "requests/interval")
		b.ReportMetric(perRun, "cpu-s/run")
		b.ReportMetric(loopShare, "%core-hour@5m")
		b.ReportMetric(peak/basePeak, "peak-rss-ratio")
	}
}

func createBenchNode(ctx context.Context, c kubernetes.Interface, name, group, ip string) error {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		corev1.LabelInstanceTypeStable: "t3.small", corev1.LabelTopologyZone: "us-west-2a", "kubernetes.io/os": "linux",
		"eks.amazonaws.com/nodegroup": group}}}
	created, err := c.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	created.Status = corev1.NodeStatus{
		Capacity:   corev1.ResourceList{corev1.ResourcePods: resource.MustParse("11")},
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}},
		Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}},
		NodeInfo:   corev1.NodeSystemInfo{OSImage: "Amazon Linux 2023.5.20240701", KubeletVersion: kubeletsim.ModernKubeletVersion, OperatingSystem: "linux"},
	}
	_, err = c.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
	return err
}
