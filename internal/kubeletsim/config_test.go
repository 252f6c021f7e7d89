package kubeletsim

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestConfigDefaults(t *testing.T) {
	c, err := Config{Name: "ip-10-0-1-7.us-west-2.compute.internal"}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		field     string
		got, want any
	}{
		{"Mode", c.Mode, Modern},
		{"LeaseDurationSeconds", c.LeaseDurationSeconds, int32(40)},
		{"RenewInterval", c.RenewInterval, 10 * time.Second},
		{"NodeStatusUpdateFrequency", c.NodeStatusUpdateFrequency, 10 * time.Second},
		{"NodeStatusReportFrequency", c.NodeStatusReportFrequency, 5 * time.Minute},
		{"InstanceType", c.InstanceType, "m5.large"},
		{"MaxPods", c.MaxPods, int32(29)},
		{"InternalIP", c.InternalIP, "10.0.1.7"},
		{"KubeletPort", c.KubeletPort, int32(10250)},
		{"KubeletVersion", c.KubeletVersion, "v1.29.0-eks-5e0fdde"},
		{"Images", c.Images, 50},
		{"heartbeatTimeout", c.heartbeatTimeout(), 10 * time.Second},
		{"userAgent", c.userAgent(), "kubelet/v1.29.0 (linux/amd64) kubernetes/3034fd4"},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %v, want %v", ch.field, ch.got, ch.want)
		}
	}
	legacy, err := Config{Name: "n1", Mode: Legacy, LeaseDurationSeconds: 8, NodeStatusUpdateFrequency: time.Minute}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if legacy.KubeletVersion != LegacyKubeletVersion || legacy.RenewInterval != 2*time.Second || legacy.heartbeatTimeout() != 8*time.Second {
		t.Errorf("legacy defaults: version %s renew %s timeout %s", legacy.KubeletVersion, legacy.RenewInterval, legacy.heartbeatTimeout())
	}
}

func TestConfigRejectsBadInput(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no name", Config{}, "Name is required"},
		{"bad name", Config{Name: "Not_A_Node"}, `name "Not_A_Node"`},
		{"bad mode", Config{Name: "n", Mode: "ancient"}, `unknown mode "ancient"`},
		{"unknown instance", Config{Name: "n", InstanceType: "z9.huge"}, `unknown instance type "z9.huge"`},
		{"bad zone", Config{Name: "n", Zone: "moon-1"}, `zone "moon-1"`},
		{"bad ip", Config{Name: "n", InternalIP: "10.0.0"}, `InternalIP "10.0.0"`},
		{"ipv6", Config{Name: "n", InternalIP: "fd00::1"}, "not an IPv4"},
		{"negative duration", Config{Name: "n", LeaseDurationSeconds: -1}, "LeaseDurationSeconds must be positive"},
		{"port", Config{Name: "n", KubeletPort: 70000}, "KubeletPort 70000 out of range"},
		{"version", Config{Name: "n", KubeletVersion: "1.29"}, "must start with v"},
		{"max pods", Config{Name: "n", MaxPods: -3}, "MaxPods must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.cfg.withDefaults()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestMaxPods(t *testing.T) {
	tests := []struct {
		instance string
		want     int32
	}{
		{"t3.medium", 17},
		{"m5.large", 29},
		{"m5.xlarge", 58},
		{"m5.4xlarge", 234},
		{"m5.24xlarge", 737},
	}
	for _, tt := range tests {
		got, err := MaxPods(tt.instance)
		if err != nil || got != tt.want {
			t.Errorf("MaxPods(%s) = %d, %v; want %d", tt.instance, got, err, tt.want)
		}
	}
	if _, err := MaxPods("x1.nope"); err == nil || !strings.Contains(err.Error(), "m5.large") {
		t.Errorf("unknown type: want an error listing known types, got %v", err)
	}
}

func TestNamesAndAddresses(t *testing.T) {
	tests := []struct {
		in, ip, dns string
	}{
		{"ip-10-29-79-205.ap-northeast-2.compute.internal", "10.29.79.205", "ip-10-29-79-205.ap-northeast-2.compute.internal"},
		{"ip-10-0-1-1.ec2.internal", "10.0.1.1", "ip-10-0-1-1.ec2.internal"},
		{"ip-10-0-1-300.ec2.internal", "", "ip-10-0-1-300.ec2.internal"}, // not an address: derived IP
		{"worker-7", "", ""},
	}
	for _, tt := range tests {
		c, err := Config{Name: tt.in, Zone: "us-west-2b"}.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		if tt.ip != "" && c.InternalIP != tt.ip {
			t.Errorf("%s: InternalIP %s, want %s", tt.in, c.InternalIP, tt.ip)
		}
		dns := tt.dns
		if dns == "" {
			dns = "ip-" + strings.ReplaceAll(c.InternalIP, ".", "-") + ".us-west-2.compute.internal"
		}
		if got := c.internalDNS(); got != dns {
			t.Errorf("%s: internal DNS %s, want %s", tt.in, got, dns)
		}
	}
	if got := NodeName(0); got != "ip-10-0-0-1.us-west-2.compute.internal" {
		t.Errorf("NodeName(0) = %s", got)
	}
	seen := map[string]bool{}
	for i := 0; i < 70000; i++ {
		n := NodeName(i)
		if seen[n] {
			t.Fatalf("NodeName(%d) = %s repeats", i, n)
		}
		seen[n] = true
	}
	for zone, want := range map[string]string{"us-west-2a": "usw2-az1", "eu-central-1c": "euc1-az3", "us-gov-west-1b": "usgw1-az2"} {
		if got := zoneID(zone); got != want {
			t.Errorf("zoneID(%s) = %s, want %s", zone, got, want)
		}
	}
}

// TestNodeLooksLikeEKS checks the registered Node against what real EKS nodes carry, including
// the 10–20 KB size that makes node status writes (and not lease renewals) expensive.
func TestNodeLooksLikeEKS(t *testing.T) {
	for _, instance := range []string{"m5.large", "m7g.large", "m5.4xlarge"} {
		t.Run(instance, func(t *testing.T) {
			c, err := Config{Name: "ip-10-0-3-4.us-west-2.compute.internal", InstanceType: instance, Zone: "us-west-2c"}.withDefaults()
			if err != nil {
				t.Fatal(err)
			}
			n := c.newNode(time.Now())
			wantPods, _ := MaxPods(instance)
			arch := instanceTypes[instance].arch
			for k, v := range map[string]string{
				"node.kubernetes.io/instance-type": instance,
				"topology.kubernetes.io/zone":      "us-west-2c",
				"topology.kubernetes.io/region":    "us-west-2",
				"kubernetes.io/hostname":           c.Name,
				"kubernetes.io/arch":               arch,
				"kubernetes.io/os":                 "linux",
				"eks.amazonaws.com/nodegroup":      DefaultNodeGroup,
			} {
				if n.Labels[k] != v {
					t.Errorf("label %s = %q, want %q", k, n.Labels[k], v)
				}
			}
			if got := n.Status.Capacity.Pods().Value(); got != int64(wantPods) {
				t.Errorf("capacity pods %d, want %d", got, wantPods)
			}
			if n.Status.Allocatable.Cpu().Cmp(*n.Status.Capacity.Cpu()) >= 0 || n.Status.Allocatable.Memory().Cmp(*n.Status.Capacity.Memory()) >= 0 {
				t.Errorf("allocatable %v not below capacity %v", n.Status.Allocatable, n.Status.Capacity)
			}
			if !strings.HasPrefix(n.Spec.ProviderID, "aws:///us-west-2c/i-0") || len(n.Spec.ProviderID) != len("aws:///us-west-2c/i-0")+16 {
				t.Errorf("providerID %q", n.Spec.ProviderID)
			}
			if n.Status.DaemonEndpoints.KubeletEndpoint.Port != 10250 {
				t.Errorf("kubelet port %d", n.Status.DaemonEndpoints.KubeletEndpoint.Port)
			}
			types := map[corev1.NodeAddressType]string{}
			for _, a := range n.Status.Addresses {
				types[a.Type] = a.Address
			}
			if types[corev1.NodeInternalIP] != "10.0.3.4" || types[corev1.NodeHostName] != c.Name || types[corev1.NodeInternalDNS] != c.Name {
				t.Errorf("addresses %v", n.Status.Addresses)
			}
			if n.Status.NodeInfo.KubeletVersion != ModernKubeletVersion || n.Status.NodeInfo.Architecture != arch {
				t.Errorf("nodeInfo %+v", n.Status.NodeInfo)
			}
			ready := false
			for _, cond := range n.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue && !cond.LastHeartbeatTime.IsZero() {
					ready = true
				}
			}
			if !ready || len(n.Status.Conditions) != 4 {
				t.Errorf("conditions %v", n.Status.Conditions)
			}
			if len(n.Status.Images) != 50 {
				t.Errorf("%d images, want the kubelet's 50", len(n.Status.Images))
			}
			data, err := json.Marshal(n)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("node JSON: %d bytes", len(data))
			if len(data) < 10_000 || len(data) > 20_000 {
				t.Errorf("node is %d bytes of JSON, want 10–20 KB like a real EKS node", len(data))
			}
			// Stable per name: a re-registration looks like the same machine.
			again := c.newNode(time.Now())
			if again.Spec.ProviderID != n.Spec.ProviderID || again.Status.Images[20].Names[0] != n.Status.Images[20].Names[0] {
				t.Errorf("node is not stable per name")
			}
		})
	}
}

func TestUpdateConditions(t *testing.T) {
	t0 := time.Date(2024, 4, 5, 6, 0, 0, 0, time.UTC)
	t1 := t0.Add(5 * time.Minute)
	healthy := readyConditions(t0)
	unknown := readyConditions(t0)
	unknown[3].Status, unknown[3].Reason, unknown[3].Message = corev1.ConditionUnknown, "NodeStatusUnknown", "Kubelet stopped posting node status."

	tests := []struct {
		name           string
		current        []corev1.NodeCondition
		wantChanged    bool
		wantTransition time.Time // of Ready
	}{
		{"unchanged keeps transition time", healthy, false, t0},
		{"set Unknown by the lifecycle controller", unknown, true, t1},
		{"no conditions yet", nil, true, t1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, changed := updateConditions(tt.current, t1)
			if changed != tt.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tt.wantChanged)
			}
			ready := got[3]
			if ready.Type != corev1.NodeReady || ready.Status != corev1.ConditionTrue {
				t.Fatalf("ready condition %+v", ready)
			}
			if !ready.LastTransitionTime.Time.Equal(tt.wantTransition) || !ready.LastHeartbeatTime.Time.Equal(t1) {
				t.Errorf("transition %v heartbeat %v", ready.LastTransitionTime, ready.LastHeartbeatTime)
			}
		})
	}
}

func TestStatusPatchOnlyTouchesConditions(t *testing.T) {
	c, _ := Config{Name: "n1"}.withDefaults()
	old := c.newNode(time.Date(2024, 4, 5, 6, 0, 0, 0, time.UTC))
	old.UID, old.ResourceVersion = "u1", "42"
	updated := old.DeepCopy()
	updated.Status.Conditions, _ = updateConditions(old.Status.Conditions, old.Status.Conditions[0].LastHeartbeatTime.Add(time.Minute))
	updated.Spec.Unschedulable = true // must not leak into a status patch
	patch, err := statusPatch(old, updated)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(patch, &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m["spec"]; ok {
		t.Errorf("status patch touches spec: %s", patch)
	}
	status, _ := m["status"].(map[string]any)
	if len(status) == 0 || status["conditions"] == nil || status["images"] != nil {
		t.Errorf("patch should carry conditions only: %s", patch)
	}
	if len(patch) > 2000 {
		t.Errorf("status patch is %d bytes; it should be small", len(patch))
	}
}
