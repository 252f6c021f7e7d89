package doctor

import (
	"context"
	"fmt"
	"github.com/nodekeeper/nodekeeper/internal/aws/allclients"
	"slices"
	"strings"
	"testing"
	"time"

	asgtypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nkaws "github.com/nodekeeper/nodekeeper/internal/aws"
	"github.com/nodekeeper/nodekeeper/internal/bootstrap"
	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/test/awsfake"
	"github.com/nodekeeper/nodekeeper/internal/test/findingstest"
)

// User data of each kind the launch templates of the scenario hold. The NodeConfig is nodeadm's
// (node.eks.aws/v1alpha1), the bootstrap.sh line the AL2 EKS AMI's.
const (
	nodeConfigMaxPods = "---\napiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    config:\n      maxPods: %d\n"
	al2Hostname       = "#!/bin/bash\nset -ex\nhostnamectl set-hostname \"worker-$(date +%%s)\"\n/etc/eks/bootstrap.sh prod --kubelet-extra-args '--max-pods=%d'\n"
	al2Plain          = "#!/bin/bash\n/etc/eks/bootstrap.sh prod\n"
)

// matchPrefixes says whether each of got starts with the want at its index, sorted.
func matchPrefixes(got, want []string) bool {
	want = slices.Sorted(slices.Values(want))
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if !strings.HasPrefix(got[i], want[i]) {
			return false
		}
	}
	return true
}

func templateVersion(id string, v int64, userData *string) ec2types.LaunchTemplateVersion {
	return ec2types.LaunchTemplateVersion{LaunchTemplateId: &id, LaunchTemplateName: strp("name-" + id), VersionNumber: &v,
		LaunchTemplateData: &ec2types.ResponseLaunchTemplateData{UserData: userData}}
}

// TestDoctorLaunchTemplates: on a real control plane with the in-memory AWS, doctor --aws reads
// the launch template version each Node was launched from (instance tags, the managed node
// groups' and an Auto Scaling group's current version) and reports each user-data finding once
// per version, with the version and the number of Nodes launched from it: three managed node
// groups, one healthy (MIME with a NodeConfig, gzip and base64), one whose newest version forces
// the hostname (a plain base64 script; its older version, which some Nodes still run, is clean),
// one whose NodeConfig gives max pods beyond m5.large's addresses (MIME, gzip and base64); a
// self-managed Auto Scaling group launching from $Latest; and a Karpenter node whose
// EC2NodeClass's template flushes iptables (MIME, base64).
func TestDoctorLaunchTemplates(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin := env.AdminClient()
	env.CreateAWSNode(t, "aws-node-lt", "602401143452.dkr.ecr.us-east-1.amazonaws.com/amazon-k8s-cni:v1.19.2-eksbuild.1", map[string]string{"WARM_ENI_TARGET": "1"})
	cloud := awsfake.New()
	cloud.PageSize = 1 // every list takes several pages
	cloud.Clusters["prod"] = ekstypes.Cluster{Name: strp("prod")}
	now := time.Now()
	node := func(name, instance, nodegroup string, tags map[string]string) {
		labels := map[string]string{"node.kubernetes.io/instance-type": "m5.large"}
		if class, ok := strings.CutPrefix(nodegroup, "karpenter:"); ok {
			labels[LabelEC2NodeClass], labels["karpenter.sh/nodepool"] = class, "default"
		} else if nodegroup != "" {
			labels["eks.amazonaws.com/nodegroup"] = nodegroup
		}
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1a/" + instance}}
		created, err := admin.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = admin.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
		created.Status.Capacity = corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(29, resource.DecimalSI)}
		created.Status.NodeInfo = corev1.NodeSystemInfo{ContainerRuntimeVersion: "containerd://1.7.27", OSImage: "Amazon Linux 2023.7.20250512"}
		if _, err := admin.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		tags["kubernetes.io/cluster/prod"] = "owned"
		cloud.Instances = append(cloud.Instances, ec2Instance(instance, "running", "m5.large", "subnet-a", name, now.Add(-time.Hour), tags))
	}
	launched := func(lt string, v int, more ...string) map[string]string {
		tags := map[string]string{TagLaunchTemplateID: lt, TagLaunchTemplateVersion: fmt.Sprint(v)}
		for i := 0; i+1 < len(more); i += 2 {
			tags[more[i]] = more[i+1]
		}
		return tags
	}
	const (
		ltHealthy, ltHostname, ltMaxPods, ltSelf = "lt-0healthy000001", "lt-0hostname00001", "lt-0maxpods000001", "lt-0selfmanaged01"
		ltKarpenter                              = "lt-0karpenter0001"
	)
	for i := range 2 {
		node(fmt.Sprintf("ip-10-81-1-%d.ec2.internal", 10+i), fmt.Sprintf("i-0lthealthy%06d", i), "ng-healthy", launched(ltHealthy, 4))
	}
	node("ip-10-81-2-10.ec2.internal", "i-0lthostold000001", "ng-hostname", launched(ltHostname, 1))
	// A version EC2 no longer has (EC2 fails the whole call for it), and a tag edited by hand.
	node("ip-10-81-2-30.ec2.internal", "i-0lthostgone00001", "ng-hostname", launched(ltHostname, 9))
	node("ip-10-81-2-31.ec2.internal", "i-0lthostedit00001", "", launched(ltHostname, 0, TagLaunchTemplateVersion, "two"))
	for i := range 2 {
		node(fmt.Sprintf("ip-10-81-2-%d.ec2.internal", 20+i), fmt.Sprintf("i-0lthostname%05d", i), "ng-hostname", launched(ltHostname, 2))
	}
	for i := range 3 {
		node(fmt.Sprintf("ip-10-81-3-%d.ec2.internal", 10+i), fmt.Sprintf("i-0ltmaxpods%06d", i), "ng-maxpods", launched(ltMaxPods, 7))
	}
	node("ip-10-81-4-10.ec2.internal", "i-0ltselfmanaged01", "", launched(ltSelf, 3, TagAutoScalingGroup, "self-managed-workers"))
	// A Karpenter node: its EC2NodeClass's template is known from its instance's tags only.
	node("ip-10-81-5-10.ec2.internal", "i-0ltkarpenter0001", "karpenter:al2023", launched(ltKarpenter, 1, "karpenter.sh/nodepool", "default"))

	mng := func(name, lt, version string) ekstypes.Nodegroup {
		return ekstypes.Nodegroup{ClusterName: strp("prod"), NodegroupName: strp(name), LaunchTemplate: &ekstypes.LaunchTemplateSpecification{Id: strp(lt), Version: strp(version)}}
	}
	cloud.Nodegroups = []ekstypes.Nodegroup{mng("ng-healthy", ltHealthy, "4"), mng("ng-hostname", ltHostname, "2"), mng("ng-maxpods", ltMaxPods, "7")}
	cloud.AutoScalingGroups = []asgtypes.AutoScalingGroup{{AutoScalingGroupName: strp("self-managed-workers"),
		LaunchTemplate: &asgtypes.LaunchTemplateSpecification{LaunchTemplateId: strp(ltSelf), Version: strp("$Latest")}}}
	mime := func(maxPods int) string {
		return awsfake.MIMEUserData(awsfake.MIMEPart{ContentType: "application/node.eks.aws", Body: fmt.Sprintf(nodeConfigMaxPods, maxPods)},
			awsfake.MIMEPart{ContentType: "text/x-shellscript; charset=\"us-ascii\"", Body: "#!/bin/bash\necho ready\n"})
	}
	cloud.LaunchTemplateVersions = []ec2types.LaunchTemplateVersion{
		templateVersion(ltHealthy, 4, awsfake.UserData(mime(29), true)),
		templateVersion(ltHostname, 1, awsfake.UserData("#!/bin/bash\nset -ex\n/etc/eks/bootstrap.sh prod --kubelet-extra-args '--max-pods=29'\n", false)),
		templateVersion(ltHostname, 2, awsfake.UserData(fmt.Sprintf(al2Hostname, 29), false)),
		templateVersion(ltMaxPods, 6, awsfake.UserData(mime(29), true)),
		templateVersion(ltMaxPods, 7, awsfake.UserData(mime(110), true)),
		templateVersion(ltSelf, 3, awsfake.UserData(al2Plain, true)),
		templateVersion(ltKarpenter, 1, awsfake.UserData(awsfake.MIMEUserData(
			awsfake.MIMEPart{ContentType: "text/x-shellscript", Body: "#!/bin/bash\niptables -t nat -F\n"},
			awsfake.MIMEPart{ContentType: "application/node.eks.aws", Body: fmt.Sprintf(nodeConfigMaxPods, 29)}), false)),
	}

	o := Options{AWSNodeName: "aws-node-lt", SkipPodNetworking: true,
		EC2: &EC2Options{Cluster: "prod"}}
	aws := Deps{EC2: cloud, LaunchTemplates: cloud, Nodegroups: allclients.Nodegroups(cloud), AutoScaling: cloud}
	rep, err := runAWS(ctx, env.AdminConfig(), o, aws)
	if err != nil {
		t.Fatal(err)
	}
	templateFindings := func(rep *findings.Report) []string {
		var got []string
		for _, f := range rep.Findings() {
			if f.Section == bootstrap.Section {
				got = append(got, f.Resource+" "+f.Code+":"+f.Severity.String()+" "+f.Message)
			}
		}
		slices.Sort(got)
		return got
	}
	got := templateFindings(rep)
	want := []string{
		"launchtemplate/" + ltHostname + "/9 NK635:skipped skipped: EC2 no longer describes it (ec2:DescribeLaunchTemplateVersions: ",
		"launchtemplate/" + ltKarpenter + "/1 NK632:error 1 iptables flush in the user data; introduced in " + ltKarpenter + " version 1, 1 node",
		"launchtemplate/" + ltHostname + "/2 NK631:warning 1 hostname change in the user data; introduced in " + ltHostname + " version 2, 2 nodes",
		"launchtemplate/" + ltMaxPods + "/7 NK101:error kubelet allows 110 pods but m5.large with secondary IPs gives addresses for 29 (3 ENIs x 9 + 2 host-network): 81 pods would wait in ContainerCreating; max pods 110 from the user data (" +
			ltMaxPods + " version 7 part 1 (application/node.eks.aws) spec.kubelet.config), introduced in " + ltMaxPods + " version 7, 3 nodes",
	}
	if !matchPrefixes(got, want) {
		t.Errorf("launch template findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, f := range rep.Findings() {
		if f.Code == "NK631" && !slices.Contains(f.Evidence, "used by managed node group ng-hostname") {
			t.Errorf("NK631 evidence %q does not name the node group", f.Evidence)
		}
		if f.Code == "NK632" && !slices.Contains(f.Evidence, "used by EC2NodeClass al2023") {
			t.Errorf("NK632 evidence %q does not name the EC2NodeClass", f.Evidence)
		}
	}
	// Checked: the versions in use, the ng-maxpods group's older version 6 being in use by nobody.
	if s := findingstest.Section(rep, bootstrap.Section); s == nil {
		t.Errorf("the report has no %s section", bootstrap.Section)
	} else if s.Checked != 7 {
		t.Errorf("%d template versions checked, want 7 (healthy 4, hostname 1, 2 and 9, maxpods 7, self-managed 3 by $Latest, Karpenter 1)", s.Checked)
	}
	for _, p := range []string{nkaws.PermListNodegroups, nkaws.PermDescribeNodegroup, nkaws.PermDescribeAutoScalingGroups, nkaws.PermDescribeLaunchTemplateVersions} {
		if cloud.Calls(p) == 0 {
			t.Errorf("%s was never called", p)
		}
	}

	// A cluster EKS does not know (Kubernetes run on EC2 by hand): no managed node groups, and
	// the Nodes' instances still name their templates.
	delete(cloud.Clusters, "prod")
	rep, err = runAWS(ctx, env.AdminConfig(), o, aws)
	if err != nil {
		t.Fatal(err)
	}
	if got := templateFindings(rep); !matchPrefixes(got, want) {
		t.Errorf("not an EKS cluster: launch template findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	cloud.Clusters["prod"] = ekstypes.Cluster{Name: strp("prod")}

	// AccessDenied on any of the reads skips the section naming the action.
	for _, p := range []string{nkaws.PermListNodegroups, nkaws.PermDescribeAutoScalingGroups, nkaws.PermDescribeLaunchTemplateVersions} {
		cloud.Deny = map[string]bool{p: true}
		rep, err := runAWS(ctx, env.AdminConfig(), o, aws)
		if err != nil {
			t.Fatal(err)
		}
		var skipped []string
		for _, f := range rep.Findings() {
			if f.Section == bootstrap.Section {
				skipped = append(skipped, f.Code+":"+f.Severity.String()+" "+f.Message)
			}
		}
		if len(skipped) != 1 || !strings.HasPrefix(skipped[0], "NK635:"+findings.Skipped.String()) || !strings.Contains(skipped[0], p) {
			t.Errorf("%s denied: %v", p, skipped)
		}
	}
}
