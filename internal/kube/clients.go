package kube

import (
	"k8s.io/client-go/dynamic"
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
	Kube Interface
	// JSON is the typed clientset in JSON, for APIs and raw paths without protobuf (the node
	// proxy's /configz, /metrics) and small reads.
	JSON Interface
	// Dynamic reads custom resources (JSON).
	Dynamic dynamic.Interface
	// Metadata reads metadata only (Nodes: NodesResource).
	Metadata metadata.Interface
}

// NewClients builds Clients from cfg, used as it is but for the content type. Building a client
// sends no request.
func NewClients(cfg *rest.Config) (*Clients, error) {
	kube, err := NewForConfig(Protobuf(cfg))
	if err != nil {
		return nil, err
	}
	json, err := NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Clients{Config: cfg, Kube: kube, JSON: json, Dynamic: dyn, Metadata: meta}, nil
}
