package checks_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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

// waitMetric waits until the metric reaches at least min.
func (c *child) waitMetric(b *testing.B, name, label, value string, atLeast float64, timeout time.Duration) {
	b.Helper()
	deadline := time.Now().Add(timeout)
	for {
		v, err := c.metric(name, label, value)
		if err == nil && v >= atLeast {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s{%s=%q} did not reach %v in %s (last %v, %v)", name, label, value, atLeast, timeout, v, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
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

// BenchmarkControllerChecks2000 measures what `controller --checks` costs at issue 28's scale:
// 2,000 Nodes (t3.small, ten node groups), 20,000 pods of which 300 are stuck (on 30 nodes whose
// ipamd reports subnet exhaustion), 2,000 aws-node pods whose ipamd metrics are read through the
// real pod proxy. Two controllers run as processes of their own on the same cluster, today's
// (no --checks) and one with --checks at the default 5-minute interval; between the end of its
// first check run and the end of its second it reports the API requests (client-go's
// rest_client_requests_total), the CPU seconds (/proc: utime+stime) beside today's controller's
// in the same interval, and both processes' peak RSS (VmHWM). It fails rather than print the
// figures of runs cut short by their deadline.
func BenchmarkControllerChecks2000(b *testing.B) {
	const (
		nodes       = 2000
		podsPerNode = 10
		stuckNodes  = 30 // 10 stuck pods each: 300
		groups      = 10
	)
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
		checks := startBenchController(b, kubeconfig, "--checks", "--checks-interval=5m")
		checks.waitMetric(b, "nodekeeper_check_runs_total", "", "", 1, 15*time.Minute)
		reqs0, _ := checks.metric("rest_client_requests_total", "", "")
		cpu0, base0 := checks.cpuSeconds(b), today.cpuSeconds(b)
		hits0 := ipamd.TotalHits()
		checks.waitMetric(b, "nodekeeper_check_runs_total", "", "", 2, 15*time.Minute)
		reqs1, _ := checks.metric("rest_client_requests_total", "", "")
		cpu, base := checks.cpuSeconds(b)-cpu0, today.cpuSeconds(b)-base0
		stuck, _ := checks.metric("nodekeeper_pods_stuck", "cause", "subnet")
		dur, _ := checks.metric("nodekeeper_check_duration_seconds_sum", "", "")
		runs, _ := checks.metric("nodekeeper_check_runs_total", "", "")
		ok, _ := checks.metric("nodekeeper_check_runs_total", "result", "success")
		peak, basePeak := checks.peakRSSMiB(b), today.peakRSSMiB(b)
		if ok < 2 {
			// A run cut short by its deadline (the interval) measured less than a run's work.
			b.Fatalf("%.0f of %.0f check runs succeeded (a run took %.0f s on average, the deadline is the 5m interval): no figures of cut runs", ok, runs, dur/runs)
		}
		b.Logf("one check interval (5m, the default) at %d nodes, %d pods (%d stuck), %d aws-node metrics endpoints:", nodes, nodes*podsPerNode, stuckNodes*podsPerNode, nodes)
		b.Logf("  API requests per interval:  %.0f (ipamd metrics reads through the pod proxy among them: %d)", reqs1-reqs0, ipamd.TotalHits()-hits0)
		b.Logf("  CPU seconds per interval:   %.2f with --checks, %.2f without (today's controller, same minute)", cpu, base)
		b.Logf("  share of one core:          %.2f %% (the interval's CPU beyond today's controller, over 300 s; target at most 5 %%)", 100*(cpu-base)/300)
		b.Logf("  check run duration:         %.1f s on average (%0.f runs, %0.f successful); stuck pods under cause subnet: %.0f", dur/runs, runs, ok, stuck)
		b.Logf("  peak RSS:                   %.1f MiB with --checks, %.1f MiB today: %.2fx (target at most 2x)", peak, basePeak, peak/basePeak)
		b.ReportMetric(reqs1-reqs0, "requests/interval")
		b.ReportMetric(cpu, "cpu-s/interval")
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
