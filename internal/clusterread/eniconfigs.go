package clusterread

import (
	"context"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodekeeper/nodekeeper/internal/kube"
)

// LabelENIConfig is the Node label that selects a node's ENIConfig with custom networking (the
// VPC CNI's default ENI_CONFIG_LABEL_DEF).
const LabelENIConfig = "k8s.amazonaws.com/eniConfig"

// GVRENIConfig is the VPC CNI's ENIConfig custom resource.
var GVRENIConfig = schema.GroupVersionResource{Group: "crd.k8s.amazonaws.com", Version: "v1alpha1", Resource: "eniconfigs"}

// ENIConfig is the part of an ENIConfig nodekeeper reads.
type ENIConfig struct {
	Name, Subnet   string
	SecurityGroups int
}

// ENIConfigs are the ENIConfigs (Served false: the CRD is not installed).
type ENIConfigs struct {
	Served bool
	Items  []ENIConfig
}

// Subnets maps each ENIConfig's name to its subnet.
func (e ENIConfigs) Subnets() map[string]string {
	out := make(map[string]string, len(e.Items))
	for _, c := range e.Items {
		out[c.Name] = c.Subnet
	}
	return out
}

// ENIConfigs lists the ENIConfigs page by page (Reader.ChunkSize), when the CRD is served. A
// forbidden list is a *Missing; any other failure, of discovery or of a page, is an error: a
// partial list is never returned as the whole.
func (r Reader) ENIConfigs(ctx context.Context) (ENIConfigs, error) {
	served, err := r.served(GVRENIConfig.Group, GVRENIConfig.Version, GVRENIConfig.Resource)
	if err != nil || !served {
		return ENIConfigs{}, err
	}
	var items []ENIConfig
	err = kube.List(ctx, GVRENIConfig.Resource, metav1.ListOptions{Limit: r.chunk()}, r.Dynamic.Resource(GVRENIConfig).List, func(l *unstructured.UnstructuredList) error {
		for i := range l.Items {
			u := &l.Items[i]
			subnet, _, _ := unstructured.NestedString(u.Object, "spec", "subnet")
			sgs, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "securityGroups")
			items = append(items, ENIConfig{Name: u.GetName(), Subnet: strings.TrimSpace(subnet), SecurityGroups: len(sgs)})
		}
		return nil
	})
	if err != nil {
		return ENIConfigs{}, ReadError(Forbidden(err, "eniconfigs", "list", "eniconfigs.crd.k8s.amazonaws.com", ""), "listing ENIConfigs")
	}
	return ENIConfigs{Served: true, Items: items}, nil
}
