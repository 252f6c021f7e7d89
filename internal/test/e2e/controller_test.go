//go:build linux

package e2e

import (
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"

	"github.com/nodekeeper/nodekeeper/internal/test/promscrape"
	"github.com/nodekeeper/nodekeeper/internal/test/testenv"
)

// controllerBinaries are the ways the controller ships: the subcommand of the CLI, and the
// controller-only binary the image runs (same flags, no subcommand); make build makes both.
var controllerBinaries = []struct {
	name string
	bin  string
	args []string
}{
	{"bin/nodekeeper controller", "nodekeeper", []string{"controller"}},
	{"bin/nodekeeper-controller", "nodekeeper-controller", nil},
}

// Generous bounds for a loaded machine; each only catches a hang.
const (
	controllerStartTimeout = 3 * time.Minute
	controllerStopTimeout  = 2 * time.Minute
)

func TestController(t *testing.T) {
	for _, cb := range controllerBinaries {
		t.Run(cb.name, func(t *testing.T) {
			if _, err := os.Stat(binary(cb.bin)); err != nil {
				t.Fatalf("make build did not produce bin/%s: %v", cb.bin, err)
			}
			testController(t, binary(cb.bin), cb.args)
		})
	}
}

// startController starts bin with its subcommand (sub) and flags as the only replica (no leader
// election), serving metrics and probes on free loopback ports.
func (u *user) startController(bin string, sub []string, flags ...string) (d *daemon, metricsAddr, probeAddr string) {
	u.t.Helper()
	metricsAddr, probeAddr = testenv.FreeAddr(u.t), testenv.FreeAddr(u.t)
	args := append(append(append([]string(nil), sub...), flags...),
		"--leader-elect=false",
		// Plain HTTP, as a scraper that cannot authenticate reads it: the secure default (HTTPS,
		// TokenReview, SubjectAccessReview) is internal/test/deploytest's and internal/controller's.
		"--metrics-secure=false",
		"--metrics-bind-address", metricsAddr,
		"--health-probe-bind-address", probeAddr,
	)
	return u.start(bin, args...), metricsAddr, probeAddr
}

// waitLeakedDeleted waits for the controller to delete every leaked lease of c.
func waitLeakedDeleted(t *testing.T, c cluster) {
	t.Helper()
	for _, name := range c.leaked {
		env.WaitNodeLease(t, name, controllerStartTimeout, "the controller to delete the leaked lease", func(l *coordinationv1.Lease) bool { return l == nil })
	}
}

// scrapeUntil scrapes http://addr/metrics of the process until cond holds for a scrape, and
// returns that scrape.
func (d *daemon) scrapeUntil(addr, what string, cond func([]promscrape.Sample) bool) []promscrape.Sample {
	d.t.Helper()
	var samples []promscrape.Sample
	d.waitFor(controllerStartTimeout, what, func() bool {
		var err error
		samples, err = promscrape.Get("http://" + addr + "/metrics")
		return err == nil && cond(samples)
	})
	return samples
}

func testController(t *testing.T, bin string, sub []string) {
	c := seedCluster(t, 2)
	u, _ := eksUser(t)
	d, metricsAddr, probeAddr := u.startController(bin, sub)

	hc := &http.Client{Timeout: 10 * time.Second}
	status := func(url string) int {
		resp, err := hc.Get(url)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	d.waitFor(controllerStartTimeout, "/healthz to answer 200", func() bool {
		return status("http://"+probeAddr+"/healthz") == http.StatusOK
	})
	d.waitFor(controllerStartTimeout, "/readyz to answer 200", func() bool {
		return status("http://"+probeAddr+"/readyz") == http.StatusOK
	})

	waitLeakedDeleted(t, c)
	samples := d.scrapeUntil(metricsAddr, "nodekeeper_lease_deletions_total{result=\"deleted\"} to count the deletions", func(samples []promscrape.Sample) bool {
		return promscrape.Sum(samples, "nodekeeper_lease_deletions_total", "result", "deleted") >= float64(len(c.leaked))
	})
	var series []string
	for _, s := range samples {
		if strings.HasPrefix(s.Name, "nodekeeper_") {
			series = append(series, s.Series())
		}
	}
	for _, want := range []string{"nodekeeper_cache_synced", "nodekeeper_build_info", `nodekeeper_leases{class="zombie"}`} {
		found := false
		for _, s := range series {
			found = found || strings.HasPrefix(s, want)
		}
		if !found {
			t.Errorf("/metrics lacks %s; its nodekeeper_ series: %v", want, series)
		}
	}
	if promscrape.Sum(samples, "nodekeeper_cache_synced") != 1 {
		t.Errorf("nodekeeper_cache_synced is not 1 after deleting")
	}
	for _, name := range []string{c.healthy, c.zombie} {
		if !env.NodeLeaseExists(t, name) {
			t.Errorf("the controller deleted %s, which is not leaked", name)
		}
	}

	if code := d.signal(syscall.SIGTERM, controllerStopTimeout); code != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0:\n%s", code, d)
	}
	if strings.Contains(d.stderr.String(), "error: ") {
		t.Errorf("a clean stop printed an error:\n%s", d)
	}
	if status("http://"+probeAddr+"/healthz") != 0 {
		t.Errorf("the health probe endpoint still answers after the process exited")
	}
}

// TestControllerAWS runs both controller binaries with --aws against the local AWS (through
// AWS_ENDPOINT_URL and the SDK's default chain, as IRSA's environment would): the EC2 loop
// reports the cluster's two running instances that have no Node, while the lease work deletes
// the leaked leases as without --aws.
func TestControllerAWS(t *testing.T) {
	for _, cb := range controllerBinaries {
		t.Run(cb.name, func(t *testing.T) {
			c := seedCluster(t, 1)
			a, _, orphan := clusterAccount(t, c)
			u := a.user()
			d, metricsAddr, _ := u.startController(binary(cb.bin), cb.args, "--aws", "--eks-cluster", eksClusterName, "--register-grace", registerGrace)
			waitLeakedDeleted(t, c)
			samples := d.scrapeUntil(metricsAddr, "an EC2 scan to succeed", func(samples []promscrape.Sample) bool {
				return promscrape.Sum(samples, "nodekeeper_instance_scans_total", "result", "success") >= 1
			})
			if got := promscrape.Sum(samples, "nodekeeper_instances_without_node"); got != 2 {
				t.Errorf("nodekeeper_instances_without_node = %g, want 2 (the zombie's instance and %s)", got, orphan)
			}
			if n := countOf(a.srv.Calls(), "DescribeInstances"); n < 3 {
				t.Errorf("the local AWS answered %d DescribeInstances, want the 3 tag filters' pages", n)
			}
			if code := d.signal(syscall.SIGTERM, controllerStopTimeout); code != 0 {
				t.Errorf("exit code %d after SIGTERM, want 0:\n%s", code, d)
			}
		})
	}
}
