package app

import (
	"encoding/json"
	"html"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekeeper/nodekeeper/internal/aws/cwaudit"
	"github.com/nodekeeper/nodekeeper/internal/cli"
	"github.com/nodekeeper/nodekeeper/internal/explain"
	"github.com/nodekeeper/nodekeeper/internal/findings/findingshtml"
	"github.com/nodekeeper/nodekeeper/internal/kubeletsim"
	"github.com/nodekeeper/nodekeeper/internal/test/awsfake"
	"github.com/nodekeeper/nodekeeper/internal/test/awsserver"
	"github.com/nodekeeper/nodekeeper/internal/test/chromium"
	"github.com/nodekeeper/nodekeeper/internal/test/headings"
	"github.com/nodekeeper/nodekeeper/internal/test/testenv"
)

// hostileMessage is a sandbox failure message a compromised CNI could write: HTML that must
// stay text on the page.
const hostileMessage = `failed to setup network for sandbox: <img src=x onerror=alert(1)><script>alert(2)</script>`

// TestExplainAndDoctorHTMLOnAControlPlane runs explain and doctor as the CLI does, in-process,
// against a real API server (one for both: starting it is the cost).
func TestExplainAndDoctorHTMLOnAControlPlane(t *testing.T) {
	env, err := testenv.Start(t.Context(), testenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Stop)

	// `explain --cloudwatch`: the Node is gone (this API server never had it) and its audit
	// events are in the EKS cluster's log group in CloudWatch Logs (awsfake, its Logs Insights
	// as audit --cloudwatch's tests use it): the story says who deleted the Node, from the
	// source CloudWatch.
	t.Run("explain --cloudwatch", func(t *testing.T) {
		cloud := awsfake.New()
		cloud.Filters[cwaudit.InsightsFilter] = cwaudit.Matches
		cloud.Filters[cwaudit.FilterPattern] = cwaudit.Matches
		for i, m := range zombieTrail() {
			cloud.AddLogEvents("/aws/eks/prod/cluster", awsfake.LogEvent{Stream: "kube-apiserver-audit-0a1b2c", Timestamp: auditT0.Add(time.Duration(i) * 5 * time.Second).UnixMilli(), Message: m})
		}
		aws := &fakeAWS{cloud: cloud}
		out, stderr, err := runCmd(t, aws, "explain", zombieNode, "--cloudwatch", "--eks-cluster", "arn:aws:eks:ap-northeast-2:111122223333:cluster/prod",
			"--since", "2024-04-05 05:00", "--until", "2024-04-05 07:00", "--kubeconfig", env.KubeconfigPath(), "-o", "json")
		if err != nil {
			t.Fatalf("%v\nstderr:\n%s", err, stderr)
		}
		var story explain.Story
		if err := json.Unmarshal([]byte(out), &story); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		var deleted *explain.Line
		for i, l := range story.Timeline {
			if strings.HasPrefix(l.What, "Node "+zombieNode+" deleted by kubernetes-admin") {
				deleted = &story.Timeline[i]
			}
		}
		if deleted == nil || deleted.Source != explain.SourceCloudWatch || !deleted.Time.Equal(auditT0) || deleted.Where == "" {
			t.Errorf("who deleted the Node, from CloudWatch at %s with where: %+v\n%s", auditT0, deleted, out)
		}
		for _, l := range story.Timeline {
			if l.Source == explain.SourceAudit {
				t.Errorf("a line of the file source with --cloudwatch: %+v", l)
			}
		}
		if aws.loads == 0 || aws.region != "ap-northeast-2" {
			t.Errorf("AWS loaded %d times, region %q", aws.loads, aws.region)
		}
	})

	// `explain --aws` over the wire: the SDK's EC2 and CloudWatch clients (CloudWatch speaks
	// Smithy RPC v2 CBOR) reach the local AWS (awsserver, backed by awsfake), and the root
	// volume's IO over the boot window is on the timeline from the source CloudWatch.
	t.Run("explain --aws boot volume over the wire", func(t *testing.T) {
		const node, id, vol = "ip-10-64-2-2.ec2.internal", "i-0c0ffee0c0ffee002", "vol-0c0ffee0c0ffee002"
		env.CreateNode(t, node)
		nodes := env.AdminClient().CoreV1().Nodes()
		n, err := nodes.Get(t.Context(), node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Spec.ProviderID = "aws:///us-west-2a/" + id
		if _, err := nodes.Update(t.Context(), n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		cloud := awsfake.New()
		launched := time.Now().Add(-20 * time.Minute).UTC().Truncate(time.Second)
		size, iops, mibps := int32(20), int32(3000), int32(125)
		cloud.Instances = []ec2types.Instance{{InstanceId: awssdk.String(id), InstanceType: "m5.large", PrivateDnsName: awssdk.String(node),
			LaunchTime: &launched, State: &ec2types.InstanceState{Name: ec2types.InstanceStateNameRunning}, RootDeviceName: awssdk.String("/dev/xvda"),
			BlockDeviceMappings: []ec2types.InstanceBlockDeviceMapping{{DeviceName: awssdk.String("/dev/xvda"),
				Ebs: &ec2types.EbsInstanceBlockDevice{VolumeId: awssdk.String(vol), Status: ec2types.AttachmentStatusAttached}}}}}
		cloud.Volumes = []ec2types.Volume{{VolumeId: awssdk.String(vol), VolumeType: ec2types.VolumeTypeGp3, Size: &size, Iops: &iops, Throughput: &mibps, State: ec2types.VolumeStateInUse}}
		// Four calm minutes after the launch: 600 IOPS on a gp3 volume of 3,000.
		for i := range 4 {
			at := launched.Truncate(time.Minute).Add(time.Duration(i+1) * time.Minute)
			cloud.AddMetricSamples("AWS/EBS", "VolumeWriteOps", map[string]string{"VolumeId": vol}, awsfake.MetricSample{Time: at, Value: 600 * 60})
		}
		srv := awsserver.Start(t, cloud)
		srv.Setenv(t, "us-west-2")
		out, stderr, err := runShipped(t, "explain", node, "--aws", "--eks-cluster", "arn:aws:eks:us-west-2:111122223333:cluster/prod",
			"--kubeconfig", env.KubeconfigPath(), "-o", "json")
		if err != nil {
			t.Fatalf("%v\nstderr:\n%s", err, stderr)
		}
		var story explain.Story
		if err := json.Unmarshal([]byte(out), &story); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		found := false
		for _, l := range story.Timeline {
			found = found || l.Source == explain.SourceCloudWatch && strings.Contains(l.What, "root volume "+vol+" (gp3, 20 GiB: 3000 IOPS, 125 MiB/s)") &&
				strings.Contains(l.What, "peak 600 IOPS") && strings.Contains(l.What, "never at its IOPS or throughput limit")
		}
		if !found || len(story.Gaps) != 0 {
			t.Errorf("no CloudWatch line of the boot volume's IO (gaps %+v):\n%s", story.Gaps, out)
		}
		ops := srv.Operations()
		for _, op := range []string{"ec2:DescribeVolumes", "cloudwatch:GetMetricData"} {
			if !slices.Contains(ops, op) {
				t.Errorf("no %s call over the wire: %v", op, ops)
			}
		}
	})

	// `explain` as a user who may not list Events, with EC2 denying DescribeInstances: both reads
	// are named gaps in the story, the rest of it is told, and the exit code is 0 as
	// docs/exit-codes.md says (a forbidden or failed read is a gap, not a failure).
	t.Run("explain with forbidden reads exits 0", func(t *testing.T) {
		const node, id, user = "ip-10-64-3-3.ec2.internal", "i-0c0ffee0c0ffee003", "explain-cli-no-events"
		env.CreateNode(t, node)
		nodes := env.AdminClient().CoreV1().Nodes()
		n, err := nodes.Get(t.Context(), node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Spec.ProviderID = "aws:///us-west-2a/" + id
		if _, err := nodes.Update(t.Context(), n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		env.GrantClusterRole(t, user,
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes", "pods"}, Verbs: []string{"get", "list"}},
			rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list"}},
			rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"daemonsets"}, Verbs: []string{"get"}},
		)
		kubeconfig := filepath.Join(t.TempDir(), "limited.kubeconfig")
		if err := env.WriteKubeconfig(kubeconfig, env.UserConfig(user)); err != nil {
			t.Fatal(err)
		}
		cloud := awsfake.New()
		cloud.Instances = []ec2types.Instance{{InstanceId: awssdk.String(id), State: &ec2types.InstanceState{Name: ec2types.InstanceStateNameRunning}}}
		cloud.Deny["ec2:DescribeInstances"] = true
		out, stderr, err := runCmd(t, &fakeAWS{cloud: cloud}, "explain", node, "--aws", "--eks-cluster", "arn:aws:eks:us-west-2:111122223333:cluster/prod",
			"--kubeconfig", kubeconfig, "-o", "json")
		if code := cli.ExitCode(err); code != cli.ExitOK {
			t.Fatalf("exit %d (%v), want %d: a forbidden read is a gap\nstderr:\n%s", code, err, cli.ExitOK, stderr)
		}
		var story explain.Story
		if err := json.Unmarshal([]byte(out), &story); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		// Each gap names its verb and its resource: the Events of this Node, this instance.
		names := map[string]string{"Event list": "events (involvedObject.name=" + node + ")", "EC2 ec2:DescribeInstances": "instance " + id}
		want := map[string]bool{}
		for k := range names {
			want[k] = false
		}
		for _, g := range story.Gaps {
			k := g.Source + " " + g.Verb
			if r, ok := names[k]; ok && g.Resource == r {
				want[k] = true
			}
		}
		for k, seen := range want {
			if !seen {
				t.Errorf("no gap %q naming its resource in %+v", k, story.Gaps)
			}
		}
		created := false
		for _, l := range story.Timeline {
			created = created || l.Source == explain.SourceNode && strings.HasPrefix(l.What, "Node "+node+" created")
		}
		if !created {
			t.Errorf("the story stopped at the gaps:\n%s", out)
		}
	})

	// `doctor --html FILE`: the file is written, one offline page, its headings exactly the
	// report's, and a hostile Event message on it stays text.
	t.Run("doctor --html", func(t *testing.T) {
		const node, ns = "ip-10-64-1-1.ec2.internal", "doctor-html"
		env.CreateNode(t, node)
		admin := env.AdminClient()
		if _, err := admin.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// No controller manager here: the namespace's default service account, which pod
		// admission asks for, is created by hand.
		if _, err := admin.CoreV1().ServiceAccounts(ns).Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		scheduled := time.Now().Add(-20 * time.Minute)
		pod, err := kubeletsim.CreateStuckPod(t.Context(), admin, kubeletsim.PodSpec{Namespace: ns, Name: "api-0", Node: node, ScheduledAt: scheduled})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kubeletsim.RecordSandboxFailure(t.Context(), admin, pod, hostileMessage, 5, scheduled.Add(time.Minute), scheduled.Add(2*time.Minute)); err != nil {
			t.Fatal(err)
		}
		page := filepath.Join(t.TempDir(), "doctor.html")
		out, stderr, err := runCmd(t, nil, "doctor", "--kubeconfig", env.KubeconfigPath(), "-o", "json", "--html", page)
		if err != nil && !strings.Contains(err.Error(), "finding") {
			t.Logf("doctor: %v (exit with findings expected)", err)
		}
		b, rerr := os.ReadFile(page)
		if rerr != nil {
			t.Fatalf("--html wrote no file: %v\nstderr:\n%s", rerr, stderr)
		}
		var rep struct {
			Target   string `json:"target"`
			Sections []struct {
				Title    string            `json:"title"`
				Findings []json.RawMessage `json:"findings"`
			} `json:"sections"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("doctor -o json: %v\n%s", err, out)
		}
		want := []string{"nodekeeper doctor: " + rep.Target, "nodekeeper doctor", findingshtml.HeadingSummary}
		for _, s := range rep.Sections {
			want = append(want, s.Title)
			if len(s.Findings) > 0 {
				want = append(want, "code", "severity", "resource", "finding", "remediation")
			}
		}
		got, err := headings.HTML(b)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("headings\n got %q\nwant %q", got, want)
		}
		headings.Check(t, "doctor --html", got)
		// The hostile message is on the page, escaped: as text, not markup.
		escaped := html.EscapeString(hostileMessage)
		if !strings.Contains(string(b), escaped) {
			t.Errorf("the hostile Event message is not on the page escaped (%q)", escaped)
		}
		for _, raw := range []string{"<img src=x", "<script>alert(2)"} {
			if strings.Contains(string(b), raw) {
				t.Errorf("page holds %q unescaped", raw)
			}
		}
		// The API server's URL is the report's target, printed as text, and the hostile message
		// is text too: with both taken out nothing in the page may reach the network.
		chromium.CheckSelfContained(t, strings.NewReplacer(rep.Target, "TARGET", escaped, "MESSAGE").Replace(string(b)))
	})
}

// TestExplainBootWindowNeedsAWS: --boot-window says how long after the launch the boot volume's
// IO is read, which only --aws reads: alone it is a usage error naming both flags, and AWS is
// never loaded.
func TestExplainBootWindowNeedsAWS(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	aws := &fakeAWS{}
	_, _, err := runCmd(t, aws, "explain", zombieNode, "--boot-window", "2h")
	if err == nil || !strings.Contains(err.Error(), "--boot-window needs --aws") {
		t.Errorf("--boot-window without --aws: %v", err)
	}
	if aws.loads != 0 {
		t.Errorf("AWS loaded %d times", aws.loads)
	}
}
