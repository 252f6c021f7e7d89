package doctor

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/version"

	"github.com/nodekeeper/nodekeeper/internal/findings"
)

// leaseFixMinor is the first kubelet minor version that no longer re-creates its lease without
// an owner when its Node is gone (kubernetes PR 119661).
const leaseFixMinor = 29

// CheckVersionSkew compares a kubelet version with the API server's. Both are Git versions such
// as "v1.29.3-eks-adc7111".
func CheckVersionSkew(resource, kubelet, server string) ([]findings.Finding, error) {
	kv, err := version.ParseGeneric(kubelet)
	if err != nil {
		return nil, fmt.Errorf("kubelet version %q: %w", kubelet, err)
	}
	sv, err := version.ParseGeneric(server)
	if err != nil {
		return nil, fmt.Errorf("API server version %q: %w", server, err)
	}
	var out []findings.Finding
	if kv.Major() != sv.Major() {
		out = append(out, RuleVersionSkew.New(resource, "kubelet %s and API server %s differ in major version", kubelet, server))
		return out, nil
	}
	// Since 1.28 kubelets may be three minor versions older than the API server, two before.
	allowed := uint(3)
	if sv.Minor() < 28 {
		allowed = 2
	}
	switch {
	case kv.Minor() > sv.Minor():
		out = append(out, RuleVersionSkew.New(resource, "kubelet %s is newer than the API server %s: unsupported", kubelet, server))
	case sv.Minor()-kv.Minor() > allowed:
		out = append(out, RuleVersionSkew.New(resource, "kubelet %s is %d minor versions behind the API server %s (at most %d are supported)", kubelet, sv.Minor()-kv.Minor(), server, allowed))
	case sv.Minor()-kv.Minor() == allowed:
		out = append(out, RuleVersionSkew.At(findings.Warning, resource, "kubelet %s is %d minor versions behind the API server %s: the oldest supported, the next control plane upgrade breaks the skew policy", kubelet, allowed, server))
	}
	if kv.Minor() < leaseFixMinor {
		out = append(out, RuleLegacyLeases.New(resource, "kubelet %s: if its Node is deleted while it runs, it re-creates its lease without an ownerReference and the lease leaks", kubelet))
	}
	return out, nil
}
