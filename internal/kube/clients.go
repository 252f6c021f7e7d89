package kube

import (
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
)

// Clients are the clients nodekeeper reads and writes with, all from one configured rest.Config
// (see Configure): Kube speaks protobuf, Metadata reads object metadata only.
type Clients struct {
	// Config is the configuration they were built from (JSON, for clients of APIs without
	// protobuf, such as CRDs, configz and /metrics).
	Config *rest.Config
	// Kube is the typed clientset, in protobuf.
	Kube kubernetes.Interface
	// Metadata reads metadata only (Nodes: NodesResource).
	Metadata metadata.Interface
}

// NewClients builds Clients from cfg, used as it is but for the content type.
func NewClients(cfg *rest.Config) (*Clients, error) {
	kube, err := kubernetes.NewForConfig(Protobuf(cfg))
	if err != nil {
		return nil, err
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Clients{Config: cfg, Kube: kube, Metadata: meta}, nil
}
