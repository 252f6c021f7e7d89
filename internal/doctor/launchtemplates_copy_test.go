package doctor

import (
	"context"
	"fmt"
	"github.com/nodekeeper/nodekeeper/internal/aws/allclients"
	"slices"
	"strings"
	"testing"
	"time"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"

	"github.com/nodekeeper/nodekeeper/internal/bootstrap"
	"github.com/nodekeeper/nodekeeper/internal/test/awsfake"
)

// TestLaunchTemplateEKSCopy: a managed node group runs EKS's copy of the user's launch template,
// as the Amazon EKS User Guide says ("The Amazon EKS API creates this launch template either by
// copying one you provide or by creating one automatically with default values in your
// account", https://docs.aws.amazon.com/eks/latest/userguide/launch-templates.html): the
// instances' aws:ec2launchtemplate:* tags name the copy, DescribeNodegroup the user's template.
// The hostname override the user wrote is reported once, under the user's template and version,
// with the copy named beside it and the group's Nodes counted there; never a second time on the
// copy, nor with "0 nodes" on the user's.
func TestLaunchTemplateEKSCopy(t *testing.T) {
	const userLT, copyLT = "lt-0user00000000001", "lt-0eks000000000001"
	cloud := awsfake.New()
	cloud.Clusters["prod"] = ekstypes.Cluster{Name: strp("prod")}
	cloud.LaunchTemplateVersions = []ec2types.LaunchTemplateVersion{
		templateVersion(userLT, 1, awsfake.UserData(al2Plain, false)),
		templateVersion(userLT, 2, awsfake.UserData(fmt.Sprintf(al2Hostname, 29), false)),
	}
	tags := cloud.AddManagedNodegroup("prod", "ng-custom", userLT, 2, copyLT)
	f := &Facts{EC2: EC2Facts{ByID: map[string]ec2types.Instance{}}}
	for i := range 3 {
		name, id := fmt.Sprintf("ip-10-0-0-%d.ec2.internal", i), fmt.Sprintf("i-0copy%012d", i)
		n := unitNode(name, "m5.large", 29, map[string]string{"eks.amazonaws.com/nodegroup": "ng-custom"})
		n.Spec.ProviderID = "aws:///us-east-1a/" + id
		n.Status.NodeInfo.ContainerRuntimeVersion = "containerd://1.7.27"
		f.Nodes = append(f.Nodes, n)
		f.EC2.ByID[id] = ec2Instance(id, "running", "m5.large", "subnet-a", name, time.Now(), tags)
	}
	g := &gatherer{o: Options{EC2: &EC2Options{Cluster: "prod"}}, d: Deps{EC2: cloud, LaunchTemplates: cloud, Nodegroups: allclients.Nodegroups(cloud), AutoScaling: cloud}, f: f}
	if err := g.launchTemplates(context.Background()); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, x := range (launchTemplateCheck{}).Run(f).Findings {
		if x.Section == bootstrap.Section {
			got = append(got, x.Resource+" "+x.Code+" "+x.Message)
		}
	}
	want := []string{"launchtemplate/" + userLT + "/2 NK631 1 hostname change in the user data; introduced in " + userLT +
		" version 2 (launched as EKS's copy " + copyLT + " version 1), 3 nodes"}
	if !slices.Equal(got, want) {
		t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(f.LaunchTemplates) != 1 || f.LaunchTemplates[0].ID != userLT {
		t.Errorf("versions judged: %+v, want only the user's %s version 2 (the copy is not judged on its own)", f.LaunchTemplates, userLT)
	}
}
