package bundle

import "github.com/nodekeeper/nodekeeper/internal/bootstrap"

// Documentation pages only bundle's own rules link to (Rule.DocURL); the pages it shares with
// doctor are named in internal/rules.
const (
	DocServingCert  = "https://kubernetes.io/docs/reference/access-authn-authz/kubelet-tls-bootstrapping/#certificate-rotation"
	DocEviction     = "https://kubernetes.io/docs/concepts/scheduling-eviction/node-pressure-eviction/"
	DocUserData     = bootstrap.DocUserData
	DocNodeadm      = bootstrap.DocNodeadm
	DocLogCollector = "https://github.com/awslabs/amazon-eks-ami/tree/main/log-collector-script/linux"
	DocEBSIO        = "https://docs.aws.amazon.com/ebs/latest/userguide/ebs-io-characteristics.html"
)
