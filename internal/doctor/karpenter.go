package doctor

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodekeeper/nodekeeper/internal/rules"
)

// checkKarpenter reads Karpenter's reservedENIs (see karpenterReservedENIs). With custom
// networking and no reserved ENI Karpenter tells its nodes' kubelets a max pods that counts the
// primary ENI custom networking takes from pods: the usual recommendation is reservedENIs=1.
func (r *runner) checkKarpenter(ctx context.Context) error {
	n, src, found, err := r.karpenterReservedENIs(ctx)
	if err != nil {
		return err
	}
	if !found {
		return nil
	}
	r.karpenterENIs, r.karpenterSource = n, src
	if r.mode.Settings.CustomNetworking && n == 0 && !r.o.SkipPodNetworking {
		r.rep.Add(RuleKarpenterReservedENIs.New("karpenter", "AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG=true but Karpenter's reservedENIs is 0 (%s)", src))
	}
	return nil
}

// nodeMode is the CNI mode for one node's capacity. Karpenter's reservedENIs counts the ENI that
// custom networking takes as well; for Karpenter's nodes, when --reserved-enis was not given, the
// ENIs Karpenter reserves beyond that one are reserved here too, instead of asking for the flag.
func (r *runner) nodeMode(n *corev1.Node, mode rules.CNIMode) rules.CNIMode {
	if r.karpenterSource == "" || r.o.ReservedENIs != 0 || rules.DetectProvisioner(n.Labels) != rules.ProvisionerKarpenter {
		return mode
	}
	extra := r.karpenterENIs
	if mode.Settings.CustomNetworking {
		extra--
	}
	if extra > 0 {
		mode.ReservedENIs = extra
	}
	return mode
}

// modeText describes an address mode for a message.
func modeText(m rules.CNIMode) string {
	s := rules.CNIModeString(m.Settings)
	if m.ReservedENIs > 0 {
		s += fmt.Sprintf(", %d reserved ENIs", m.ReservedENIs)
	}
	return s
}
