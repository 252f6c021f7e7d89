package bundle

import (
	"archive/tar"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/bootstrap"
	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/rules"
	"github.com/nodekeeper/nodekeeper/internal/test/collectortar"
	"github.com/nodekeeper/nodekeeper/internal/test/findingstest"
	"github.com/nodekeeper/nodekeeper/internal/test/golden"
	"github.com/nodekeeper/nodekeeper/internal/test/gzipped"
)

var testNow = time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC)

// member is one tar entry of a test archive.
type member = collectortar.Member

// tarGz builds a gzip-compressed tar in memory, every entry modified at testNow.
func tarGz(t testing.TB, ms []member) []byte { return collectortar.TarGz(t, testNow, ms) }

// collectorLayout wraps files in the collector's directory entries with "./" names.
func collectorLayout(files map[string]string) []member { return collectortar.Layout(files) }

// seedFiles reproduces the node of seed 002 (the AWS support case): custom networking with the
// bootstrap default of 110 pods on an m5.large, default image pull limits, a self-managed VPC
// CNI 1.12.0 without CLUSTER_ENDPOINT, EC2 throttling, IO delay and a user data script that
// overrides the hostname, flushes iptables and restarts Docker on a containerd node.
func seedFiles() map[string]string {
	j := func(level, caller, msg string) string {
		return `{"level":"` + level + `","ts":"2024-03-04T09:11:31.512Z","caller":"` + caller + `","msg":"` + msg + `"}` + "\n"
	}
	return map[string]string{
		"system/instance-id.txt": "i-0123456789abcdef0\n",
		"system/procstat.txt":    "cpu  1 2 3 4\ncpu0 1 1 1 1\ncpu1 1 1 1 1\nintr 12345\nctxt 999\n",
		"system/io_throttling.txt": "PID Name Block IO Delay (centisconds)\n" +
			"3121 (kubelet) 4521\n2890 (containerd) 3012\n4100 (aws-k8s-agent) 1505\n612 (journal d) 1200\n1 (systemd) 12\n",
		"kubelet/kubelet.log": "" +
			"Mar 04 09:11:40 ip-10-0-12-34.ec2.internal kubelet[3121]: E0304 09:11:40.114 3121 nodelease.go:49] \"Failed to get node when trying to set owner ref to the node lease\" err=\"nodes \\\"ip-10-0-12-34.ec2.internal\\\" not found\" node=\"ip-10-0-12-34.ec2.internal\"\n" +
			"Mar 04 09:11:41 ip-10-0-12-34.ec2.internal kubelet[3121]: I0304 09:11:41.000 3121 kubelet_node_status.go:73] \"Attempting to register node\"\n" +
			"Mar 04 09:12:01 ip-10-0-12-34.ec2.internal kubelet[3121]: E0304 09:12:01.123 3121 pod_workers.go:1301] \"Error syncing pod, skipping\" err=\"failed to \\\"StartContainer\\\" for \\\"app\\\" with ErrImagePull: \\\"pull QPS exceeded\\\"\" pod=\"default/app-7d9c-abcde\"\n" +
			"Mar 04 09:12:01 ip-10-0-12-34.ec2.internal kubelet[3121]: E0304 09:12:01.124 3121 pod_workers.go:1301] \"Error syncing pod, skipping\" err=\"failed to \\\"StartContainer\\\" for \\\"app\\\" with ErrImagePull: \\\"pull QPS exceeded\\\"\" pod=\"default/app-7d9c-fghij\"\n" +
			"Mar 04 09:15:00 ip-10-0-12-34.ec2.internal kubelet[3121]: E0304 09:15:00.000 3121 kubelet_node_status.go:535] \"Unable to update node status\" err=\"update node status exceeds retry count\"\n" +
			// The seed's first symptom (kubelet's GetCertificate in pkg/kubelet/kubelet.go, logged by net/http).
			"Mar 04 09:15:02 ip-10-0-12-34.ec2.internal kubelet[3121]: I0304 09:15:02.431 3121 log.go:245] http: TLS handshake error from 198.51.100.139:45160: no serving certificate available for the kubelet\n" +
			// Pods stuck in ContainerCreating: the CNI plugin's error (cmd/routed-eni-cni-plugin/cni.go) as the kubelet quotes it.
			"Mar 04 09:16:10 ip-10-0-12-34.ec2.internal kubelet[3121]: E0304 09:16:10.552 3121 log.go:32] \"RunPodSandbox from runtime service failed\" err=\"rpc error: code = Unknown desc = failed to setup network for sandbox \\\"9d2f\\\": plugin type=\\\"aws-cni\\\" name=\\\"aws-cni\\\" failed (add): add cmd: failed to assign an IP address to container\"\n",
		"kubelet/kubelet-config.json": `{"kind":"KubeletConfiguration","apiVersion":"kubelet.config.k8s.io/v1beta1","maxPods":110,` +
			`"containerRuntimeEndpoint":"unix:///run/containerd/containerd.sock","serializeImagePulls":false,"kubeAPIQPS":10,"kubeAPIBurst":20}`,
		"kubelet/kubelet_service.txt": "# /etc/systemd/system/kubelet.service\n[Service]\nExecStart=/usr/bin/kubelet --config /etc/kubernetes/kubelet/kubelet-config.json $KUBELET_ARGS $KUBELET_EXTRA_ARGS\n" +
			"# /etc/systemd/system/kubelet.service.d/10-kubelet-args.conf\n[Service]\nEnvironment='KUBELET_ARGS=--node-ip=10.0.12.34 --pod-infra-container-image=602401143452.dkr.ecr.us-east-1.amazonaws.com/eks/pause:3.5 --v=2'\n",
		"var_log/aws-routed-eni/ipamd.log": j("info", "aws-k8s-agent/main.go:105", "Starting L-IPAMD v1.12.0  ...") +
			j("debug", "awsutils/awsutils.go:582", "Found instance-type: m5.large ") +
			j("error", "k8sapi/k8sutils.go:180", `Unable to reach API Server, Get \"https://172.20.0.1:443/version?timeout=32s\": net/http: request canceled while waiting for connection (Client.Timeout exceeded while awaiting headers)`) +
			j("error", "ipamd/ipamd.go:936", `Failed to increase pool size due to not able to allocate ENI AllocENI: error attaching ENI: attachENI: failed to attach ENI:RequestLimitExceeded: Request limit exceeded.`) +
			// pkg/ipamd/ipamd.go (increaseDatastorePool) with the EC2 error code of CreateNetworkInterface.
			j("error", "ipamd/ipamd.go:936", `Failed to increase pool size due to not able to allocate ENI AllocENI: failed to create ENI: failed to create network interface: operation error EC2: CreateNetworkInterface, https response error StatusCode: 400, RequestID: 5c1e, api error InsufficientFreeAddressesInSubnet: The specified subnet does not have enough free addresses to satisfy the request.`) +
			// pkg/ipamd/datastore/data_store.go (AssignPodIPv4Address).
			j("error", "datastore/data_store.go:607", `DataStore has no available IP/Prefix addresses`),
		"var_log/aws-routed-eni/plugin.log": j("error", "routed-eni-cni-plugin/cni.go:283", `Error received from AddNetwork gRPC call for container 5f3c: rpc error: code = Unavailable desc = connection error: desc = \"transport: Error while dialing dial tcp 127.0.0.1:50051: connect: connection refused\"`) +
			// cmd/routed-eni-cni-plugin/cni.go (add) when ipamd answers Success == false.
			j("error", "routed-eni-cni-plugin/cni.go:301", `Failed to assign an IP address to container 9d2f`),
		// cloud-init's stage line gives the boot (T = 09:11:01.7); ipamd refused at 09:11:31.5 (T+30s).
		"var_log/cloud-init-output.log": "Cloud-init v. 19.3-46.amzn2 running 'modules:final' at Mon, 04 Mar 2024 09:11:20 +0000. Up 18.30 seconds.\n" +
			"+ hostnamectl set-hostname app-node-01\n+ iptables -F\n+ iptables -t nat -F\n+ systemctl restart docker\n" +
			"+ /etc/eks/bootstrap.sh prod-cluster --use-max-pods true --b64-cluster-ca xxx --apiserver-endpoint https://ABC.gr7.us-east-1.eks.amazonaws.com\n" +
			"Using containerd as the container runtime\n",
		"ipamd/ipamd-env-settings.json": `{"AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG":true,"WARM_ENI_TARGET":1,"WARM_IP_TARGET":0,"MANAGE_ENIS_NON_SCHEDULABLE":false,"SUBNET_DISCOVERY":true}`,
		"cni/cni-configuration-variables-containerd.json": `{"ID":"4b1d","Image":"602401143452.dkr.ecr.us-east-1.amazonaws.com/amazon-k8s-cni:v1.12.0-eksbuild.1",` +
			`"Spec":{"process":{"env":["PATH=/usr/bin","AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG=true","WARM_ENI_TARGET=1","IP_COOLDOWN_PERIOD=30","AWS_VPC_K8S_CNI_LOGLEVEL=DEBUG"]}}}` + "\n",
		"containerd/containerd-version.txt": "Client:\n  Version:  1.7.11\nServer:\n  Version:  1.7.11\n",
	}
}

// seedFindings is how many findings seedFiles gives (TestSeedBundle lists them).
const seedFindings = 18

func analyzeBytes(t *testing.T, data []byte, o Options) (*findings.Report, error) {
	t.Helper()
	if o.Now.IsZero() {
		o.Now = testNow
	}
	return Analyze(bytes.NewReader(data), "eks_i-0123456789abcdef0_2024-03-04_0915-UTC_0.7.8.tar.gz", o)
}

// analyzeFiles analyzes files packed as the collector packs them; an error fails the test.
func analyzeFiles(t *testing.T, files map[string]string, o Options) *findings.Report {
	t.Helper()
	rep, err := analyzeBytes(t, tarGz(t, collectorLayout(files)), o)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// assertGolden compares got with testdata/NAME (golden.Assert; -update rewrites it).
func assertGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Assert(t, filepath.Join("testdata", name), got)
}

func TestSeedBundle(t *testing.T) {
	rep := analyzeFiles(t, seedFiles(), Options{})
	want := []string{
		"NK101:error",   // 110 pods on an m5.large with custom networking (20 addresses)
		"NK201:warning", // registryPullQPS 5 / burst 10 for 110 pods
		"NK401:info",    // no CLUSTER_ENDPOINT
		"NK410:error",   // VPC CNI 1.12.0
		"NK601:warning", "NK602:warning", "NK603:warning", "NK605:warning",
		"NK611:error", "NK612:error", "NK613:warning", "NK614:error", "NK615:error",
		"NK621:warning", "NK622:warning", // IO delay; the boot's IO delay with ipamd's first connection refused
		"NK631:warning", "NK632:error", "NK633:warning",
	}
	if got := findingstest.ReportCodes(rep); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("findings:\n got %v\nwant %v", got, want)
	}
	if findings.ExitCode(rep.MaxSeverity()) != findings.ExitFindings {
		t.Errorf("exit code %d", findings.ExitCode(rep.MaxSeverity()))
	}
	for _, f := range rep.Findings() {
		if f.Code == "NK632" && !strings.Contains(f.Message, "2 iptables flushes") {
			t.Errorf("iptables flushes counted wrong: %s", f.Message)
		}
		if f.Code == "NK601" && !strings.Contains(f.Message, "2 ") {
			t.Errorf("pull QPS lines: %s", f.Message)
		}
	}
	var buf bytes.Buffer
	if err := findings.PrintText(&buf, rep, findings.PrintOptions{Catalog: catalog}); err != nil {
		t.Fatal(err)
	}
	assertGolden(t, "seed002.txt", buf.Bytes())
	buf.Reset()
	if err := findings.PrintJSON(&buf, rep); err != nil {
		t.Fatal(err)
	}
	assertGolden(t, "seed002.json", buf.Bytes())
}

func TestCleanBundle(t *testing.T) {
	files := collectortar.CleanNode()
	rep := analyzeFiles(t, files, Options{})
	if got := findingstest.ReportCodes(rep); len(got) != 0 {
		t.Fatalf("clean bundle has findings %v", got)
	}
	for _, s := range rep.Sections() {
		if score, ok := s.Score(); !ok || score != 100 {
			t.Errorf("section %s: score %d %v", s.Name, score, ok)
		}
	}
}

func TestPartialBundles(t *testing.T) {
	t.Run("only ipamd env settings", func(t *testing.T) {
		files := seedFiles()
		delete(files, "cni/cni-configuration-variables-containerd.json")
		rep := analyzeFiles(t, files, Options{})
		got := strings.Join(findingstest.ReportCodes(rep), " ")
		// The introspection endpoint lists a few settings only: no CLUSTER_ENDPOINT verdict, but
		// custom networking is still known, so the capacity error stays.
		if strings.Contains(got, "NK401") || !strings.Contains(got, "NK101:error") {
			t.Fatalf("got %s", got)
		}
	})
	t.Run("missing inputs are skipped, not failed", func(t *testing.T) {
		rep := analyzeFiles(t, map[string]string{"system/instance-id.txt": "i-1\n"}, Options{})
		for _, f := range rep.Findings() {
			if f.Severity != findings.Skipped {
				t.Errorf("unexpected %s %s: %s", f.Code, f.Severity, f.Message)
			}
		}
		if len(rep.Findings()) < 5 || findings.ExitCode(rep.MaxSeverity()) != 0 {
			t.Errorf("%d findings, exit %d", len(rep.Findings()), findings.ExitCode(rep.MaxSeverity()))
		}
	})
	t.Run("instance type from the flag", func(t *testing.T) {
		files := seedFiles()
		files["var_log/aws-routed-eni/ipamd.log"] = "{}\n"
		rep := analyzeFiles(t, files, Options{InstanceType: "m5.24xlarge"})
		// 110 fits an m5.24xlarge even with custom networking.
		if got := strings.Join(findingstest.ReportCodes(rep), " "); strings.Contains(got, "NK101") {
			t.Fatalf("got %s", got)
		}
	})
	t.Run("wrapped in a top directory", func(t *testing.T) {
		var ms []member
		for _, m := range collectorLayout(seedFiles()) {
			m.Name = "eks_i-0123/" + strings.TrimPrefix(m.Name, "./")
			ms = append(ms, m)
		}
		rep, err := analyzeBytes(t, tarGz(t, ms), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(findingstest.ReportCodes(rep)); n != seedFindings {
			t.Fatalf("%d findings, want the seed's %d: %v", n, seedFindings, findingstest.ReportCodes(rep))
		}
	})
	t.Run("long lines do not break the scan", func(t *testing.T) {
		files := seedFiles()
		files["kubelet/kubelet.log"] = strings.Repeat("x", 3*maxLine) + "\n" + "E0304 \"pull QPS exceeded\"\n" + strings.Repeat("y", maxLine+5)
		rep := analyzeFiles(t, files, Options{})
		found := false
		for _, f := range rep.Findings() {
			if f.Code == "NK601" {
				found = strings.Contains(f.Evidence[0], "kubelet.log:2:")
			}
		}
		if !found {
			t.Fatal("pull QPS line after a long line not found on line 2")
		}
	})
}

func TestBootstrapPatterns(t *testing.T) {
	for _, tc := range []struct {
		line string
		re   string
		want bool
	}{
		{"+ hostnamectl set-hostname foo", "host", true},
		{"hostname my-node", "host", true},
		{"echo worker-1 > /etc/hostname", "host", true},
		{"--kubelet-extra-args '--hostname-override=foo'", "host", true},
		{"Setting hostname from instance metadata", "host", false},
		{"+ iptables -F", "flush", true},
		{"+ iptables -t nat -F", "flush", true},
		{"iptables --flush INPUT", "flush", true},
		{"ip6tables-legacy -X", "flush", true},
		{"iptables -A INPUT -j ACCEPT", "flush", false},
		{"iptables-save > /tmp/rules -F", "flush", false},
		{"+ systemctl restart docker", "docker", true},
		{"systemctl enable --now docker.service", "docker", true},
		{"service docker start", "docker", true},
		{"systemctl restart containerd", "docker", false},
		{"docker info", "docker", false},
	} {
		re := map[string]interface{ MatchString(string) bool }{"host": bootstrap.Hostname, "flush": bootstrap.Flush, "docker": bootstrap.Docker}[tc.re]
		if got := re.MatchString(tc.line); got != tc.want {
			t.Errorf("%s %q: %v, want %v", tc.re, tc.line, got, tc.want)
		}
	}
}

// TestHostileArchives: every malformed or hostile archive is a clear error, and nothing is
// written anywhere (the test runs in an empty directory and checks it stays empty).
func TestHostileArchives(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	ok := []member{{Name: "./", Typeflag: tar.TypeDir}, {Name: "./system/instance-id.txt", Body: "i-1\n"}}
	big := strings.Repeat("A", 4096)
	tests := []struct {
		name   string
		data   []byte
		limits Limits
		want   string
	}{
		{name: "dotdot", data: tarGz(t, append(ok, member{Name: "../../etc/cron.d/evil", Body: "x"})), want: `escapes the archive with ".."`},
		{name: "dotdot inside", data: tarGz(t, append(ok, member{Name: "./kubelet/../../evil", Body: "x"})), want: `".."`},
		{name: "backslash dotdot", data: tarGz(t, append(ok, member{Name: `kubelet\..\..\evil`, Body: "x"})), want: `".."`},
		{name: "absolute", data: tarGz(t, append(ok, member{Name: "/etc/passwd", Body: "x"})), want: "absolute path"},
		{name: "drive letter", data: tarGz(t, append(ok, member{Name: `C:\evil`, Body: "x"})), want: "absolute path"},
		{name: "symlink", data: tarGz(t, append(ok, member{Name: "./kubelet/kubelet.log", Typeflag: tar.TypeSymlink, Link: "/etc/shadow"})), want: "symbolic link"},
		{name: "hardlink", data: tarGz(t, append(ok, member{Name: "./kubelet/kubelet.log", Typeflag: tar.TypeLink, Link: "system/instance-id.txt"})), want: "hard link"},
		{name: "device", data: tarGz(t, append(ok, member{Name: "./dev/sda", Typeflag: tar.TypeBlock})), want: "device, FIFO"},
		{name: "fifo", data: tarGz(t, append(ok, member{Name: "./fifo", Typeflag: tar.TypeFifo})), want: "device, FIFO"},
		{name: "duplicate", data: tarGz(t, append(ok, member{Name: "system/instance-id.txt", Body: "i-2"})), want: "appears twice"},
		{name: "member above cap", data: tarGz(t, append(ok, member{Name: "./kubelet/kubelet.log", Body: big})), limits: Limits{MaxMemberSize: 1024}, want: "above the cap of 1024"},
		{name: "archive inflates past cap", data: tarGz(t, append(ok, member{Name: "./a", Body: big}, member{Name: "./b", Body: big})), limits: Limits{MaxTotalSize: 6000}, want: "inflates past 6000 bytes"},
		{name: "too many members", data: tarGz(t, append(ok, member{Name: "./a", Body: "1"}, member{Name: "./b", Body: "2"})), limits: Limits{MaxMembers: 2}, want: "more than 2 members"},
		{name: "oversized config", data: tarGz(t, append(ok, member{Name: "./kubelet/config.json", Body: big})), limits: Limits{}, want: ""},
		{name: "not gzip", data: []byte("just some text, not an archive\n"), want: "not a gzip file"},
		{name: "plain tar", data: plainTar(t), want: "not a gzip file"},
		{name: "empty file", data: nil, want: "not a gzip file"},
		{name: "gzip of garbage", data: gzipped.Bytes(t, []byte(strings.Repeat("garbage ", 200))), want: "neither a tar archive"},
		{name: "truncated", data: tarGz(t, collectorLayout(seedFiles()))[:300], want: "the bundle is truncated"},
		{name: "empty archive", data: tarGz(t, nil), want: "no members"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := analyzeBytes(t, tc.data, Options{Limits: tc.limits})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrUnsafeArchive) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrUnsafeArchive containing %q", err, tc.want)
			}
		})
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Fatalf("the analysis wrote %d entries into the working directory", len(entries))
	}
	for _, p := range []string{filepath.Join(dir, "..", "evil"), filepath.Join(filepath.Dir(dir), "etc", "cron.d", "evil")} {
		if _, err := os.Stat(p); err == nil {
			t.Fatalf("%s exists", p)
		}
	}
}

func TestSmallFileCap(t *testing.T) {
	data := tarGz(t, collectorLayout(map[string]string{"kubelet/config.json": strings.Repeat(" ", smallFileCap+1)}))
	if _, err := analyzeBytes(t, data, Options{}); err == nil || !strings.Contains(err.Error(), "for a file of its kind") {
		t.Fatalf("err = %v", err)
	}
}

func plainTar(t *testing.T) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	_ = tw.WriteHeader(&tar.Header{Name: "a", Size: 1, Mode: 0o644, Typeflag: tar.TypeReg})
	_, _ = tw.Write([]byte("x"))
	_ = tw.Close()
	return buf.Bytes()
}

func TestAnalyzeFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bundle.tar.gz")
	if err := os.WriteFile(p, tarGz(t, collectorLayout(seedFiles())), 0o600); err != nil {
		t.Fatal(err)
	}
	rep, err := AnalyzeFile(p, Options{Now: testNow})
	if err != nil || !strings.Contains(rep.Target, "i-0123456789abcdef0") {
		t.Fatalf("%v %v", rep, err)
	}
	if _, err := AnalyzeFile(p+".missing", Options{}); err == nil {
		t.Error("a missing file was accepted")
	}
}

// catalog is what the CLI looks bundle's rules up in: the shared node rules and bundle's own.
// Building it checks that every rule is complete and that no code or name is used twice.
var catalog = findings.MustCatalog(rules.Rules, Rules)

// TestDocsListEveryRule keeps docs/bundle.md in step with the bundle's rules: a row for each,
// and every NK6xx code of the catalog named.
func TestDocsListEveryRule(t *testing.T) {
	findingstest.DocListsRules(t, "../../docs/bundle.md", Rules, func(r findings.Rule) string {
		return "| " + r.Code + " | `" + r.Name + "` | " + r.Severity.String() + " |"
	})
	var own []findings.Rule
	for _, r := range catalog.Rules() {
		if strings.HasPrefix(r.Code, "NK6") {
			own = append(own, r)
		}
	}
	findingstest.DocListsRules(t, "../../docs/bundle.md", own, func(r findings.Rule) string { return r.Code })
}
