package checks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/nodekeeper/nodekeeper/internal/clusterread"
	"github.com/nodekeeper/nodekeeper/internal/doctor"
	"github.com/nodekeeper/nodekeeper/internal/rules"
	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// Reading each kubelet's /configz straight from the kubelet (--checks-kubelet-config), as
// metrics-server reads /metrics/resource, instead of through the API server's node proxy:
// doctor's read needs `get nodes/proxy`, which also authorizes exec in every container (its
// WebSocket upgrade is a GET), and the controller is never given it. With fine-grained kubelet
// authorization (KEP-2862: alpha in Kubernetes 1.32, beta and on by default in 1.33, GA in
// 1.36; kubernetes.io/docs/reference/access-authn-authz/kubelet-authn-authz/) the kubelet
// authorizes GET /configz as `get nodes/configz` first, and falls back to nodes/proxy only when
// that is denied. Older kubelets ask for nodes/proxy alone: there the read is refused and the
// kubelet-configuration checks are reported skipped, naming the permission.
//
// The request carries the controller's own credentials (its service account token) and
// verifies the kubelet's serving certificate against the cluster's CA, so it needs serving
// certificates the cluster signs (serverTLSBootstrap, whose CSRs doctor checks).

// kubeletConfigzPath is the kubelet's own path (the node proxy's is /api/v1/nodes/N/proxy/configz).
const kubeletConfigzPath = "/configz"

// maxKubeletConfigz bounds one answer: a kubelet's is a few KiB, and thousands are read.
const maxKubeletConfigz = 1 << 20

// KubeletConfigOptions tune the direct reads.
type KubeletConfigOptions struct {
	// Workers bounds the reads in flight (default doctor.DefaultWorkers).
	Workers int
	// Timeout bounds one read (default 10 s).
	Timeout time.Duration
}

// kubeletConfigReader reads /configz from each Ready node's kubelet.
type kubeletConfigReader struct {
	client *http.Client
	o      KubeletConfigOptions
}

// newKubeletConfigReader uses cfg's credentials and CA (the controller's in-cluster
// configuration) for the kubelets.
func newKubeletConfigReader(cfg *rest.Config, o KubeletConfigOptions) (*kubeletConfigReader, error) {
	if o.Workers <= 0 {
		o.Workers = doctor.DefaultWorkers
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	kc := rest.CopyConfig(cfg)
	// The kubelet's certificate names the node's address, never the API server's host name.
	kc.TLSClientConfig.ServerName = ""
	kc.TLSClientConfig.Insecure = false
	rt, err := rest.TransportFor(kc)
	if err != nil {
		return nil, fmt.Errorf("the kubelets' client: %w", err)
	}
	return &kubeletConfigReader{client: &http.Client{Transport: rt}, o: o}, nil
}

// fill reads each Ready node's configuration into f.Configz, replacing what doctor's gather left
// there (the node proxy's refusal), and clears the fact's missing mark when any was read.
func (r *kubeletConfigReader) fill(ctx context.Context, f *doctor.Facts) {
	if f.Configz == nil {
		f.Configz = map[string]clusterread.ConfigzResult{}
	}
	var ready []*corev1.Node
	for i := range f.Nodes {
		if n := &f.Nodes[i]; nodeIsReady(n) {
			ready = append(ready, n)
		} else {
			f.Configz[n.Name] = clusterread.ConfigzResult{Err: "node not Ready"}
		}
	}
	results := make([]clusterread.ConfigzResult, len(ready))
	sem := make(chan struct{}, r.o.Workers)
	var wg sync.WaitGroup
	for i, n := range ready {
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				results[i] = clusterread.ConfigzResult{Err: "not read: " + context.Cause(ctx).Error()}
				return
			}
			defer func() { <-sem }()
			results[i] = r.read(ctx, n)
		})
	}
	wg.Wait()
	read := 0
	for i, n := range ready {
		f.Configz[n.Name] = results[i]
		if results[i].Config != nil {
			read++
		}
	}
	if read > 0 || len(ready) == 0 {
		delete(f.Missing, doctor.FactConfigz)
	}
}

// read asks one kubelet for its configuration.
func (r *kubeletConfigReader) read(ctx context.Context, n *corev1.Node) clusterread.ConfigzResult {
	addr := kubeletAddress(n)
	if addr == "" {
		return clusterread.ConfigzResult{Err: "the node has no InternalIP or kubelet port"}
	}
	ctx, cancel := context.WithTimeout(ctx, r.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+kubeletConfigzPath, nil)
	if err != nil {
		return clusterread.ConfigzResult{Err: err.Error()}
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return clusterread.ConfigzResult{Err: textsafe.ClipRaw(err.Error(), 200)}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxKubeletConfigz+1))
	switch {
	case resp.StatusCode == http.StatusForbidden:
		return clusterread.ConfigzResult{Err: "forbidden: needs get on nodes/configz (fine-grained kubelet authorization, Kubernetes 1.33+)"}
	case resp.StatusCode != http.StatusOK:
		return clusterread.ConfigzResult{Err: fmt.Sprintf("HTTP %d: %s", resp.StatusCode, textsafe.ClipRaw(string(raw), 200))}
	case err != nil:
		return clusterread.ConfigzResult{Err: textsafe.ClipRaw(err.Error(), 200)}
	case len(raw) > maxKubeletConfigz:
		return clusterread.ConfigzResult{Err: errors.New("the /configz answer is over 1 MiB (a kubelet's is a few KiB)").Error()}
	}
	c, err := rules.ParseConfigz(raw)
	if err != nil {
		return clusterread.ConfigzResult{Err: err.Error()}
	}
	return clusterread.ConfigzResult{Config: &c}
}

// kubeletAddress is host:port of n's kubelet: its InternalIP and the port it registered.
func kubeletAddress(n *corev1.Node) string {
	port := n.Status.DaemonEndpoints.KubeletEndpoint.Port
	if port == 0 {
		return ""
	}
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP && a.Address != "" {
			return net.JoinHostPort(a.Address, strconv.Itoa(int(port)))
		}
	}
	return ""
}

func nodeIsReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
