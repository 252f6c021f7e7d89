package rules

import (
	"fmt"
	"strings"

	"github.com/nodekeeper/nodekeeper/internal/eni"
	"github.com/nodekeeper/nodekeeper/internal/findings"
)

// CNI versions the checks compare against.
var (
	// ClusterEndpointMinVersion is the first VPC CNI release that reads CLUSTER_ENDPOINT.
	ClusterEndpointMinVersion = eni.Version{Major: 1, Minor: 12, Patch: 1}
	// DefaultMinCNIVersion is the oldest release doctor accepts without a warning (override with
	// --min-cni-version). Older releases lack fixes for the scale problems these checks are about.
	DefaultMinCNIVersion = eni.Version{Major: 1, Minor: 19, Patch: 0}
)

// warmIPLow is the WARM_IP_TARGET below which, without MINIMUM_IP_TARGET, ipamd calls EC2 for
// every few pods.
const warmIPLow = 5

// stockWarmPrefixTarget is the WARM_PREFIX_TARGET every upstream manifest and the managed add-on
// set whether or not prefix delegation is on (config/master/aws-k8s-cni.yaml in
// amazon-vpc-cni-k8s): without prefix delegation it is the default doing nothing, not a
// setting someone expects to work, so it is not reported as ignored.
const stockWarmPrefixTarget = 1

// CNIInput is what the aws-node checks look at.
type CNIInput struct {
	// Resource names the source ("daemonset/kube-system/aws-node", "ipamd/ipamd-env-settings.json").
	Resource string
	Env      map[string]string
	// Unread lists variables whose value could not be read (valueFrom a ConfigMap or Secret).
	Unread []string
	// Version of the CNI, nil when unknown; MinVersion is the warning threshold (zero: default).
	Version    *eni.Version
	MinVersion eni.Version
}

// cniStringSet mirrors the CNI's own exit check, which compares the raw strings (default "0")
// with "0" rather than the numbers.
func cniStringSet(env map[string]string, name string) bool {
	v, ok := env[name]
	if !ok {
		v = "0"
	}
	return v > "0"
}

// CheckCNISettings evaluates the VPC CNI environment for combinations that make aws-node exit,
// settings that are ignored, and settings that slow pod start-up at scale.
func CheckCNISettings(in CNIInput) []findings.Finding {
	s := eni.ParseSettings(in.Env)
	res := in.Resource
	var out []findings.Finding

	for _, name := range in.Unread {
		out = append(out, RuleEnvNotRead.New(res, "%s is set from a ConfigMap or Secret; its default was assumed", name))
	}

	if !s.ClusterEndpointSet {
		msg := "CLUSTER_ENDPOINT is not set: at boot ipamd reaches the API server through the kubernetes Service, which works only once kube-proxy has programmed iptables; until then pods fail with \"Unable to reach API Server\" and the CNI plugin gets connection refused on 127.0.0.1:50051"
		if in.Version != nil && in.Version.Less(ClusterEndpointMinVersion) {
			msg += fmt.Sprintf(" (VPC CNI %s predates CLUSTER_ENDPOINT: upgrade to %s or later first)", in.Version, ClusterEndpointMinVersion)
		}
		out = append(out, RuleClusterEndpoint.New(res, "%s", msg))
	}

	// Integer settings that the CNI ignores when unparsable or negative.
	for _, v := range []struct {
		name string
		s    eni.IntSetting
	}{
		{eni.EnvMaxENI, s.MaxENI}, {eni.EnvWarmENITarget, s.WarmENITarget}, {eni.EnvWarmIPTarget, s.WarmIPTarget},
		{eni.EnvMinimumIPTarget, s.MinimumIPTarget}, {eni.EnvWarmPrefixTarget, s.WarmPrefixTarget},
	} {
		if v.s.Set && (!v.s.Valid || v.s.Value < 0) {
			out = append(out, RuleInvalidSetting.New(res, "%s=%q is not a non-negative integer; the CNI ignores it and uses its default", v.name, v.s.Raw))
		}
	}
	for _, b := range s.InvalidBools {
		out = append(out, RuleInvalidSetting.New(res, "%s is not a boolean (true/false); the CNI uses false", b))
	}

	if s.IPCooldownPeriod.Set {
		switch {
		case !s.IPCooldownPeriod.Valid || s.IPCooldownPeriod.Value < 0:
			out = append(out, RuleCooldownInvalid.New(res, "IP_COOLDOWN_PERIOD=%q: aws-node refuses to start (\"IP_COOLDOWN_PERIOD MUST be a valid positive integer\")", s.IPCooldownPeriod.Raw))
		case s.IPCooldownPeriod.Value == 0:
			out = append(out, RuleCooldownZero.New(res, "IP_COOLDOWN_PERIOD=0: an address is handed to a new pod as soon as the old one is deleted, while kube-proxy may still send Service traffic to it"))
		}
	}

	ipTargets := s.WarmIPTarget.Positive() || s.MinimumIPTarget.Positive()
	if s.PrefixDelegation {
		if !cniStringSet(in.Env, eni.EnvWarmIPTarget) && !cniStringSet(in.Env, eni.EnvWarmPrefixTarget) && !cniStringSet(in.Env, eni.EnvMinimumIPTarget) {
			out = append(out, RulePDNoTarget.New(res,
				"ENABLE_PREFIX_DELEGATION=true with WARM_PREFIX_TARGET, WARM_IP_TARGET and MINIMUM_IP_TARGET unset or 0: aws-node exits with \"Setting WARM_PREFIX_TARGET = 0 is not supported while WARM_IP_TARGET/MINIMUM_IP_TARGET is not set\"; no pod on the node gets an address"))
		}
		if s.WarmPrefixTarget.Positive() && ipTargets {
			out = append(out, RuleTargetIgnored.New(res, "WARM_PREFIX_TARGET=%d is overridden by WARM_IP_TARGET/MINIMUM_IP_TARGET", s.WarmPrefixTarget.Value))
		}
	} else if s.WarmPrefixTarget.Positive() && s.WarmPrefixTarget.Value != stockWarmPrefixTarget {
		out = append(out, RuleTargetIgnored.New(res, "WARM_PREFIX_TARGET=%d has no effect without ENABLE_PREFIX_DELEGATION=true", s.WarmPrefixTarget.Value))
	}
	if ipTargets && s.WarmENITarget.Set {
		out = append(out, RuleTargetIgnored.New(res, "WARM_ENI_TARGET=%q is ignored because WARM_IP_TARGET or MINIMUM_IP_TARGET is set", s.WarmENITarget.Raw))
	}
	if !s.PrefixDelegation && !ipTargets && s.WarmENITarget.Valid && s.WarmENITarget.Value == 0 {
		out = append(out, RuleNoWarmPool.New(res,
			"WARM_ENI_TARGET=0 without WARM_IP_TARGET or MINIMUM_IP_TARGET: once an ENI is full the next pod waits for an ENI to be created and attached, and a scale-up turns into a burst of EC2 calls"))
	}
	if s.WarmIPTarget.Positive() && s.WarmIPTarget.Value < warmIPLow && !s.MinimumIPTarget.Positive() {
		out = append(out, RuleWarmIPLow.New(res,
			"WARM_IP_TARGET=%d without MINIMUM_IP_TARGET: ipamd assigns and releases addresses a few at a time, so starting 30 pods is about %d AssignPrivateIpAddresses calls per node",
			s.WarmIPTarget.Value, (30+s.WarmIPTarget.Value-1)/s.WarmIPTarget.Value))
	}

	if in.Version != nil {
		min := in.MinVersion
		if min == (eni.Version{}) {
			min = DefaultMinCNIVersion
		}
		switch {
		case in.Version.Less(ClusterEndpointMinVersion):
			out = append(out, RuleCNIOld.At(findings.Error, res, "VPC CNI %s predates CLUSTER_ENDPOINT (%s) and the IP cooldown setting; older than %s", in.Version, ClusterEndpointMinVersion, min))
		case in.Version.Less(min):
			out = append(out, RuleCNIOld.New(res, "VPC CNI %s is older than %s", in.Version, min))
		}
	}
	return out
}

// CNIModeString describes the address mode for messages.
func CNIModeString(s eni.Settings) string {
	var parts []string
	if s.PrefixDelegation {
		parts = append(parts, "prefix delegation")
	} else {
		parts = append(parts, "secondary IPs")
	}
	if s.CustomNetworking {
		parts = append(parts, "custom networking")
	}
	if s.PodENI {
		parts = append(parts, "security groups for pods")
	}
	if m := s.EffectiveMaxENI(); m > 0 {
		parts = append(parts, fmt.Sprintf("MAX_ENI %d", m))
	}
	return strings.Join(parts, ", ")
}
