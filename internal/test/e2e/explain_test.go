//go:build linux

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// nodeStory is the part of `explain -o json` (NodeStory) a script reads.
type nodeStory struct {
	Target struct {
		Node       string `json:"node"`
		NodeExists bool   `json:"nodeExists"`
		LeaseClass string `json:"leaseClass"`
	} `json:"target"`
	Timeline []struct {
		Source string `json:"source"`
		What   string `json:"what"`
	} `json:"timeline"`
	Findings []struct {
		Code     string `json:"code"`
		Resource string `json:"resource"`
	} `json:"findings"`
	Requests struct {
		Kubernetes int `json:"kubernetes"`
	} `json:"requests"`
}

// TestExplain runs the built binary as a user does, with an EKS kubeconfig: a zombie lease
// (no Node, renewed now) told as JSON with NK312 and the request count; the healthy node told
// as text and as an offline page by the kubectl plugin's name; an unknown target exits 2 with
// the nearest names.
func TestExplain(t *testing.T) {
	c := seedCluster(t, 0)
	u, _ := eksUser(t)

	r := u.expect(exitOK, "explain", c.zombie, "-o", "json")
	st := decode[nodeStory](t, r, "NodeStory")
	if st.Target.Node != c.zombie || st.Target.NodeExists || st.Target.LeaseClass != "zombie" {
		t.Errorf("target %+v:\n%s", st.Target, r)
	}
	found := false
	for _, f := range st.Findings {
		found = found || f.Code == "NK312" && f.Resource == "lease/kube-node-lease/"+c.zombie
	}
	if !found || st.Requests.Kubernetes == 0 {
		t.Errorf("NK312 on the zombie's lease: %v; requests %d:\n%s", found, st.Requests.Kubernetes, r)
	}

	page := filepath.Join(t.TempDir(), "node.html")
	r = u.runBinary(binary("kubectl-nodekeeper"), "explain", c.healthy, "--html", page)
	if r.code != exitOK {
		t.Fatalf("kubectl-nodekeeper explain: exit %d:\n%s", r.code, r)
	}
	mustContain(t, r, r.stdout, "Node:", c.healthy, "Timeline:", "Node "+c.healthy+" created", "Reads: ")
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(html), "<h1>nodekeeper explain</h1>") || !strings.Contains(string(html), c.healthy) {
		t.Errorf("--html page lacks its heading or the node:\n%s", clip(string(html)))
	}

	r = u.expect(exitUsage, "explain", c.healthy+"x")
	mustContain(t, r, r.stderr, "names no Node", "nearest: "+c.healthy)
	u.expect(exitUsage, "explain")                                   // TARGET is required
	u.expect(exitUsage, "explain", c.healthy, "--region", eksRegion) // --region needs --aws
}
