package doctor

// karpenterCheck: with custom networking and no reserved ENI Karpenter tells its nodes' kubelets
// a max pods that counts the primary ENI custom networking takes from pods: the usual
// recommendation is reservedENIs=1.
type karpenterCheck struct{}

// Needs: without Karpenter's Deployments (or its settings ConfigMap) its reservedENIs may be
// unknown; the check still judges what was found.
func (karpenterCheck) Needs() []Need {
	return []Need{{Fact: FactKarpenter, Rule: RuleKarpenterReservedENIs, Optional: true, Note: "Karpenter's reservedENIs is judged from what could be read"}}
}

func (karpenterCheck) Run(f *Facts) Result {
	var r Result
	mode, _ := cniMode(f)
	if k := f.Karpenter; k.Found && mode.Settings.CustomNetworking && k.ReservedENIs == 0 {
		r.add(RuleKarpenterReservedENIs.New("karpenter", "AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG=true but Karpenter's reservedENIs is 0 (%s)", k.Source))
	}
	return r
}
