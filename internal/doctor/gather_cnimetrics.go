package doctor

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/nodekeeper/nodekeeper/internal/clusterread"
	"github.com/nodekeeper/nodekeeper/internal/ipamdmetrics"
	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// The VPC CNI's own figures per node: ipamd, in the aws-node container, serves Prometheus metrics
// on port 61678 (containerPort "metrics"). aws-node is hostNetwork, so the API server's pod proxy
// (pods/NAME:PORT/proxy/metrics) reaches it at the node's address, as it reaches the kubelet
// through the node proxy for configz: one request per Ready aws-node pod, no retries, a bounded
// answer, at most CNIMetricsWorkers in flight (Deps.Proxy says why that, and not the rate limit,
// bounds them). Whoever answers on that port writes the text, so internal/ipamdmetrics reads it
// within bounds of CPU and memory as well as bytes (the metric names are listed there).
const (
	// DefaultIPAMDMetricsPort is ipamd's metrics port when the pod does not name one.
	DefaultIPAMDMetricsPort = 61678
	// maxCNIMetricsBytes bounds one /metrics answer: ipamd's is tens of KiB (Go runtime metrics
	// and a series per ENI and CIDR); thousands are read at once.
	maxCNIMetricsBytes = 2 << 20
)

// Stats of the CNI metrics reads.
const (
	StatAWSNodePods        = "aws-node pods"
	StatCNIMetricsRequests = "CNI metrics requests"
	StatCNIMetricsErrors   = "CNI metrics errors"
)

// CNIFacts are the aws-node pods and what their ipamd said, by node name.
type CNIFacts struct {
	Nodes map[string]*CNINode
	// listed: the add-on section's list of aws-node's pods filled Nodes already.
	listed bool
}

// CNINode is one node's aws-node pod and its ipamd figures.
type CNINode struct {
	// Pod is "namespace/name" of the node's aws-node pod; Ready its Ready condition.
	Pod   string
	Ready bool
	// Metrics are ipamd's figures (nil: not read, Err says why).
	Metrics *IPAMDMetrics
	Err     string
	ip      string
	port    int
}

// IPAMDMetrics are the figures of one ipamd, as ipamdmetrics read them.
type IPAMDMetrics struct {
	ipamdmetrics.Figures
}

// Warm is the addresses in the pool no pod holds.
func (m *IPAMDMetrics) Warm() int { return max(m.TotalIPs-m.AssignedIPs, 0) }

// PoolText describes the pool for evidence lines.
func (m *IPAMDMetrics) PoolText() string {
	if !m.HasPool {
		return "ipamd has not published its address pool yet"
	}
	return fmt.Sprintf("address pool %d (%d assigned, %d warm) of at most %d; ENIs %d of at most %d",
		m.TotalIPs, m.AssignedIPs, m.Warm(), m.MaxIPs, m.ENIs, m.MaxENIs)
}

// cniMetrics finds the aws-node pods (the DaemonSet's selector) and reads each Ready one's ipamd
// metrics through the pod proxy.
func (g *gatherer) cniMetrics(ctx context.Context) error {
	a := g.f.AWSNode
	ns := g.o.AWSNodeNamespace
	if g.f.CNI.Nodes == nil {
		g.f.CNI.Nodes = map[string]*CNINode{}
	}
	switch {
	case !g.f.Has(FactAWSNode):
		g.f.miss(FactCNIMetrics, a.Resource, g.f.Missing[FactAWSNode].Reason)
		return nil
	case !a.Found || a.Selector == "":
		return nil // no VPC CNI: nothing to read, nothing to judge
	}
	if err := g.listAWSNodePods(ctx, a.Selector, ns); err != nil || !g.f.CNI.listed {
		return err
	}
	return g.readCNIMetrics(ctx, ns)
}

// listAWSNodePods lists aws-node's pods unless the add-on section's list of the same pods
// (gather_addons.go) already kept them.
func (g *gatherer) listAWSNodePods(ctx context.Context, selector, ns string) error {
	if g.f.CNI.listed {
		return nil
	}
	_, err := listBudgeted(ctx, "aws-node pods", metav1.ListOptions{Limit: g.o.ChunkSize, LabelSelector: selector}, g.o.pageBytes,
		g.d.Bulk.CoreV1().Pods(ns).List, func(l *corev1.PodList) error {
			for i := range l.Items {
				g.addAWSNodePod(&l.Items[i])
			}
			l.Items = nil
			return nil
		})
	if failed, err := g.failed(err, FactCNIMetrics, "pods", "needs list on pods in "+ns, "listing the aws-node pods"); failed {
		return err
	}
	g.f.CNI.listed = true
	return nil
}

// readCNIMetrics reads each Ready aws-node pod's ipamd metrics through the pod proxy.
func (g *gatherer) readCNIMetrics(ctx context.Context, ns string) error {
	g.f.stat(StatAWSNodePods, int64(len(g.f.CNI.Nodes)))
	var ready []*CNINode
	for _, name := range sortedKeys(g.f.CNI.Nodes) {
		if c := g.f.CNI.Nodes[name]; c.Ready && c.ip != "" {
			ready = append(ready, c)
		} else if c.Ready {
			c.Err = "the aws-node pod has no IP"
		}
	}
	if len(ready) == 0 {
		return nil
	}
	proxy := g.d.Proxy
	if proxy == nil {
		proxy = g.d.REST
	}
	if proxy == nil {
		g.f.miss(FactCNIMetrics, "pods/proxy", "no client for the pod proxy")
		return nil
	}
	allowed, reason, err := g.r.CanI(ctx, authorizationv1.ResourceAttributes{Verb: "get", Resource: "pods", Subresource: "proxy", Namespace: ns})
	if err != nil {
		klog.ErrorS(err, "SelfSubjectAccessReview for pods/proxy failed; trying the requests")
		allowed = true
	}
	if !allowed {
		g.f.miss(FactCNIMetrics, "pods/proxy", "needs get on pods/proxy in "+ns+" ("+reason+")")
		return nil
	}
	var errs, requests atomic.Int64
	clusterread.EachBounded(ctx, g.o.CNIMetricsWorkers, len(ready), g.o.CNIMetricsProgress, func(i int) {
		c := ready[i]
		c.Metrics, c.Err = g.readIPAMD(ctx, proxy, ns, c, &requests)
	})
	for _, c := range ready {
		if c.Metrics == nil && c.Err == "" {
			c.Err = "not read: " + context.Cause(ctx).Error()
		}
		if c.Err != "" {
			errs.Add(1)
		}
	}
	g.f.stat(StatCNIMetricsRequests, requests.Load())
	g.f.stat(StatCNIMetricsErrors, errs.Load())
	return nil
}

// addAWSNodePod keeps what the checks need of one aws-node pod. A node with two (a rolling
// update) keeps the Ready one, else the later name.
func (g *gatherer) addAWSNodePod(p *corev1.Pod) {
	if p.Spec.NodeName == "" || p.DeletionTimestamp != nil {
		return
	}
	c := &CNINode{Pod: p.Namespace + "/" + p.Name, Ready: podReady(p), ip: p.Status.PodIP, port: DefaultIPAMDMetricsPort}
	if ctr := clusterread.AWSNodeContainer(p.Spec.Containers); ctr != nil {
		for _, cp := range ctr.Ports {
			if cp.Name == "metrics" && cp.ContainerPort > 0 {
				c.port = int(cp.ContainerPort)
			}
		}
	}
	if old := g.f.CNI.Nodes[p.Spec.NodeName]; old != nil && (old.Ready && !c.Ready || old.Ready == c.Ready && old.Pod > c.Pod) {
		return
	}
	g.f.CNI.Nodes[p.Spec.NodeName] = c
}

func podReady(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// readIPAMD reads one ipamd's metrics through the pod proxy, once, bounded.
func (g *gatherer) readIPAMD(ctx context.Context, proxy rest.Interface, ns string, c *CNINode, requests *atomic.Int64) (*IPAMDMetrics, string) {
	if ctx.Err() != nil {
		return nil, ctx.Err().Error()
	}
	requests.Add(1)
	ctx, cancel := context.WithTimeout(ctx, g.o.ConfigzTimeout)
	defer cancel()
	_, name, _ := strings.Cut(c.Pod, "/")
	raw, err := clusterread.ReadBounded(ctx, proxy.Get().AbsPath("/api/v1/namespaces", ns, "pods", name+":"+strconv.Itoa(c.port), "proxy", "metrics"), maxCNIMetricsBytes, "an ipamd /metrics answer")
	switch {
	case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "pods/proxy"):
		return nil, "forbidden: needs get on pods/proxy in " + ns
	case err != nil:
		return nil, clusterread.ProxyFailure(err)
	}
	m, err := ParseIPAMDMetrics(ctx, raw)
	if err != nil {
		return nil, "metrics refused: " + textsafe.ClipRaw(err.Error(), 200)
	}
	return m, ""
}

// ParseIPAMDMetrics reads ipamd's figures from its /metrics answer within ipamdmetrics' bounds;
// an error (malformed, beyond a bound, a refused value, the context's end) says why the node's
// figures were refused.
func ParseIPAMDMetrics(ctx context.Context, raw []byte) (*IPAMDMetrics, error) {
	f, err := ipamdmetrics.Parse(ctx, raw)
	if err != nil {
		return nil, err
	}
	return &IPAMDMetrics{Figures: *f}, nil
}

// countsText writes "A 3, B 1" in descending count order (then by name).
func countsText(m map[string]int) string {
	keys := sortedKeys(m)
	sort.SliceStable(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
