package doctor

import "github.com/nodekeeper/nodekeeper/internal/findings"

// docs are the documentation pages only doctor's own rules link to (the doc keys of rules.yaml);
// the pages it shares with bundle are in internal/rules (rules.Docs).
var docs = findings.DocPages{
	"configz":            "https://kubernetes.io/docs/tasks/administer-cluster/kubelet-config-file/#viewing-the-kubelet-configuration",
	"version-skew":       "https://kubernetes.io/releases/version-skew-policy/#kubelet",
	"lease-leak":         "https://github.com/kubernetes/kubernetes/pull/119661",
	"apf":                "https://kubernetes.io/docs/concepts/cluster-administration/flow-control/",
	"csinode":            "https://kubernetes.io/docs/reference/kubernetes-api/config-and-storage-resources/csi-node-v1/",
	"node-lifecycle":     "https://kubernetes.io/docs/concepts/architecture/cloud-controller/#node-lifecycle-controller",
	"custom-networking":  "https://docs.aws.amazon.com/eks/latest/userguide/cni-custom-network.html",
	"eniconfig":          "https://docs.aws.amazon.com/eks/latest/userguide/cni-custom-network-tutorial.html",
	"kubelet-csr":        "https://docs.aws.amazon.com/eks/latest/userguide/cert-signing.html",
	"karpenter-settings": "https://karpenter.sh/docs/reference/settings/",
	"ebs-volume-types":   "https://docs.aws.amazon.com/ebs/latest/userguide/general-purpose.html",
	// Image pulls and add-ons (NK75x).
	"kubelet-pull-limits": "https://kubernetes.io/docs/reference/config-api/kubelet-config.v1beta1/#kubelet-config-k8s-io-v1beta1-KubeletConfiguration",
	"eks-addons":          "https://docs.aws.amazon.com/eks/latest/userguide/eks-add-ons.html",
	"karpenter-lease-gc":  "https://github.com/kubernetes-sigs/karpenter/pull/1586",
	"kube-proxy-versions": "https://docs.aws.amazon.com/eks/latest/userguide/managing-kube-proxy.html",
	"coredns-versions":    "https://docs.aws.amazon.com/eks/latest/userguide/managing-coredns.html",
	// ipamd's metrics and the CNI metrics helper that publishes them.
	"cni-metrics": "https://github.com/aws/amazon-vpc-cni-k8s/blob/master/cmd/cni-metrics-helper/README.md",
}
