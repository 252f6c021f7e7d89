package rules

import (
	"strings"
	"testing"

	"github.com/nodekeeper/nodekeeper/internal/test/textcheck"
)

func TestDetectNodeOS(t *testing.T) {
	for _, tc := range []struct {
		image string
		want  NodeOS
	}{
		{"Amazon Linux 2", OSAmazonLinux2},
		{"Amazon Linux 2023.5.20240701", OSAmazonLinux2023},
		{"Amazon Linux 2023", OSAmazonLinux2023},
		{"Bottlerocket OS 1.20.0 (aws-k8s-1.29)", OSBottlerocket},
		{"Ubuntu 22.04.4 LTS", OSUbuntu},
		{"Windows Server 2019 Datacenter", OSWindows},
		{"Amazon Linux 20", OSUnknown},
		{"", OSUnknown},
		{"Debian GNU/Linux 12 (bookworm)", OSUnknown},
	} {
		if got := DetectNodeOS(tc.image); got != tc.want {
			t.Errorf("DetectNodeOS(%q) = %q, want %q", tc.image, got, tc.want)
		}
	}
}

func TestDetectProvisioner(t *testing.T) {
	for _, tc := range []struct {
		labels map[string]string
		want   Provisioner
	}{
		{map[string]string{"karpenter.sh/nodepool": "default"}, ProvisionerKarpenter},
		{map[string]string{"karpenter.sh/provisioner-name": "default"}, ProvisionerKarpenter},
		{map[string]string{"eks.amazonaws.com/nodegroup": "ng-1", "alpha.eksctl.io/nodegroup-name": "ng-1"}, ProvisionerManagedNodeGroup},
		{map[string]string{"alpha.eksctl.io/nodegroup-name": "ng-1"}, ProvisionerSelfManaged},
		{map[string]string{"karpenter.sh/nodepool": "p", "eks.amazonaws.com/nodegroup": "ng"}, ProvisionerKarpenter},
		{nil, ProvisionerUnknown},
	} {
		if got := DetectProvisioner(tc.labels); got != tc.want {
			t.Errorf("DetectProvisioner(%v) = %q, want %q", tc.labels, got, tc.want)
		}
	}
}

func TestMaxPodsFix(t *testing.T) {
	for _, tc := range []struct {
		name    string
		os      NodeOS
		prov    Provisioner
		custom  bool
		want    []string
		wantNot []string
	}{
		{"al2 self-managed", OSAmazonLinux2, ProvisionerUnknown, true,
			[]string{"--use-max-pods false --kubelet-extra-args '--max-pods=29'", "replace the nodes"},
			[]string{"nodeadm", "Bottlerocket", "Karpenter", "compute it"}},
		{"al2023 custom networking", OSAmazonLinux2023, ProvisionerUnknown, true,
			[]string{"NodeConfig (apiVersion: node.eks.aws/v1alpha1) with spec.kubelet.config.maxPods: 29", "ignores custom networking"},
			[]string{"bootstrap.sh", "Bottlerocket"}},
		{"al2023 no custom networking", OSAmazonLinux2023, ProvisionerUnknown, false,
			[]string{"spec.kubelet.config.maxPods: 29"}, []string{"ignores custom networking"}},
		{"bottlerocket", OSBottlerocket, ProvisionerSelfManaged, false,
			[]string{"settings.kubernetes.max-pods = 29"}, []string{"bootstrap.sh", "nodeadm"}},
		{"karpenter custom networking", OSAmazonLinux2023, ProvisionerKarpenter, true,
			[]string{"EC2NodeClass", "spec.kubelet.maxPods: 29", "reservedENIs to 1", "RESERVED_ENIS"},
			[]string{"bootstrap.sh", "nodeadm"}},
		{"karpenter no custom networking", OSBottlerocket, ProvisionerKarpenter, false,
			[]string{"spec.kubelet.maxPods: 29"}, []string{"reservedENIs"}},
		{"managed node group al2", OSAmazonLinux2, ProvisionerManagedNodeGroup, true,
			[]string{"launch template with the AMI ID", "--max-pods=29", "new launch template version"},
			[]string{"nodeadm", "Karpenter"}},
		{"managed node group unknown os", OSUnknown, ProvisionerManagedNodeGroup, true,
			[]string{"launch template", "bootstrap.sh", "nodeadm", "settings.kubernetes.max-pods = 29"}, nil},
		{"unknown everything lists all", OSUnknown, ProvisionerUnknown, true,
			[]string{"bootstrap.sh", "spec.kubelet.config.maxPods: 29", "settings.kubernetes.max-pods = 29", "EC2NodeClass", "launch template"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := MaxPodsFix(tc.os, tc.prov, 29, tc.custom)
			if strings.Contains(got, "\n") {
				t.Errorf("fix has a newline: %q", got)
			}
			textcheck.Contains(t, "fix", got, tc.want, tc.wantNot)
		})
	}
}
