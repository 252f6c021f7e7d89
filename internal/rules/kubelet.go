package rules

import (
	"encoding/json"
	"fmt"

	"github.com/nodekeeper/nodekeeper/internal/findings"
)

// KubeletConfig holds the KubeletConfiguration fields the checks read (kubelet.config.k8s.io/v1beta1
// names). Pointers distinguish "absent" (the kubelet default applies) from an explicit value, which
// matters for configuration files; /configz always carries every field.
type KubeletConfig struct {
	RegistryPullQPS       *int32 `json:"registryPullQPS,omitempty"`
	RegistryBurst         *int32 `json:"registryBurst,omitempty"`
	SerializeImagePulls   *bool  `json:"serializeImagePulls,omitempty"`
	MaxParallelImagePulls *int32 `json:"maxParallelImagePulls,omitempty"`
	MaxPods               *int32 `json:"maxPods,omitempty"`
	PodsPerCore           *int32 `json:"podsPerCore,omitempty"`
	KubeAPIQPS            *int32 `json:"kubeAPIQPS,omitempty"`
	KubeAPIBurst          *int32 `json:"kubeAPIBurst,omitempty"`
}

// Kubelet defaults (v1beta1) for the fields above.
const (
	DefaultRegistryPullQPS = 5
	DefaultRegistryBurst   = 10
	DefaultMaxPods         = 110
	DefaultKubeAPIQPS      = 50 // since Kubernetes 1.27; 5 before
	DefaultKubeAPIBurst    = 100
	// clientGoDefaultQPS is what a client (the kubelet's included) gets for QPS 0.
	clientGoDefaultQPS = 5
	// RecommendedRegistryPullQPS is the value AWS Support recommended in the seed case.
	RecommendedRegistryPullQPS = 50
	// denseNodePods is the pod density from which serialized image pulls are reported.
	denseNodePods = 30
)

// Merge overlays the fields set in o on c (configuration drop-ins, command-line flags).
func (c KubeletConfig) Merge(o KubeletConfig) KubeletConfig {
	overlay(&c.RegistryPullQPS, o.RegistryPullQPS)
	overlay(&c.RegistryBurst, o.RegistryBurst)
	overlay(&c.SerializeImagePulls, o.SerializeImagePulls)
	overlay(&c.MaxParallelImagePulls, o.MaxParallelImagePulls)
	overlay(&c.MaxPods, o.MaxPods)
	overlay(&c.PodsPerCore, o.PodsPerCore)
	overlay(&c.KubeAPIQPS, o.KubeAPIQPS)
	overlay(&c.KubeAPIBurst, o.KubeAPIBurst)
	return c
}

// overlay sets *dst to src when src is set: an absent field keeps the value below it.
func overlay[T any](dst **T, src *T) {
	if src != nil {
		*dst = src
	}
}

// EffectiveMaxPods is maxPods or the kubelet default.
func (c KubeletConfig) EffectiveMaxPods() int {
	return int(deref(c.MaxPods, DefaultMaxPods))
}

func deref[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// ParseConfigz decodes the kubelet's /configz answer ({"kubeletconfig": {...}}).
func ParseConfigz(data []byte) (KubeletConfig, error) {
	var doc struct {
		KubeletConfig *KubeletConfig `json:"kubeletconfig"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return KubeletConfig{}, fmt.Errorf("decoding configz: %w", err)
	}
	if doc.KubeletConfig == nil {
		return KubeletConfig{}, fmt.Errorf("configz answer has no kubeletconfig object")
	}
	return *doc.KubeletConfig, nil
}

// ParseKubeletConfigFile decodes a KubeletConfiguration file (JSON, as the EKS AMIs write it).
func ParseKubeletConfigFile(data []byte) (KubeletConfig, error) {
	var c KubeletConfig
	if err := json.Unmarshal(data, &c); err != nil {
		return KubeletConfig{}, fmt.Errorf("decoding kubelet configuration: %w", err)
	}
	return c, nil
}

// CheckKubeletConfig evaluates a kubelet configuration for a node that can hold pods pods at once
// (its pod capacity). source says where the values came from ("configz", a file name).
func CheckKubeletConfig(resource, source string, c KubeletConfig, pods int) []findings.Finding {
	var out []findings.Finding
	if pods <= 0 {
		pods = c.EffectiveMaxPods()
	}
	qps := deref(c.RegistryPullQPS, DefaultRegistryPullQPS)
	burst := deref(c.RegistryBurst, DefaultRegistryBurst)
	// The kubelet's pull limiter is a token bucket that does not wait (TryAccept): every pull past
	// the burst within the refill rate fails at once with "pull QPS exceeded" and backs off. A
	// scale-up lands up to max-pods pods on a fresh node at the same time.
	if qps > 0 && int(burst) < pods {
		sev := findings.Warning
		if qps >= RecommendedRegistryPullQPS {
			sev = findings.Info
		}
		wait := float64(pods-int(burst)) / float64(qps)
		out = append(out, RuleRegistryPullQPS.At(sev, resource,
			"up to %d pods can start at once but the kubelet allows %d image pulls at once and %d per second after that (registryPullQPS %d, registryBurst %d from %s): about %.0f s of pulls fail with \"pull QPS exceeded\" and back off",
			pods, burst, qps, qps, burst, source, wait))
	}
	if deref(c.SerializeImagePulls, true) && pods > denseNodePods {
		out = append(out, RuleSerializePulls.New(resource,
			"serializeImagePulls is true (%s) on a node for %d pods: one slow pull holds every other pod back", source, pods))
	}
	apiQPS := deref(c.KubeAPIQPS, DefaultKubeAPIQPS)
	note := ""
	if apiQPS == 0 {
		apiQPS, note = clientGoDefaultQPS, " (0 means the client default of 5)"
	}
	// Below 10 the kubelet throttles itself even on small nodes (10 is what the EKS AMIs set);
	// above the default ceiling of 110 pods anything below the modern default of 50 falls behind.
	if apiQPS < 10 || (pods > DefaultMaxPods && apiQPS < DefaultKubeAPIQPS) {
		out = append(out, RuleKubeAPIQPS.New(resource,
			"kubeAPIQPS %d%s, kubeAPIBurst %d (%s) for %d pods: status updates and events queue on the client side during a scale-up",
			apiQPS, note, deref(c.KubeAPIBurst, DefaultKubeAPIBurst), source, pods))
	}
	return out
}

// CheckMaxPodsAgreement reports a configuration maxPods that differs from the Node's capacity.
func CheckMaxPodsAgreement(resource string, c KubeletConfig, capacityPods int) []findings.Finding {
	if c.MaxPods == nil || capacityPods <= 0 || int(*c.MaxPods) == capacityPods {
		return nil
	}
	why := "the kubelet runs with another configuration than it reports, or was not restarted"
	if c.PodsPerCore != nil && *c.PodsPerCore > 0 {
		why = fmt.Sprintf("podsPerCore %d lowers it", *c.PodsPerCore)
	}
	return []findings.Finding{RuleMaxPodsMismatch.New(resource,
		"configuration maxPods %d, Node capacity %d pods: %s", *c.MaxPods, capacityPods, why)}
}
