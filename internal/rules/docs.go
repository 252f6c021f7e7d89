package rules

import "github.com/nodekeeper/nodekeeper/internal/findings"

// Docs are the documentation pages of the shared rules (the doc keys of rules.yaml), and the
// pages that doctor's and bundle's own rules cite too: each page has one key, and its address is
// spelled and moved in one place.
var Docs = findings.DocPages{
	// Kubernetes.
	"kubelet-config": "https://kubernetes.io/docs/reference/config-api/kubelet-config.v1beta1/",
	"leases":         "https://kubernetes.io/docs/concepts/architecture/leases/#node-heart-beats",
	// Amazon VPC CNI.
	"cni-vars":            "https://github.com/aws/amazon-vpc-cni-k8s/blob/master/README.md#cni-configuration-variables",
	"cni-troubleshooting": "https://github.com/aws/amazon-vpc-cni-k8s/blob/master/docs/troubleshooting.md",
	"cni-best-practices":  "https://docs.aws.amazon.com/eks/latest/best-practices/vpc-cni.html",
	"cni-update":          "https://docs.aws.amazon.com/eks/latest/userguide/managing-vpc-cni.html",
	"prefix-delegation":   "https://docs.aws.amazon.com/eks/latest/userguide/cni-increase-ip-addresses.html",
	// Subnet sizing and the addresses nodes and pods take.
	"ip-optimization": "https://docs.aws.amazon.com/eks/latest/best-practices/ip-opt.html",
	// Amazon EKS and EC2.
	"max-pods":       "https://docs.aws.amazon.com/eks/latest/userguide/choosing-instance-type.html#determine-max-pods",
	"ec2-throttling": "https://docs.aws.amazon.com/ec2/latest/devguide/ec2-api-throttling.html",
}
