package scenario

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/schematest"
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
