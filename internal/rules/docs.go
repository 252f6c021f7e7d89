package rules

// Documentation pages the shared rules link to (Rule.DocURL), and the pages that both doctor's
// and bundle's own rules cite: each page has one name, spelled and moved in one place.
const (
	// Kubernetes.
	DocKubeletConfig = "https://kubernetes.io/docs/reference/config-api/kubelet-config.v1beta1/"
	DocLeases        = "https://kubernetes.io/docs/concepts/architecture/leases/#node-heart-beats"
	// Amazon VPC CNI.
	DocCNIVars            = "https://github.com/aws/amazon-vpc-cni-k8s/blob/master/README.md#cni-configuration-variables"
	DocCNITroubleshooting = "https://github.com/aws/amazon-vpc-cni-k8s/blob/master/docs/troubleshooting.md"
	DocCNIBestPractices   = "https://docs.aws.amazon.com/eks/latest/best-practices/vpc-cni.html"
	DocCNIUpdate          = "https://docs.aws.amazon.com/eks/latest/userguide/managing-vpc-cni.html"
	DocPrefixDelegation   = "https://docs.aws.amazon.com/eks/latest/userguide/cni-increase-ip-addresses.html"
	// DocIPOptimization covers subnet sizing and the addresses nodes and pods take.
	DocIPOptimization = "https://docs.aws.amazon.com/eks/latest/best-practices/ip-opt.html"
	// Amazon EKS and EC2.
	DocMaxPods       = "https://docs.aws.amazon.com/eks/latest/userguide/choosing-instance-type.html#determine-max-pods"
	DocEC2Throttling = "https://docs.aws.amazon.com/ec2/latest/devguide/ec2-api-throttling.html"
)
