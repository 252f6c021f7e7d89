package rules

import (
	"slices"
	"strings"
	"testing"

	"github.com/nodekeeper/nodekeeper/internal/test/findingstest"

	"k8s.io/utils/ptr"

	"github.com/nodekeeper/nodekeeper/internal/eni"
)

func TestCheckKubeletConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  KubeletConfig
		pods int
		want []string
	}{
		// Defaults (5 QPS, burst 10, serialized pulls, kubeAPIQPS 50) on a 29-pod m5.large.
		{name: "defaults small node", cfg: KubeletConfig{}, pods: 29, want: []string{"NK201:warning"}},
		// 110 pods: pulls, serialized pulls.
		{name: "defaults dense node", cfg: KubeletConfig{}, pods: 110, want: []string{"NK201:warning", "NK202:info"}},
		// The seed's fix: 50 QPS; the burst still below the density is only informational.
		{name: "seed fix", cfg: KubeletConfig{RegistryPullQPS: ptr.To[int32](50), RegistryBurst: ptr.To[int32](100), SerializeImagePulls: ptr.To(false)}, pods: 110, want: []string{"NK201:info"}},
		{name: "burst covers density", cfg: KubeletConfig{RegistryBurst: ptr.To[int32](200), SerializeImagePulls: ptr.To(false)}, pods: 110, want: nil},
		{name: "no pull limit", cfg: KubeletConfig{RegistryPullQPS: ptr.To[int32](0)}, pods: 29, want: nil},
		// kubeAPIQPS: 5 is the pre-1.27 default, 0 means the client default of 5.
		{name: "old api qps", cfg: KubeletConfig{RegistryPullQPS: ptr.To[int32](0), KubeAPIQPS: ptr.To[int32](5)}, pods: 29, want: []string{"NK203:warning"}},
		{name: "zero api qps", cfg: KubeletConfig{RegistryPullQPS: ptr.To[int32](0), KubeAPIQPS: ptr.To[int32](0)}, pods: 29, want: []string{"NK203:warning"}},
		{name: "eks api qps small node", cfg: KubeletConfig{RegistryPullQPS: ptr.To[int32](0), KubeAPIQPS: ptr.To[int32](10)}, pods: 29, want: nil},
		{name: "eks api qps big node", cfg: KubeletConfig{RegistryPullQPS: ptr.To[int32](0), KubeAPIQPS: ptr.To[int32](10), SerializeImagePulls: ptr.To(false)}, pods: 250, want: []string{"NK203:warning"}},
		// pods <= 0 falls back to the configured maxPods.
		{name: "density from maxPods", cfg: KubeletConfig{MaxPods: ptr.To[int32](8)}, pods: 0, want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := findingstest.Codes(CheckKubeletConfig("node/x", "configz", tc.cfg, tc.pods))
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
	f := CheckKubeletConfig("node/x", "configz", KubeletConfig{}, 110)[0]
	if !strings.Contains(f.Message, "registryPullQPS 5, registryBurst 10") || !strings.Contains(f.Message, "about 20 s") {
		t.Errorf("message: %s", f.Message)
	}
}

func TestParseConfigz(t *testing.T) {
	c, err := ParseConfigz([]byte(`{"kubeletconfig":{"registryPullQPS":5,"registryBurst":10,"maxPods":110,"serializeImagePulls":true,"kubeAPIQPS":50,"unknownField":1}}`))
	if err != nil || *c.RegistryPullQPS != 5 || c.EffectiveMaxPods() != 110 || !*c.SerializeImagePulls {
		t.Fatalf("%+v %v", c, err)
	}
	for _, bad := range []string{`{}`, `not json`, `{"kubeletconfig":{"maxPods":"many"}}`} {
		if _, err := ParseConfigz([]byte(bad)); err == nil {
			t.Errorf("ParseConfigz(%s) succeeded", bad)
		}
	}
	if got := findingstest.Codes(CheckMaxPodsAgreement("node/x", KubeletConfig{MaxPods: ptr.To[int32](110)}, 29)); !slices.Equal(got, []string{"NK204:info"}) {
		t.Errorf("mismatch: %v", got)
	}
	if got := CheckMaxPodsAgreement("node/x", KubeletConfig{MaxPods: ptr.To[int32](29)}, 29); got != nil {
		t.Errorf("agreement reported: %v", got)
	}
}

func TestCheckCNISettings(t *testing.T) {
	base := map[string]string{"CLUSTER_ENDPOINT": "https://x.eks.amazonaws.com"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	tests := []struct {
		name    string
		env     map[string]string
		version *eni.Version
		unread  []string
		want    []string
	}{
		{name: "managed add-on defaults", env: with("WARM_ENI_TARGET", "1"), want: nil},
		{name: "seed: no CLUSTER_ENDPOINT", env: map[string]string{"WARM_ENI_TARGET": "1"}, want: []string{"NK401:info"}},
		// The combination that makes aws-node exit, in its variants.
		{name: "pd without targets", env: with("ENABLE_PREFIX_DELEGATION", "true"), want: []string{"NK402:error"}},
		{name: "pd with zero prefix target", env: with("ENABLE_PREFIX_DELEGATION", "true", "WARM_PREFIX_TARGET", "0"), want: []string{"NK402:error"}},
		{name: "pd with negative targets", env: with("ENABLE_PREFIX_DELEGATION", "true", "WARM_IP_TARGET", "-1"), want: []string{"NK402:error", "NK406:warning"}},
		{name: "pd with prefix target", env: with("ENABLE_PREFIX_DELEGATION", "true", "WARM_PREFIX_TARGET", "1"), want: nil},
		{name: "pd with min ip", env: with("ENABLE_PREFIX_DELEGATION", "true", "MINIMUM_IP_TARGET", "20"), want: nil},
		{name: "pd overridden prefix target", env: with("ENABLE_PREFIX_DELEGATION", "true", "WARM_PREFIX_TARGET", "1", "WARM_IP_TARGET", "5"), want: []string{"NK403:info"}},
		{name: "stock prefix target without pd", env: with("WARM_PREFIX_TARGET", "1"), want: nil},
		{name: "prefix target without pd", env: with("WARM_PREFIX_TARGET", "4"), want: []string{"NK403:info"}},
		{name: "eni target ignored", env: with("WARM_ENI_TARGET", "1", "MINIMUM_IP_TARGET", "10", "WARM_IP_TARGET", "5"), want: []string{"NK403:info"}},
		{name: "no warm pool", env: with("WARM_ENI_TARGET", "0"), want: []string{"NK404:warning"}},
		{name: "small warm ip", env: with("WARM_IP_TARGET", "1"), want: []string{"NK405:warning"}},
		{name: "small warm ip with minimum", env: with("WARM_IP_TARGET", "1", "MINIMUM_IP_TARGET", "30"), want: nil},
		{name: "invalid ints and bools", env: with("WARM_ENI_TARGET", "one", "MAX_ENI", "x", "AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG", "yes"), want: []string{"NK406:warning", "NK406:warning", "NK406:warning"}},
		{name: "cooldown invalid", env: with("IP_COOLDOWN_PERIOD", "30s"), want: []string{"NK407:error"}},
		{name: "cooldown negative", env: with("IP_COOLDOWN_PERIOD", "-5"), want: []string{"NK407:error"}},
		{name: "cooldown zero", env: with("IP_COOLDOWN_PERIOD", "0"), want: []string{"NK408:warning"}},
		{name: "cooldown fine", env: with("IP_COOLDOWN_PERIOD", "10"), want: nil},
		{name: "ancient cni", env: map[string]string{}, version: findingstest.Version(t, "1.11.4"), want: []string{"NK401:info", "NK410:error"}},
		{name: "old cni", env: base, version: findingstest.Version(t, "1.16.0"), want: []string{"NK410:warning"}},
		{name: "current cni", env: base, version: findingstest.Version(t, "1.20.1"), want: nil},
		{name: "unread", env: base, unread: []string{"WARM_IP_TARGET"}, want: []string{"NK412:info"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := findingstest.Codes(CheckCNISettings(CNIInput{Resource: "daemonset/kube-system/aws-node", Env: tc.env, Version: tc.version, Unread: tc.unread}))
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCheckPodCapacity(t *testing.T) {
	mode := func(kv ...string) CNIMode {
		env := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			env[kv[i]] = kv[i+1]
		}
		return CNIMode{Settings: eni.ParseSettings(env)}
	}
	tests := []struct {
		name    string
		node    NodeCapacity
		mode    CNIMode
		want    []string
		limit   int
		evalued bool
	}{
		{name: "m5.large default fits", node: NodeCapacity{InstanceType: "m5.large", CapacityPods: 29, VCPUs: 2}, mode: mode(), limit: 29, evalued: true},
		// The seed: custom networking with max pods left at 110 (use-max-pods default) or at 29.
		{name: "seed custom networking 110", node: NodeCapacity{InstanceType: "m5.large", CapacityPods: 110, VCPUs: 2}, mode: mode("AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG", "true"), want: []string{"NK101:error"}, limit: 20, evalued: true},
		{name: "custom networking 29", node: NodeCapacity{InstanceType: "m5.large", CapacityPods: 29, VCPUs: 2}, mode: mode("AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG", "true"), want: []string{"NK101:error"}, limit: 20, evalued: true},
		{name: "custom networking lowered", node: NodeCapacity{InstanceType: "m5.large", CapacityPods: 20, VCPUs: 2}, mode: mode("AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG", "true"), limit: 20, evalued: true},
		// Prefix delegation with the AMI's 29 left in place: allowed but below the calculator's 110.
		{name: "pd not raised", node: NodeCapacity{InstanceType: "m5.large", CapacityPods: 29, VCPUs: 2}, mode: mode("ENABLE_PREFIX_DELEGATION", "true"), want: []string{"NK102:info"}, limit: 434, evalued: true},
		{name: "pd raised", node: NodeCapacity{InstanceType: "m5.large", CapacityPods: 110, VCPUs: 2}, mode: mode("ENABLE_PREFIX_DELEGATION", "true"), limit: 434, evalued: true},
		// vCPUs unknown: no recommendation, still no false alarm.
		{name: "pd no vcpus", node: NodeCapacity{InstanceType: "m5.large", CapacityPods: 29}, mode: mode("ENABLE_PREFIX_DELEGATION", "true"), limit: 434, evalued: true},
		{name: "pd on xen", node: NodeCapacity{InstanceType: "m4.large", CapacityPods: 20, VCPUs: 2}, mode: mode("ENABLE_PREFIX_DELEGATION", "true"), want: []string{"NK104:info"}, limit: 20, evalued: true},
		// Security groups for pods: the trunk ENI carries no pod addresses.
		{name: "pod eni trunk", node: NodeCapacity{InstanceType: "m5.large", CapacityPods: 29, VCPUs: 2}, mode: mode("ENABLE_POD_ENI", "true"), want: []string{"NK101:error"}, limit: 20, evalued: true},
		{name: "max eni", node: NodeCapacity{InstanceType: "m5.large", CapacityPods: 29, VCPUs: 2}, mode: mode("MAX_ENI", "1"), want: []string{"NK101:error"}, limit: 11, evalued: true},
		{name: "reserved", node: NodeCapacity{InstanceType: "m5.large", CapacityPods: 29, VCPUs: 2}, mode: CNIMode{ReservedENIs: 1}, want: []string{"NK101:error"}, limit: 20, evalued: true},
		{name: "no type", node: NodeCapacity{CapacityPods: 29}, mode: mode(), want: []string{"NK103:info"}},
		{name: "unknown type", node: NodeCapacity{InstanceType: "z9.mega", CapacityPods: 29}, mode: mode(), want: []string{"NK103:info"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.node.Resource = "node/x"
			r := CheckPodCapacity(tc.node, tc.mode)
			if got := findingstest.Codes(r.Findings); !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v (%+v)", got, tc.want, r.Findings)
			}
			if r.IPLimit != tc.limit || r.Evaluated != tc.evalued {
				t.Fatalf("limit %d evaluated %v, want %d %v", r.IPLimit, r.Evaluated, tc.limit, tc.evalued)
			}
		})
	}
	r := CheckPodCapacity(NodeCapacity{Resource: "node/x", InstanceType: "m5.large", CapacityPods: 29}, mode("AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG", "true"))
	if len(r.Findings[0].Evidence) != 1 || r.WithoutCustomNetworking != 29 {
		t.Errorf("custom networking evidence missing: %+v", r)
	}
	// A t3.micro under custom networking keeps one of its two ENIs for pods: the count reads right.
	r = CheckPodCapacity(NodeCapacity{Resource: "node/y", InstanceType: "t3.micro", CapacityPods: 11}, mode("AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG", "true"))
	if len(r.Findings) != 1 || !strings.Contains(r.Findings[0].Message, "(1 ENI x ") {
		t.Errorf("one ENI for pods: %+v", r.Findings)
	}
}
