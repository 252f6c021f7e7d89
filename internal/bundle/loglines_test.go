package bundle

import (
	"strings"
	"testing"

	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/test/findingstest"
)

// findCode returns the finding with code, or fails.
func findCode(t *testing.T, rep *findings.Report, code string) findings.Finding {
	t.Helper()
	for _, f := range rep.Findings() {
		if f.Code == code {
			return f
		}
	}
	t.Fatalf("no %s in %v", code, findingstest.ReportCodes(rep))
	return findings.Finding{}
}

// TestNewLogLines: each new line, alone in the file where it appears on a node, gives its
// finding. Formats from amazon-vpc-cni-k8s (cmd/routed-eni-cni-plugin/cni.go,
// pkg/ipamd/ipamd.go, pkg/ipamd/datastore/data_store.go) and the kubelet
// (pkg/kubelet/kubelet.go, pkg/kubelet/kubelet_node_status.go, pkg/kubelet/eviction/eviction_manager.go).
func TestNewLogLines(t *testing.T) {
	const kl, ipamd, plugin = "kubelet/kubelet.log", "var_log/aws-routed-eni/ipamd.log", "var_log/aws-routed-eni/plugin.log"
	for _, tc := range []struct {
		name, file, line, want string
	}{
		{"kubelet: sandbox without an address", kl, `E1023 10:02:11.104  3412 pod_workers.go:1301] "Error syncing pod, skipping" err="failed to \"CreatePodSandbox\" for \"web-0_shop(4b1d)\" with CreatePodSandboxError: \"Failed to create sandbox for pod \\\"web-0_shop(4b1d)\\\": rpc error: code = Unknown desc = failed to setup network for sandbox \\\"14bf\\\": plugin type=\\\"aws-cni\\\" name=\\\"aws-cni\\\" failed (add): add cmd: failed to assign an IP address to container\""`, "NK614:error"},
		{"plugin: failed to assign", plugin, `{"level":"error","ts":"2024-10-30T21:32:54.531Z","caller":"routed-eni-cni-plugin/cni.go:301","msg":"Failed to assign an IP address to container 14bf"}`, "NK614:error"},
		{"ipamd: datastore empty", ipamd, `{"level":"error","ts":"2024-10-30T21:32:54.531Z","caller":"datastore/data_store.go:607","msg":"DataStore has no available IP/Prefix addresses"}`, "NK614:error"},
		{"ipamd: subnet exhausted", ipamd, `{"level":"error","ts":"2024-10-30T21:32:54.531Z","caller":"ipamd/ipamd.go:1012","msg":"Failed to increase pool size due to not able to allocate ENI AllocENI: failed to create ENI: api error InsufficientFreeAddressesInSubnet: The specified subnet does not have enough free addresses to satisfy the request."}`, "NK615:error"},
		{"ipamd: no /28 for a prefix", ipamd, `{"level":"error","caller":"ipamd/ipamd.go:1012","msg":"Failed to allocate a private IP/Prefix addresses on ENI eni-0abc: InsufficientCidrBlocks: The specified subnet does not have enough free cidr blocks to satisfy the request."}`, "NK615:error"},
		{"kubelet: ipamd refused", kl, `E1023 10:02:11.104 3412 log.go:32] "RunPodSandbox from runtime service failed" err="rpc error: code = Unknown desc = failed to setup network for sandbox \"14bf\": plugin type=\"aws-cni\" name=\"aws-cni\" failed (add): add cmd: Error received from AddNetwork gRPC call: rpc error: code = Unavailable desc = connection error: desc = \"transport: Error while dialing: dial tcp 127.0.0.1:50051: connect: connection refused\""`, "NK611:error"},
		{"ipamd: EC2 throttled", ipamd, `{"level":"error","caller":"ipamd/ipamd.go:1012","msg":"Failed to increase pool size due to not able to allocate ENI AllocENI: failed to create ENI: api error RequestLimitExceeded: Request limit exceeded."}`, "NK613:warning"},
		// The ThrottlingException variants, as the AWS SDK for Go v2 words an API error
		// (smithy-go's OperationError "operation error SERVICE: OP, ..." around ResponseError and
		// "api error CODE: MESSAGE"), which VPC CNI 1.19 and later log.
		{"ipamd: EC2 throttled, ThrottlingException", ipamd, `{"level":"error","ts":"2024-10-30T21:32:54.531Z","caller":"awsutils/awsutils.go:1049","msg":"Failed to describe network interfaces: operation error EC2: DescribeNetworkInterfaces, exceeded maximum number of attempts, 10, https response error StatusCode: 400, RequestID: 4e8f0b1c-8a2d-4f3e-9c51-2d7b6a1e0f93, api error ThrottlingException: Rate exceeded"}`, "NK613:warning"},
		{"ipamd: EC2 throttled, Throttling: Rate exceeded", ipamd, `{"level":"error","ts":"2024-10-30T21:32:54.531Z","caller":"ipamd/ipamd.go:1012","msg":"Failed to increase pool size due to not able to allocate ENI AllocENI: failed to create ENI: Throttling: Rate exceeded"}`, "NK613:warning"},
		{"kubelet: no serving certificate", kl, `I1023 10:02:11.594143 8070 log.go:184] http: TLS handshake error from 192.168.130.116:38710: no serving certificate available for the kubelet`, "NK605:warning"},
		{"kubelet: eviction stats", kl, `E1023 10:02:11.104 3412 eviction_manager.go:262] "Eviction manager: failed to get summary stats" err="failed to get root cgroup stats: failed to get cgroup stats for \"/\": unable to find data in memory cache"`, "NK604:warning"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := analyzeFiles(t, map[string]string{tc.file: tc.line + "\n"}, Options{})
			var got []string
			for _, c := range findingstest.ReportCodes(rep) {
				if !strings.HasSuffix(c, ":skipped") {
					got = append(got, c)
				}
			}
			if strings.Join(got, " ") != tc.want {
				t.Fatalf("got %v, want %s", got, tc.want)
			}
		})
	}
}

// TestZombieKubelet: `nodes "NAME" not found` in node status errors is the deleted-Node case
// (seed 001): NK603 becomes an error that says so and gives that fix; the eviction manager's
// failures point at it too.
func TestZombieKubelet(t *testing.T) {
	log := `E1023 10:02:11.104 3412 kubelet_node_status.go:549] "Error updating node status, will retry" err="error getting node \"ip-10-0-7-9.ec2.internal\": nodes \"ip-10-0-7-9.ec2.internal\" not found"` + "\n" +
		`E1023 10:02:11.204 3412 kubelet_node_status.go:536] "Unable to update node status" err="update node status exceeds retry count"` + "\n" +
		`E1023 10:02:12.104 3412 eviction_manager.go:262] "Eviction manager: failed to get summary stats" err="failed to get node info: node \"ip-10-0-7-9.ec2.internal\" not found"` + "\n"
	rep := analyzeFiles(t, map[string]string{"kubelet/kubelet.log": log}, Options{})
	f := findCode(t, rep, "NK603")
	if f.Severity != findings.Error || !strings.Contains(f.Message, `1 says the Node "ip-10-0-7-9.ec2.internal" is not found`) || !strings.Contains(f.Message, "zombie kubelet") {
		t.Errorf("NK603: %s %s", f.Severity, f.Message)
	}
	if !strings.Contains(f.Remediation, "restart the kubelet") {
		t.Errorf("NK603 fix: %s", f.Remediation)
	}
	e := findCode(t, rep, "NK604")
	if !strings.Contains(e.Message, `node "ip-10-0-7-9.ec2.internal" is not found`) {
		t.Errorf("NK604: %s", e.Message)
	}
	// Without "not found", node status failures stay a warning with the generic fix.
	rep = analyzeFiles(t, map[string]string{"kubelet/kubelet.log": strings.SplitN(log, "\n", 3)[1] + "\n"}, Options{})
	if f := findCode(t, rep, "NK603"); f.Severity != findings.Warning || strings.Contains(f.Message, "zombie") {
		t.Errorf("NK603 without not found: %s %s", f.Severity, f.Message)
	}
}
