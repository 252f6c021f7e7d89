package deploytest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/ptr"

	"github.com/nodekeeper/nodekeeper/cmd/nodekeeper/app"
)

// TestControllerWithManifests runs `nodekeeper controller` (the command tree, in-process) the way the kustomize
// Deployment runs it: with exactly the rendered arguments (only the listen addresses moved to
// 127.0.0.1), POD_NAMESPACE from the namespace, and the token of the applied ServiceAccount, so
// only the applied RBAC authorizes it. It must become ready and leader, delete a leaked lease,
// and serve every metric of the contract with the contract's labels, since the dashboard and
// the alerts are written against them.
func TestControllerWithManifests(t *testing.T) {
	in := installed(t)[0]
	ctx := context.Background()
	admin := env.AdminClient()

	cfg, err := env.ServiceAccountConfig(ctx, in.namespace, in.sa)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig, cfg); err != nil {
		t.Fatal(err)
	}

	d := mustTyped[*appsv1.Deployment](t, ofKind(in.objs, "Deployment")[0])
	c := controllerContainer(t, d)
	metricsAddr, probeAddr := freeAddr(t), freeAddr(t)
	args := []string{"--kubeconfig=" + kubeconfig}
	for _, a := range c.Args {
		switch {
		case strings.HasPrefix(a, "--metrics-bind-address="):
			a = "--metrics-bind-address=" + metricsAddr
		case strings.HasPrefix(a, "--health-probe-bind-address="):
			a = "--health-probe-bind-address=" + probeAddr
		}
		args = append(args, a)
	}
	// The command tree runs in-process, as main runs it; the environment is the pod's (read when
	// the tree is built), and cancelling the context is the SIGTERM of a pod being stopped.
	t.Setenv("POD_NAMESPACE", in.namespace)
	t.Setenv("POD_NAME", "deploytest-controller")
	var logs lockedBuffer
	root := app.NewRootCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &logs, ErrOut: &logs})
	root.SetArgs(args)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(runCtx) }()
	t.Cleanup(func() {
		stop()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("the controller stopped with an error: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Errorf("the controller did not stop within 20s of its context's end")
		}
		if t.Failed() {
			t.Logf("controller output:\n%s", logs.String())
		}
	})
	exited := func() error {
		select {
		case err := <-done:
			done <- err
			return fmt.Errorf("the controller exited: %v", err)
		default:
			return nil
		}
	}

	waitFor := func(what string, timeout time.Duration, cond func() (bool, error)) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
			if err := exited(); err != nil {
				return false, err
			}
			return cond()
		})
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	waitFor("/readyz", time.Minute, func() (bool, error) {
		code, _ := get("http://" + probeAddr + "/readyz")
		return code == http.StatusOK, nil
	})
	if code, body := get("http://" + probeAddr + "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz answered %d: %s", code, body)
	}
	// Leader election runs on the applied Role, which allows only the lock named by
	// --leader-election-id in the pod's namespace.
	leaderID := controllerArgs(t, in.objs)["leader-election-id"]
	waitFor("leadership", time.Minute, func() (bool, error) {
		l, err := admin.CoordinationV1().Leases(in.namespace).Get(ctx, leaderID, metav1.GetOptions{})
		return err == nil && ptr.Deref(l.Spec.HolderIdentity, "") != "", nil
	})

	// A lease leaked long ago: no Node, no owner, renewed two grace periods back.
	renewed := metav1.NewMicroTime(time.Now().Add(-2 * time.Hour))
	leaked, err := admin.CoordinationV1().Leases("kube-node-lease").Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "deploytest-leaked-by-old-kubelet"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("deploytest-leaked-by-old-kubelet"),
			LeaseDurationSeconds: ptr.To[int32](40), AcquireTime: &renewed, RenewTime: &renewed},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Created back then, too: the API server stamps creation now, and a lease is only as idle
	// as its creation allows.
	if leaked, err = env.BackdateLease(ctx, leaked.Namespace, leaked.Name, renewed.Time); err != nil {
		t.Fatal(err)
	}
	waitFor("the leaked lease to be deleted", time.Minute, func() (bool, error) {
		_, err := admin.CoordinationV1().Leases("kube-node-lease").Get(ctx, leaked.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})

	// The counters move right after the API calls; give the scrape a moment to catch up before
	// reporting what is missing.
	var problems []string
	_ = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		series, err := scrape("http://" + metricsAddr + "/metrics")
		if err != nil {
			problems = []string{err.Error()}
			return false, nil
		}
		problems = scrapeContractViolations(series)
		if sampleValue(series, "nodekeeper_is_leader") != 1 {
			problems = append(problems, "nodekeeper_is_leader is not 1 on the only replica")
		}
		if sampleValue(series, "nodekeeper_lease_deletions_total", "result", "deleted") < 1 {
			problems = append(problems, `nodekeeper_lease_deletions_total{result="deleted"} did not count the deletion`)
		}
		return len(problems) == 0, nil
	})
	for _, p := range problems {
		t.Error(p)
	}
}

// scrapeContractViolations checks a scrape against the metrics contract: every contract metric is
// served (histograms as _bucket, _sum and _count) with only its contract labels and values, and a
// metric whose labels take a known set of values serves every value from the start, so that
// increase() and rate() count the first event instead of starting from it. A metric with a
// free-form label (nodekeeper_errors_total{reason}) appears with its first observation.
// Metrics outside the contract (Go runtime, extra controller counters) are allowed.
func scrapeContractViolations(series []sample) []string {
	var problems []string
	seen := map[string]bool{}
	served := map[string]bool{} // metric\x00label\x00value
	for _, s := range series {
		base, spec, extra, ok := lookupSeries(s.name)
		if !ok {
			continue
		}
		seen[s.name] = true
		for name, value := range s.labels {
			values, known := spec.labels[name]
			switch {
			case extra[name]:
			case !known:
				problems = append(problems, fmt.Sprintf("%s has label %s, which the contract does not list", s.name, name))
			case values != nil && !slices.Contains(values, value):
				problems = append(problems, fmt.Sprintf("%s{%s=%q}: value not in the contract %v", s.name, name, value, values))
			default:
				served[base+"\x00"+name+"\x00"+value] = true
			}
		}
		for name := range spec.labels {
			if _, ok := s.labels[name]; !ok {
				problems = append(problems, fmt.Sprintf("%s lacks the label %s", s.name, name))
			}
		}
	}
	var names []string
	for name := range metricsContract {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		spec := metricsContract[name]
		freeForm := false
		for _, values := range spec.labels {
			freeForm = freeForm || values == nil
		}
		series := []string{name}
		if spec.kind == histogram {
			series = []string{name + "_bucket", name + "_sum", name + "_count"}
		}
		for _, s := range series {
			if !seen[s] && !freeForm {
				problems = append(problems, fmt.Sprintf("%s is not served", s))
			}
		}
		for label, values := range spec.labels {
			for _, v := range values {
				if !served[name+"\x00"+label+"\x00"+v] {
					problems = append(problems, fmt.Sprintf("%s{%s=%q} is not served (initialise it to 0)", name, label, v))
				}
			}
		}
	}
	return problems
}

// sample is one line of the Prometheus text exposition format.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// parseExposition reads the Prometheus text format (comments skipped, label values unescaped).
func parseExposition(r io.Reader) ([]sample, error) {
	var out []sample
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s := sample{labels: map[string]string{}}
		rest := line
		if i := strings.IndexAny(line, "{ "); i >= 0 && line[i] == '{' {
			s.name = line[:i]
			var err error
			if rest, err = parseLabels(line[i+1:], s.labels); err != nil {
				return nil, fmt.Errorf("%q: %w", line, err)
			}
		} else if i >= 0 {
			s.name, rest = line[:i], line[i:]
		}
		fields := strings.Fields(rest)
		if s.name == "" || len(fields) == 0 {
			return nil, fmt.Errorf("cannot read %q", line)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", line, err)
		}
		s.value = v
		out = append(out, s)
	}
	return out, sc.Err()
}

// parseLabels reads `a="x",b="y"}` into labels and returns what follows the closing brace.
func parseLabels(s string, labels map[string]string) (string, error) {
	for {
		s = strings.TrimLeft(s, ", ")
		if strings.HasPrefix(s, "}") {
			return s[1:], nil
		}
		eq := strings.Index(s, `="`)
		if eq < 0 {
			return "", fmt.Errorf("bad label list")
		}
		name := s[:eq]
		s = s[eq+2:]
		var v strings.Builder
		for i := 0; ; i++ {
			if i >= len(s) {
				return "", fmt.Errorf("unterminated value of label %s", name)
			}
			switch c := s[i]; {
			case c == '\\' && i+1 < len(s):
				i++
				switch s[i] {
				case 'n':
					v.WriteByte('\n')
				default:
					v.WriteByte(s[i])
				}
			case c == '"':
				labels[name] = v.String()
				s = s[i+1:]
				goto next
			default:
				v.WriteByte(c)
			}
		}
	next:
	}
}

func scrape(url string) ([]sample, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	return parseExposition(resp.Body)
}

// sampleValue sums the samples of a series whose labels match the given name/value pairs.
func sampleValue(series []sample, name string, labelPairs ...string) float64 {
	var sum float64
	for _, s := range series {
		if s.name != name {
			continue
		}
		match := true
		for i := 0; i+1 < len(labelPairs); i += 2 {
			if s.labels[labelPairs[i]] != labelPairs[i+1] {
				match = false
			}
		}
		if match {
			sum += s.value
		}
	}
	return sum
}

func get(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// lockedBuffer collects the controller's output from two streams written concurrently.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
