package findings

// Documentation pages the rules of doctor and bundle link to (Rule.DocURL). Each page has one
// name here, so a page that both commands cite is spelled, and moved when it moves, in one place.
const (
	// Kubernetes.
	DocKubeletConfig = "https://kubernetes.io/docs/reference/config-api/kubelet-config.v1beta1/"
	DocConfigz       = "https://kubernetes.io/docs/tasks/administer-cluster/kubelet-config-file/#viewing-the-kubelet-configuration"
	DocVersionSkew   = "https://kubernetes.io/releases/version-skew-policy/#kubelet"
	DocLeaseLeak     = "https://github.com/kubernetes/kubernetes/pull/119661"
	DocLeases        = "https://kubernetes.io/docs/concepts/architecture/leases/#node-heart-beats"
	DocAPF           = "https://kubernetes.io/docs/concepts/cluster-administration/flow-control/"
	DocCSINode       = "https://kubernetes.io/docs/reference/kubernetes-api/config-and-storage-resources/csi-node-v1/"
	DocServingCert   = "https://kubernetes.io/docs/reference/access-authn-authz/kubelet-tls-bootstrapping/#certificate-rotation"
	DocEviction      = "https://kubernetes.io/docs/concepts/scheduling-eviction/node-pressure-eviction/"
	DocNodeLifecycle = "https://kubernetes.io/docs/concepts/architecture/cloud-controller/#node-lifecycle-controller"

	// Amazon VPC CNI.
	DocCNIVars            = "https://github.com/aws/amazon-vpc-cni-k8s/blob/master/README.md#cni-configuration-variables"
	DocCNITroubleshooting = "https://github.com/aws/amazon-vpc-cni-k8s/blob/master/docs/troubleshooting.md"
	DocCNIBestPractices   = "https://docs.aws.amazon.com/eks/latest/best-practices/vpc-cni.html"
	DocCNIUpdate          = "https://docs.aws.amazon.com/eks/latest/userguide/managing-vpc-cni.html"
	DocCustomNetworking   = "https://docs.aws.amazon.com/eks/latest/userguide/cni-custom-network.html"
	DocENIConfig          = "https://docs.aws.amazon.com/eks/latest/userguide/cni-custom-network-tutorial.html"
	DocPrefixDelegation   = "https://docs.aws.amazon.com/eks/latest/userguide/cni-increase-ip-addresses.html"
	// DocIPOptimization covers subnet sizing and the addresses nodes and pods take.
	DocIPOptimization = "https://docs.aws.amazon.com/eks/latest/best-practices/ip-opt.html"

	// Amazon EKS and EC2.
	DocMaxPods       = "https://docs.aws.amazon.com/eks/latest/userguide/choosing-instance-type.html#determine-max-pods"
	DocKubeletCSR    = "https://docs.aws.amazon.com/eks/latest/userguide/cert-signing.html"
	DocUserData      = "https://docs.aws.amazon.com/eks/latest/userguide/launch-templates.html#launch-template-user-data"
	DocNodeadm       = "https://awslabs.github.io/amazon-eks-ami/nodeadm/"
	DocLogCollector  = "https://github.com/awslabs/amazon-eks-ami/tree/main/log-collector-script/linux"
	DocEC2Throttling = "https://docs.aws.amazon.com/ec2/latest/devguide/ec2-api-throttling.html"
	DocEBSIO         = "https://docs.aws.amazon.com/ebs/latest/userguide/ebs-io-characteristics.html"
	DocKarpenterENIs = "https://karpenter.sh/docs/reference/settings/"
)
