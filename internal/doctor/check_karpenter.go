package doctor

// karpenterCheck: with custom networking and no reserved ENI Karpenter tells its nodes' kubelets
// a max pods that counts the primary ENI custom networking takes from pods: the usual
// recommendation is reservedENIs=1.
type karpenterCheck struct{}

func (karpenterCheck) Needs() []Need { return nil }

func (karpenterCheck) Run(f *Facts) Result {
	var r Result
	mode, _ := cniMode(f)
	if k := f.Karpenter; k.Found && mode.Settings.CustomNetworking && k.ReservedENIs == 0 {
		r.add(RuleKarpenterReservedENIs.New("karpenter", "AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG=true but Karpenter's reservedENIs is 0 (%s)", k.Source))
	}
	return r
}
