package deploytest

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/nodekeeper/nodekeeper/internal/controller/command"
	"github.com/nodekeeper/nodekeeper/internal/test/promscrape"
	"github.com/nodekeeper/nodekeeper/internal/test/syncbuf"
	"github.com/nodekeeper/nodekeeper/internal/test/testenv"
)

// TestControllerWithManifests runs `nodekeeper controller` (the command tree, in-process) the way the kustomize
// Deployment runs it: with exactly the rendered arguments (only the listen addresses moved to
// 127.0.0.1), POD_NAMESPACE from the namespace, and the token of the applied ServiceAccount, so
// only the applied RBAC authorizes it. It must become ready and leader, delete a leaked lease,
// and serve every metric of the contract with the contract's labels, since the dashboard and
// the alerts are written against them. The overlay serves them with --metrics-secure: over
// HTTPS, to a Prometheus service account bound to the shipped metrics-reader ClusterRole (401
// without a token, 403 with one that lacks the role), the reviews made with the applied RBAC.
func TestControllerWithManifests(t *testing.T) {
	in := installed(t)[0]
	ctx := context.Background()
	admin := env.AdminClient()

	cfg := env.ServiceAccount(t, in.namespace, in.sa)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig, cfg); err != nil {
		t.Fatal(err)
	}

	d := mustTyped[*appsv1.Deployment](t, ofKind(in.objs, "Deployment")[0])
	c := controllerContainer(t, d)
	metricsAddr, probeAddr := testenv.FreeAddr(t), testenv.FreeAddr(t)
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
	// The controller's binary (what the image runs) runs in-process, as its main runs it; the environment is the pod's (read when
	// the tree is built), and cancelling the context is the SIGTERM of a pod being stopped.
	t.Setenv("POD_NAMESPACE", in.namespace)
	t.Setenv("POD_NAME", "deploytest-controller")
	var logs syncbuf.Buffer // stdout and stderr, written concurrently
	root := command.NewRoot(strings.NewReader(""), &logs, &logs)
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

	// Prometheus as the ServiceMonitor makes it scrape: HTTPS, its own service account token,
	// bound to the metrics-reader ClusterRole the overlay ships.
	scrape := scraper(t, metricsAddr, "nodekeeper-metrics-reader")
	if code, body := scrape.get(""); code != http.StatusUnauthorized {
		t.Errorf("anonymous scrape: %d %s, want 401", code, body)
	}
	if code, body := scrape.get(cfg.BearerToken); code != http.StatusForbidden {
		t.Errorf("scrape with the controller's own token (no metrics-reader role): %d %s, want 403", code, body)
	}

	// The counters move right after the API calls; give the scrape a moment to catch up before
	// reporting what is missing (and RBAC a moment to see the new binding).
	var problems []string
	_ = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		code, body := scrape.get(scrape.token)
		if code != http.StatusOK {
			problems = []string{fmt.Sprintf("scrape with the metrics-reader token: %d %s", code, body)}
			return false, nil
		}
		series, err := promscrape.Parse(strings.NewReader(body))
		if err != nil {
			problems = []string{err.Error()}
			return false, nil
		}
		problems = scrapeContractViolations(series)
		if promscrape.Sum(series, "nodekeeper_is_leader") != 1 {
			problems = append(problems, "nodekeeper_is_leader is not 1 on the only replica")
		}
		if promscrape.Sum(series, "nodekeeper_lease_deletions_total", "result", "deleted") < 1 {
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
func scrapeContractViolations(series []promscrape.Sample) []string {
	var problems []string
	seen := map[string]bool{}
	served := map[string]bool{} // metric\x00label\x00value
	for _, s := range series {
		base, spec, extra, ok := lookupSeries(s.Name)
		if !ok {
			continue
		}
		seen[s.Name] = true
		for name, value := range s.Labels {
			values, known := spec.labels[name]
			switch {
			case extra[name]:
			case !known:
				problems = append(problems, fmt.Sprintf("%s has label %s, which the contract does not list", s.Name, name))
			case values != nil && !slices.Contains(values, value):
				problems = append(problems, fmt.Sprintf("%s{%s=%q}: value not in the contract %v", s.Name, name, value, values))
			default:
				served[base+"\x00"+name+"\x00"+value] = true
			}
		}
		for name := range spec.labels {
			if _, ok := s.Labels[name]; !ok {
				problems = append(problems, fmt.Sprintf("%s lacks the label %s", s.Name, name))
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
		if spec.optIn != "" {
			continue // the manifests under test do not pass it
		}
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

// metricsScraper scrapes secure metrics as prometheus-operator does with the ServiceMonitor's
// settings: HTTPS without verifying the self-signed certificate, a bearer token.
type metricsScraper struct {
	url    string
	token  string // of a service account bound to the metrics-reader ClusterRole
	client *http.Client
}

// scraper makes a Prometheus service account in namespace monitoring, bound to the ClusterRole
// readerRole, and returns a scraper of https://addr/metrics with its token.
func scraper(t *testing.T, addr, readerRole string) *metricsScraper {
	t.Helper()
	cfg := env.BoundServiceAccount(t, "monitoring", "deploytest-prometheus", readerRole, "deploytest-prometheus-"+readerRole)
	return &metricsScraper{url: "https://" + addr + "/metrics", token: cfg.BearerToken, client: promscrape.InsecureTLSClient()}
}

func (s *metricsScraper) get(token string) (int, string) {
	return promscrape.Fetch(s.client, s.url, token)
}

func get(url string) (int, string) {
	return promscrape.Fetch(http.DefaultClient, url, "")
}
