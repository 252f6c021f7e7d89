//go:build linux

package e2e

import (
	"maps"
	"slices"
	"strings"
	"testing"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/nodekeeper/nodekeeper/internal/test/testenv"
)

// leaseReport is the part of `leases -o json` (LeaseReport) a script reads.
type leaseReport struct {
	Kind    string `json:"kind"`
	Summary struct {
		Total  int `json:"total"`
		Counts []struct {
			Class string `json:"class"`
			Count int    `json:"count"`
		} `json:"counts"`
	} `json:"summary"`
	Items []struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
		Class     string `json:"class"`
		Reason    string `json:"reason"`
	} `json:"items"`
}

// classes maps each kube-node-lease lease of the report to its class.
func (r leaseReport) classes() map[string]string {
	m := map[string]string{}
	for _, it := range r.Items {
		if it.Namespace == "kube-node-lease" {
			m[it.Name] = it.Class
		}
	}
	return m
}

func leasesJSON(t *testing.T, r result) leaseReport {
	t.Helper()
	rep := decode[leaseReport](t, r, "LeaseReport")
	if rep.Kind != "LeaseReport" {
		t.Fatalf("kind %q:\n%s", rep.Kind, r)
	}
	return rep
}

func TestLeases(t *testing.T) {
	c := seedCluster(t, 2)
	u, kubeconfig := eksUser(t)

	t.Run("json through KUBECONFIG", func(t *testing.T) {
		r := u.expect(exitOK, "leases", "-o", "json")
		got := leasesJSON(t, r).classes()
		want := map[string]string{c.healthy: "healthy", c.zombie: "zombie", c.leaked[0]: "leaked", c.leaked[1]: "leaked"}
		for name, class := range want {
			if got[name] != class {
				t.Errorf("lease %s: class %q, want %q\n%s", name, got[name], class, r)
			}
		}
		if r.stderr != "" {
			t.Errorf("a successful listing wrote to stderr:\n%s", r)
		}
	})

	t.Run("table", func(t *testing.T) {
		r := u.expect(exitOK, "leases", "-n", "kube-node-lease")
		lines := map[string]string{}
		for _, l := range strings.Split(r.stdout, "\n") {
			for _, name := range []string{c.healthy, c.zombie, c.leaked[0]} {
				if strings.Contains(l, name) {
					lines[name] = l
				}
			}
		}
		for name, class := range map[string]string{c.healthy: "healthy", c.zombie: "zombie", c.leaked[0]: "leaked"} {
			if !strings.Contains(lines[name], class) {
				t.Errorf("the table's row of %s (%q) does not say %s:\n%s", name, lines[name], class, r)
			}
		}
	})

	t.Run("names of the leaked leases, through --kubeconfig", func(t *testing.T) {
		plain := newUser(t) // no KUBECONFIG: the flag alone
		r := plain.expect(exitOK, "leases", "--kubeconfig", kubeconfig, "-n", "kube-node-lease", "--class", "leaked", "-o", "name")
		got := map[string]bool{}
		for _, l := range strings.Fields(r.stdout) {
			got[l] = true
		}
		for _, name := range c.leaked {
			if !got["lease.coordination.k8s.io/"+name] {
				t.Errorf("-o name lacks lease.coordination.k8s.io/%s:\n%s", name, r)
			}
		}
		if got["lease.coordination.k8s.io/"+c.zombie] || got["lease.coordination.k8s.io/"+c.healthy] {
			t.Errorf("--class leaked printed a lease of another class:\n%s", r)
		}
	})

	t.Run("no kubeconfig", func(t *testing.T) {
		// A fresh user has no ~/.kube/config and no KUBECONFIG: the run fails (1), it is not
		// bad usage, and it says so on stderr only.
		r := newUser(t).expect(exitFailed, "leases")
		if !strings.HasPrefix(r.stderr, "error: ") || r.stdout != "" {
			t.Errorf("want one error on stderr and nothing on stdout:\n%s", r)
		}
	})
}

// TestKubeconfigSelection shows that kubectl's --context and --cluster pick entries of a
// kubeconfig named the EKS way: the current context points at a cluster that does not answer,
// and each flag alone brings the command to the ARN-named one.
func TestKubeconfigSelection(t *testing.T) {
	c := seedCluster(t, 1)
	u := newUser(t)
	kc := eksKubeconfig(adminUser())
	kc.Clusters["old"] = &clientcmdapi.Cluster{Server: "https://" + testenv.FreeAddr(t), CertificateAuthorityData: adminUser().CAData}
	kc.Contexts["old"] = &clientcmdapi.Context{Cluster: "old", AuthInfo: eksARN}
	kc.CurrentContext = "old"
	u.setenv("KUBECONFIG", u.writeKubeconfig("config", kc))

	r := u.expect(exitFailed, "leases", "-n", "kube-node-lease", "-o", "json", "--request-timeout", "30s")
	if r.stdout != "" || !strings.Contains(r.stderr, "error: ") {
		t.Errorf("an unreachable current context: want only an error on stderr:\n%s", r)
	}
	for _, flag := range []string{"--context", "--cluster"} {
		t.Run(flag, func(t *testing.T) {
			r := u.expect(exitOK, "leases", "-n", "kube-node-lease", "-o", "json", flag, eksARN)
			got := leasesJSON(t, r).classes()
			if got[c.leaked[0]] != "leaked" || got[c.zombie] != "zombie" {
				t.Errorf("%s %s: not the cluster seeded (%v):\n%s", flag, eksARN, slices.Sorted(maps.Keys(got)), r)
			}
		})
	}
}
