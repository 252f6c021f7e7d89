package scenario

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/test/schematest"
)

// The scenario in docs/plan.md (its first yaml block of kind PlanScenario) is valid against its
// schema and parses into the requests it says.
func TestDocsScenario(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "plan.md"))
	if err != nil {
		t.Fatal(err)
	}
	var doc string
	for _, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(data), -1) {
		if strings.Contains(m[1], "kind: PlanScenario") {
			doc = m[1]
			break
		}
	}
	if doc == "" {
		t.Fatal("docs/plan.md has no PlanScenario block")
	}
	schematest.Validate(t, Kind, []byte(doc))
	s, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	reqs := s.Requests()
	if len(reqs) != 2 || reqs[0].Nodegroup != "web" || reqs[0].Add != 300 || reqs[1].InstanceType != "c6i.2xlarge" ||
		len(reqs[1].Subnets) != 2 || reqs[1].Kubelet == nil || reqs[1].Kubelet.Source != "the scenario" || len(reqs[0].SubnetsFree) != 3 {
		t.Errorf("requests %+v", reqs)
	}
	if s.Wait() != 10*time.Minute || s.Set["WARM_IP_TARGET"] != "5" {
		t.Errorf("wait %v, set %v", s.Wait(), s.Set)
	}
}

func TestParseRefuses(t *testing.T) {
	head := "apiVersion: nodekeeper.io/v1alpha1\nkind: PlanScenario\n"
	for _, tc := range []struct{ doc, want string }{
		{"kind: PlanScenario\nnodeGroups: [{name: a, add: 1}]\n", "want apiVersion"},
		{head, "no nodeGroups"},
		{head + "nodeGroups: [{name: a, add: 0}]\n", "add must be at least 1"},
		{head + "nodeGroups: [{add: 3}]\n", "give a name or a nodegroup"},
		{head + "nodeGroups: [{name: a, add: 3, instance: m5.large}]\n", "unknown field"},
		{head + "nodeGroups: [{name: a, add: 3}]\nmaxAddressWait: soon\n", "maxAddressWait"},
		// Issue 31 item 4: what the equivalent flags refuse.
		{head + "nodeGroups: [{name: a, add: 3, maxPods: -1}]\n", "nodeGroups[0].maxPods must not be negative"},
		{head + "nodeGroups: [{name: a, add: 3}, {name: b, add: 1, podsPerNode: -2}]\n", "nodeGroups[1].podsPerNode must not be negative"},
		{head + "nodeGroups: [{name: a, add: 3, pullsPerNode: -1}]\n", "nodeGroups[0].pullsPerNode must not be negative"},
		{head + "nodeGroups: [{name: a, add: 3, reservedENIs: -1}]\n", "nodeGroups[0].reservedENIs must not be negative"},
		{head + "nodeGroups: [{name: a, add: 3, kubelet: {registryPullQPS: -1, registryBurst: 2}}]\n", "nodeGroups[0].kubelet: registryPullQPS and registryBurst must not be negative"},
		{head + "nodeGroups: [{name: a, add: 3}]\nsubnets: [{id: s, free: -1}]\n", "subnets[0].free must not be negative"},
		{head + "nodeGroups: [{name: a, add: 3}]\nec2Mutating: {capacity: -1, refillPerSecond: -5}\n", "ec2Mutating: capacity must be at least 1"},
		{head + "nodeGroups: [{name: a, add: 3}]\nec2Mutating: {capacity: 50, refillPerSecond: -5}\n", "ec2Mutating: refillPerSecond must be a finite number, at least 0"},
		{head + "nodeGroups: [{name: a, add: 3}]\nec2Mutating: {capacity: 0, refillPerSecond: 5}\n", "ec2Mutating: capacity must be at least 1"},
		{head + "nodeGroups: [{name: a, add: 3}]\nmaxAddressWait: -5m\n", "maxAddressWait"},
		{head + "nodeGroups: [{name: a, add: 3}]\nmaxAddressWait: 0s\n", "maxAddressWait"},
		// Issue 31 item 3: the counts are bounded.
		{head + "nodeGroups:\n" + strings.Repeat("- {name: a, add: 1}\n", MaxNodeGroups+1), "257 nodeGroups, more than the 256 a scenario may hold"},
	} {
		_, err := Parse([]byte(tc.doc))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.doc, err, tc.want)
		}
		if err == nil {
			continue
		}
		// What Parse refuses, the schema refuses too (but for a duration it cannot parse).
		if tc.want != "maxAddressWait" && tc.want != "want apiVersion" && schematest.Check(Kind, []byte(tc.doc)) == nil {
			t.Errorf("%q: the schema accepts it", tc.doc)
		}
	}
}

// TestReadFileBounds: a scenario past MaxFileBytes is refused after reading MaxFileBytes+1 bytes
// of it, naming the file and the limit (/dev/zero grew plan to 1.18 GB in 12 s before); a file
// that cannot be read is an *fs.PathError, which plan exits 1 for (the others exit 2).
func TestReadFileBounds(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "zero.yaml")
	if err := os.WriteFile(path, make([]byte, MaxFileBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := ReadFile(path)
	if want := "scenario " + path + ": larger than 256 KiB, the most a scenario may be"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want %q", err, want)
	}
	if _, err := os.Stat("/dev/zero"); err == nil {
		if _, err := ReadFile("/dev/zero"); err == nil || !strings.Contains(err.Error(), "larger than 256 KiB") {
			t.Errorf("/dev/zero: error %v, want it refused past the limit", err)
		}
	}
	_, err = ReadFile(filepath.Join(dir, "missing.yaml"))
	if !errors.As(err, new(*fs.PathError)) {
		t.Errorf("a missing file: %T %v, want an *fs.PathError", err, err)
	}
	ok := filepath.Join(dir, "ok.yaml")
	if err := os.WriteFile(ok, []byte("apiVersion: nodekeeper.io/v1alpha1\nkind: PlanScenario\nnodeGroups: [{name: a, add: 3}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := ReadFile(ok); err != nil || len(s.NodeGroups) != 1 {
		t.Errorf("ok.yaml: %v %v", s, err)
	}
}

// FuzzParse: any document is refused with an error or parsed into a scenario within the bounds,
// whose figures the flags would accept; never a panic.
func FuzzParse(f *testing.F) {
	head := "apiVersion: nodekeeper.io/v1alpha1\nkind: PlanScenario\n"
	f.Add([]byte(head + "nodeGroups: [{name: a, add: 3, instanceType: m5.large, maxPods: 58, subnets: [s1]}]\nsubnets: [{id: s1, free: 100}]\nec2Mutating: {capacity: 50, refillPerSecond: 5}\nmaxAddressWait: 5m\nset: {WARM_IP_TARGET: \"5\"}\n"))
	f.Add([]byte(head + "nodeGroups: [{name: a, add: 3, kubelet: {registryPullQPS: 5, registryBurst: 10}}]\n"))
	f.Add([]byte(`{"apiVersion":"nodekeeper.io/v1alpha1","kind":"PlanScenario","nodeGroups":[{"nodegroup":"web","add":1}]}`))
	f.Add([]byte(head + "a: &a [x, x]\nb: &b [*a, *a]\nnodeGroups: [{name: a, add: 1}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data)
		if err != nil {
			return
		}
		if len(s.NodeGroups) == 0 || len(s.NodeGroups) > MaxNodeGroups || len(s.Subnets) > MaxSubnets {
			t.Fatalf("%d node groups, %d subnets accepted", len(s.NodeGroups), len(s.Subnets))
		}
		for _, g := range s.NodeGroups {
			if g.Add < 1 || g.MaxPods < 0 || g.PodsPerNode < 0 || g.PullsPerNode < 0 || g.ReservedENIs < 0 {
				t.Fatalf("node group %+v accepted", g)
			}
		}
		if s.EC2 != nil && s.EC2.Validate() != nil {
			t.Fatalf("bucket %+v accepted", *s.EC2)
		}
		if s.MaxAddressWait != "" && s.Wait() <= 0 {
			t.Fatalf("maxAddressWait %q accepted", s.MaxAddressWait)
		}
		if len(s.Requests()) != len(s.NodeGroups) {
			t.Fatal("requests lost")
		}
	})
}
