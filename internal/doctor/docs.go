package doctor

// Documentation pages only doctor's own rules link to (Rule.DocURL); the pages it shares with
// bundle are named in internal/rules.
const (
	DocConfigz          = "https://kubernetes.io/docs/tasks/administer-cluster/kubelet-config-file/#viewing-the-kubelet-configuration"
	DocVersionSkew      = "https://kubernetes.io/releases/version-skew-policy/#kubelet"
	DocLeaseLeak        = "https://github.com/kubernetes/kubernetes/pull/119661"
	DocAPF              = "https://kubernetes.io/docs/concepts/cluster-administration/flow-control/"
	DocCSINode          = "https://kubernetes.io/docs/reference/kubernetes-api/config-and-storage-resources/csi-node-v1/"
	DocNodeLifecycle    = "https://kubernetes.io/docs/concepts/architecture/cloud-controller/#node-lifecycle-controller"
	DocCustomNetworking = "https://docs.aws.amazon.com/eks/latest/userguide/cni-custom-network.html"
	DocENIConfig        = "https://docs.aws.amazon.com/eks/latest/userguide/cni-custom-network-tutorial.html"
	DocKubeletCSR       = "https://docs.aws.amazon.com/eks/latest/userguide/cert-signing.html"
	DocKarpenterENIs    = "https://karpenter.sh/docs/reference/settings/"
	DocEBSVolumeTypes   = "https://docs.aws.amazon.com/ebs/latest/userguide/general-purpose.html"
)
