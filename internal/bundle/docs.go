package bundle

// Documentation pages only bundle's own rules link to (Rule.DocURL); the pages it shares with
// doctor are named in internal/rules.
const (
	DocServingCert  = "https://kubernetes.io/docs/reference/access-authn-authz/kubelet-tls-bootstrapping/#certificate-rotation"
	DocEviction     = "https://kubernetes.io/docs/concepts/scheduling-eviction/node-pressure-eviction/"
	DocUserData     = "https://docs.aws.amazon.com/eks/latest/userguide/launch-templates.html#launch-template-user-data"
	DocNodeadm      = "https://awslabs.github.io/amazon-eks-ami/nodeadm/"
	DocLogCollector = "https://github.com/awslabs/amazon-eks-ami/tree/main/log-collector-script/linux"
	DocEBSIO        = "https://docs.aws.amazon.com/ebs/latest/userguide/ebs-io-characteristics.html"
)
