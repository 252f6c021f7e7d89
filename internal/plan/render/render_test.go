package render

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/nodekeeper/nodekeeper/internal/eni"
	"github.com/nodekeeper/nodekeeper/internal/plan"
	"github.com/nodekeeper/nodekeeper/internal/test/headings"
	"github.com/nodekeeper/nodekeeper/internal/test/schematest"
)

func seedResult(t testing.TB, changes map[string]string) *plan.Result {
	t.Helper()
	m5, err := eni.Lookup("m5.large")
	if err != nil {
		t.Fatal(err)
	}
	in := plan.Input{
		Env: map[string]string{"WARM_ENI_TARGET": "1"},
		Groups: []plan.Group{{Name: "web", Type: m5, Add: 300, PodsPerNode: 20, MaxPods: 29, MaxPodsSource: "test",
			Placements: []plan.Placement{{Zone: "us-east-1a", NodeSubnet: "subnet-a"}, {Zone: "us-east-1b", NodeSubnet: "subnet-b"}}}},
		Subnets: map[string]plan.Subnet{"subnet-a": {ID: "subnet-a", Zone: "us-east-1a", CIDR: "10.0.0.0/21", Free: 2000},
			"subnet-b": {ID: "subnet-b", Zone: "us-east-1b", CIDR: "10.0.8.0/21", Free: 1500}},
		ExistingNodes: 120, APF: &plan.APF{PriorityLevel: "node-high", Seats: 98, Source: "test"},
	}
	r, err := plan.Run(in, changes)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The text report: the verdict and the first limit's fix first, today's and the what-if's
// figures side by side, headings for people, and names written by others escaped. The first
// limit named is the first to fail (the subnet at node 102), not image pulls, which the kubelet
// refuses over registryBurst from node 1 but retries with back-off: each delay has its own line
// with the seconds it adds (18 pulls against burst 10 and 5/s: 10 start, the other 8 after the
// kubelet's 10 s back-off; 2700 EC2 calls against 50 refilled at 5/s: 8m50s).
func TestTextReport(t *testing.T) {
	r := seedResult(t, map[string]string{"WARM_IP_TARGET": "2", "MINIMUM_IP_TARGET": "18"})
	r.Today.Groups[0].Name = "web\x1b[31m"
	r.Notes = []string{"DaemonSet kube-system/aws-node\x1b]0;x\a not found"}
	var b bytes.Buffer
	if err := WriteText(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Contains(out, "\x1b") {
		t.Error("an escape sequence from a name reached the terminal")
	}
	hs := headings.Text(out)
	headings.Check(t, "plan text", hs)
	for _, want := range []string{"nodekeeper plan: add 300 m5.large to web\\x1b[31m", TitleVerdict, TitleLimits,
		"LIMIT                      TODAY                        WITH MINIMUM_IP_TARGET=18 WARM_IP_TARGET=2  WHERE", TitleGroups, TitleSubnets, TitleNotes} {
		if !slices.Contains(hs, want) {
			t.Errorf("no heading %q in %q", want, hs)
		}
	}
	for _, want := range []string{
		"  today: DOES NOT FIT: the first limit to fail is subnet free addresses, at new node 102 of 300 (subnet-b)\n" +
			"    delay: image pulls: the kubelet refuses pulls over registryBurst and retries them with back-off: a new node's last pull starts 10s after its first\n" +
			"    delay: EC2 API calls: ipamd's calls wait for the EC2 bucket's refill: every new node's addresses after 8m50s\n",
		"  Subnet free addresses      fails at node 102            fails at node 132",
		"  Image pulls                waits from node 1            waits from node 1",
		"  EC2 API calls              waits from node 173          waits from node 173",
		"\nNotes\n  DaemonSet kube-system/aws-node\\x1b]0;x\\x07 not found\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

// -o json and -o yaml are one document with apiVersion and kind that its schema describes, with
// and without a what-if.
func TestJSONAndYAMLMatchSchema(t *testing.T) {
	for _, changes := range []map[string]string{nil, {"ENABLE_PREFIX_DELEGATION": "true"}} {
		r := seedResult(t, changes)
		var j, y bytes.Buffer
		if err := WriteJSON(&j, r); err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(j.Bytes(), []byte(`{"apiVersion":"nodekeeper.io/v1alpha1","kind":"Plan",`)) {
			t.Errorf("JSON starts %.80s", j.String())
		}
		schematest.Validate(t, Kind, j.Bytes())
		if err := WriteYAML(&y, r); err != nil {
			t.Fatal(err)
		}
		schematest.Validate(t, Kind, y.Bytes())
	}
}
