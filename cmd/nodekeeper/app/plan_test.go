package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodekeeper/nodekeeper/internal/cli"
	"github.com/nodekeeper/nodekeeper/internal/eni"
	"github.com/nodekeeper/nodekeeper/internal/plan"
	"github.com/nodekeeper/nodekeeper/internal/plan/scenario"
	"github.com/nodekeeper/nodekeeper/internal/test/awsfake"
)

// TestPlanUsage: what plan refuses exits 2 with the reason, before any cluster or AWS is asked
// (useBrokenKubeconfig: a run that got that far would exit 1 naming the kubeconfig).
func TestPlanUsage(t *testing.T) {
	useBrokenKubeconfig(t)
	dir := t.TempDir()
	good := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(good, []byte("apiVersion: nodekeeper.io/v1alpha1\nkind: PlanScenario\nnodeGroups: [{name: a, add: 3, instanceType: m5.large}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: nodekeeper.io/v1alpha1\nkind: PlanScenario\nnodeGroups: [{name: a, add: 3, size: big}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Issue 31 items 3 and 4: a scenario past its size or node groups, and figures the flags
	// refuse, exit 2 naming the file and the field.
	head := "apiVersion: nodekeeper.io/v1alpha1\nkind: PlanScenario\n"
	write := func(name, doc string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	huge := write("huge.yaml", head+"nodeGroups:\n"+strings.Repeat("- {name: a, add: 1}\n", scenario.MaxFileBytes/20+1))
	many := write("many.yaml", head+"nodeGroups:\n"+strings.Repeat("- {name: a, add: 1}\n", scenario.MaxNodeGroups+1))
	negative := write("negative.yaml", head+"nodeGroups: [{name: a, add: 3, instanceType: m5.large, maxPods: -1}]\n")
	bucket := write("bucket.yaml", head+"nodeGroups: [{name: a, add: 3, instanceType: m5.large}]\nec2Mutating: {capacity: -1, refillPerSecond: -5}\n")
	wait := write("wait.yaml", head+"nodeGroups: [{name: a, add: 3, instanceType: m5.large}]\nmaxAddressWait: -5m\n")
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"plan", "--scenario", huge}, 2, "scenario " + huge + ": larger than 256 KiB"},
		{[]string{"plan", "--scenario", many}, 2, "scenario " + many + ": 257 nodeGroups, more than the 256"},
		{[]string{"plan", "--scenario", negative}, 2, "nodeGroups[0].maxPods must not be negative"},
		{[]string{"plan", "--scenario", bucket}, 2, "ec2Mutating: capacity must be at least 1"},
		{[]string{"plan", "--scenario", wait}, 2, `maxAddressWait "-5m" must be positive`},
		{[]string{"plan", "--add", "3", "--instance-type", "m5.large", "--ec2-bucket", "50/NaN"}, 2, `--ec2-bucket "50/NaN": refillPerSecond must be a finite number`},
		{[]string{"plan", "--add", "3", "--instance-type", "m5.large", "--ec2-bucket", "50/Inf"}, 2, `--ec2-bucket "50/Inf": refillPerSecond must be a finite number`},
		{[]string{"plan", "--add", "3", "--instance-type", "m5.large", "--ec2-bucket", "0/5"}, 2, `--ec2-bucket "0/5": capacity must be at least 1`},
		{[]string{"plan"}, 2, "--add N (at least 1) is required, or --scenario FILE"},
		{[]string{"plan", "--add", "3"}, 2, "--instance-type is required without --nodegroup"},
		{[]string{"plan", "--add", "3", "--instance-type", "m5.large", "--set", "WARM_IP_TARGET"}, 2, `--set "WARM_IP_TARGET": want KEY=VALUE`},
		{[]string{"plan", "--add", "3", "--instance-type", "m5.large", "--ec2-bucket", "50"}, 2, `--ec2-bucket "50": want CAPACITY/REFILL`},
		{[]string{"plan", "--add", "3", "--instance-type", "m5.large", "--pods-per-node", "-1"}, 2, "--pods-per-node must not be negative"},
		{[]string{"plan", "--add", "3", "--instance-type", "m5.large", "--max-address-wait", "0s"}, 2, "--max-address-wait must be positive"},
		{[]string{"plan", "--add", "3", "--instance-type", "m5.large", "--aws-node", "aws-node"}, 2, "want NAMESPACE/NAME"},
		{[]string{"plan", "--add", "3", "--instance-type", "m5.large", "--region", "eu-west-1"}, 2, "--region needs --aws"},
		{[]string{"plan", "--scenario", good, "--add", "3"}, 2, "--add and --scenario do not go together"},
		{[]string{"plan", "--scenario", bad}, 2, "unknown field"},
		{[]string{"plan", "--scenario", filepath.Join(dir, "missing.yaml")}, 1, "missing.yaml"},
		{[]string{"plan", "-o", "junit", "--add", "3", "--instance-type", "m5.large"}, 2, `unknown output format "junit" (want text, json or yaml)`},
		{[]string{"plan", "extra"}, 2, "unknown command"},
		// Valid: the run reaches the (broken) kubeconfig.
		{[]string{"plan", "--add", "3", "--instance-type", "m5.large", "--set", "WARM_IP_TARGET=5", "--prefix-delegation", "--ec2-bucket", "100/10"}, 1, "broken.kubeconfig"},
		{[]string{"plan", "--scenario", good}, 1, "broken.kubeconfig"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, errOut, code := execute(t, false, tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.msg) {
				t.Errorf("exit %d, want %d with %q: %s", code, tc.code, tc.msg, errOut)
			}
		})
	}
}

// TestPlanExit: 3 when the plan that would run does not fit (the what-if's when there is one),
// with the verdict; 0 when it fits.
func TestPlanExit(t *testing.T) {
	m5, err := eni.Lookup("m5.large")
	if err != nil {
		t.Fatal(err)
	}
	in := plan.Input{Groups: []plan.Group{{Name: "web", Type: m5, Add: 10, PodsPerNode: 12, Kubelet: plan.DefaultKubelet(),
		Placements: []plan.Placement{{NodeSubnet: "subnet-a"}}}}, Subnets: map[string]plan.Subnet{"subnet-a": {ID: "subnet-a", Free: 100}}}
	for _, tc := range []struct {
		changes map[string]string
		free    int
		code    int
		msg     string
	}{
		// 12 pods (10 addresses) hold 2 ENIs and a warm third: 27 + 3 primaries; 100 free
		// hold 3 nodes.
		{nil, 100, 3, "the plan does not fit: the first limit to fail is subnet free addresses, at new node 4 of 10 (subnet-a)"},
		// WARM_IP_TARGET=1: 11 addresses on 2 ENIs, 13 a node: 7 nodes.
		{map[string]string{"WARM_IP_TARGET": "1"}, 100, 3, "at new node 8 of 10"},
		// Prefix delegation with WARM_PREFIX_TARGET=0: one prefix and its ENI's primary, 17: 5.
		{map[string]string{"ENABLE_PREFIX_DELEGATION": "true", "WARM_PREFIX_TARGET": "0"}, 100, 3, "at new node 6 of 10"},
		{map[string]string{"WARM_IP_TARGET": "1"}, 130, 0, ""},
	} {
		in.Subnets["subnet-a"] = plan.Subnet{ID: "subnet-a", Free: tc.free}
		r, err := plan.Run(in, tc.changes)
		if err != nil {
			t.Fatal(err)
		}
		err = planExit(r)
		if code := cli.ExitCode(err); code != tc.code || (err != nil && !strings.Contains(err.Error(), tc.msg)) {
			t.Errorf("%v: exit %d (%v), want %d with %q", tc.changes, code, err, tc.code, tc.msg)
		}
	}
}

// TestPlanAWS: AWS is loaded once with --aws (then the run goes on to the cluster), never
// without it.
func TestPlanAWS(t *testing.T) {
	useBrokenKubeconfig(t)
	for _, tc := range []struct {
		args  []string
		loads int
	}{
		{[]string{"plan", "--add", "3", "--instance-type", "m5.large"}, 0},
		{[]string{"plan", "--add", "3", "--instance-type", "m5.large", "--aws", "--region", "eu-west-1"}, 1},
	} {
		aws := &fakeAWS{cloud: awsfake.New()}
		_, _, err := runCmd(t, aws, tc.args...)
		if err == nil || !strings.Contains(err.Error(), "broken.kubeconfig") || aws.loads != tc.loads {
			t.Errorf("%v: %v after %d AWS loads, want the kubeconfig's error after %d", tc.args, err, aws.loads, tc.loads)
		}
		if tc.loads == 1 && aws.region != "eu-west-1" {
			t.Errorf("region %q", aws.region)
		}
	}
}
