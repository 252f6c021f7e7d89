package bundle

import "github.com/nodekeeper/nodekeeper/internal/findings"

// docs are the documentation pages only bundle's own rules link to (the doc keys of rules.yaml);
// the pages it shares with doctor are in internal/rules (rules.Docs), the user data's in
// internal/bootstrap (bootstrap.Docs).
var docs = findings.DocPages{
	"serving-cert":  "https://kubernetes.io/docs/reference/access-authn-authz/kubelet-tls-bootstrapping/#certificate-rotation",
	"eviction":      "https://kubernetes.io/docs/concepts/scheduling-eviction/node-pressure-eviction/",
	"log-collector": "https://github.com/awslabs/amazon-eks-ami/tree/main/log-collector-script/linux",
	"ebs-io":        "https://docs.aws.amazon.com/ebs/latest/userguide/ebs-io-characteristics.html",
}
