package doctor

import (
	"slices"
	"strings"
	"testing"

	asgtypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodekeeper/nodekeeper/internal/rules"
	"github.com/nodekeeper/nodekeeper/internal/test/awsfake"
)

// TestCheckTemplateVersion: each kind of user data a launch template version holds gives its
// findings once, naming the version and its node count, with the severity the Nodes justify.
func TestCheckTemplateVersion(t *testing.T) {
	containerd := unitNode("a", "m5.large", 29, nil)
	containerd.Status.NodeInfo.ContainerRuntimeVersion = "containerd://1.7.27"
	unknownRuntime := unitNode("b", "m5.large", 29, nil)
	version := func(userData *string) TemplateVersion {
		return TemplateVersion{ID: "lt-1", Version: 3, Users: []string{"managed node group ng"}, Data: &ec2types.ResponseLaunchTemplateData{UserData: userData}}
	}
	str := func(s string) *string { return &s }
	mode := &rules.CNIMode{}
	for _, tc := range []struct {
		name  string
		v     TemplateVersion
		nodes []corev1.Node
		mode  *rules.CNIMode
		want  []string // code:severity message prefix
	}{
		{"no user data", version(nil), []corev1.Node{containerd}, mode, nil},
		{"a clean script", version(awsfake.UserData("#!/bin/bash\n/etc/eks/bootstrap.sh prod\n", true)), []corev1.Node{containerd}, mode, nil},
		{"flush and docker on containerd", version(awsfake.UserData("#!/bin/bash\niptables -F\niptables -t nat -F\nsystemctl restart docker\n", false)), []corev1.Node{containerd}, mode, []string{
			"NK632:error 2 iptables flushes in the user data; introduced in lt-1 version 3, 1 node",
			"NK633:warning 1 Docker service command in the user data while containerd is the runtime (node/a containerd://1.7.27); introduced in lt-1 version 3, 1 node",
		}},
		{"docker with the runtime unknown is info", version(awsfake.UserData("#!/bin/bash\nservice docker start\n", false)), []corev1.Node{unknownRuntime}, mode, []string{
			"NK633:info 1 Docker service command in the user data; none of its Nodes says which runtime it runs; introduced in lt-1 version 3, 1 node",
		}},
		{"not user data", version(str("aGVsbG8K")), nil, mode, []string{
			"NK635:warning not user data: lt-1 version 3 user data (decoded from base64) is nothing cloud-init or nodeadm runs",
		}},
		{"a MIME part without a boundary", version(awsfake.UserData("MIME-Version: 1.0\nContent-Type: multipart/mixed\n\nx\n", true)), nil, mode, []string{
			"NK635:warning lt-1 version 3: multipart/mixed without a boundary; introduced in lt-1 version 3, 0 nodes",
		}},
		{"max pods above the addresses, mode unknown", version(awsfake.UserData("#!/bin/bash\n/etc/eks/bootstrap.sh prod --kubelet-extra-args '--max-pods=110'\n", false)), []corev1.Node{containerd}, nil, nil},
		{"max pods within the addresses", version(awsfake.UserData("#!/bin/bash\n/etc/eks/bootstrap.sh prod --kubelet-extra-args '--max-pods=29'\n", false)), []corev1.Node{containerd}, mode, nil},
		{"max pods above the addresses", version(awsfake.UserData("#!/bin/bash\n/etc/eks/bootstrap.sh prod --kubelet-extra-args '--max-pods=110'\n", false)), []corev1.Node{containerd}, mode, []string{
			"NK101:error kubelet allows 110 pods but m5.large with secondary IPs gives addresses for 29",
		}},
		{"a version EC2 no longer has", TemplateVersion{ID: "lt-1", Version: 3, Err: "InvalidLaunchTemplateId.VersionNotFound"}, []corev1.Node{containerd}, mode, []string{
			"NK635:skipped skipped: EC2 no longer describes it (InvalidLaunchTemplateId.VersionNotFound); what it held still runs on its 1 node",
		}},
		{"oversized user data", version(str(strings.Repeat("A", maxUserDataBase64+4))), nil, mode, []string{
			"NK635:warning 1398108 bytes of base64 user data, more than 1398104",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var nodes []*corev1.Node
			for i := range tc.nodes {
				nodes = append(nodes, &tc.nodes[i])
			}
			fs := CheckTemplateVersion(tc.v, nodes, tc.mode, nil)
			if len(fs) != len(tc.want) {
				t.Fatalf("%d findings, want %d: %+v", len(fs), len(tc.want), fs)
			}
			for i, f := range fs {
				got := f.Code + ":" + f.Severity.String() + " " + f.Message
				if !strings.HasPrefix(got, tc.want[i]) {
					t.Errorf("finding %d: %s\nwant prefix %s", i, got, tc.want[i])
				}
				if f.Resource != "launchtemplate/lt-1/3" {
					t.Errorf("resource %s", f.Resource)
				}
				if f.Severity.String() != "skipped" && !slices.Contains(f.Evidence, "used by managed node group ng") {
					t.Errorf("evidence %q does not name the group", f.Evidence)
				}
			}
		})
	}
}

// TestASGTemplate: the template an Auto Scaling group launches from, of its mixed instances
// policy when it has one, $Default when it names no version, and none by name or for a launch
// configuration; the answer itself is left as AWS gave it.
func TestASGTemplate(t *testing.T) {
	spec := func(id, version string) *asgtypes.LaunchTemplateSpecification {
		s := &asgtypes.LaunchTemplateSpecification{}
		if id != "" {
			s.LaunchTemplateId = &id
		} else {
			s.LaunchTemplateName = strp("by-name")
		}
		if version != "" {
			s.Version = &version
		}
		return s
	}
	mixed := func(s *asgtypes.LaunchTemplateSpecification) *asgtypes.MixedInstancesPolicy {
		return &asgtypes.MixedInstancesPolicy{LaunchTemplate: &asgtypes.LaunchTemplate{LaunchTemplateSpecification: s}}
	}
	for _, tc := range []struct {
		name string
		g    asgtypes.AutoScalingGroup
		want string
	}{
		{"launch template", asgtypes.AutoScalingGroup{LaunchTemplate: spec("lt-1", "4")}, "lt-1 4"},
		{"mixed instances policy", asgtypes.AutoScalingGroup{MixedInstancesPolicy: mixed(spec("lt-2", "$Latest"))}, "lt-2 $Latest"},
		{"no version", asgtypes.AutoScalingGroup{LaunchTemplate: spec("lt-3", "")}, "lt-3 $Default"},
		{"by name only", asgtypes.AutoScalingGroup{LaunchTemplate: spec("", "1")}, ""},
		{"launch configuration", asgtypes.AutoScalingGroup{LaunchConfigurationName: strp("lc")}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if s := asgTemplate(tc.g); s != nil {
				got = *s.LaunchTemplateId + " " + *s.Version
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			if tc.g.LaunchTemplate != nil && tc.g.LaunchTemplate.LaunchTemplateId != nil && tc.want == "lt-3 $Default" && tc.g.LaunchTemplate.Version != nil {
				t.Errorf("the group's own spec was changed")
			}
		})
	}
}
