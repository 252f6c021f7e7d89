package doctor

import (
	"context"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"

	"github.com/nodekeeper/nodekeeper/internal/clusterread"
	"github.com/nodekeeper/nodekeeper/internal/rules"
	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// One node, judged as doctor judges every node: `nodekeeper explain` reads a single node's
// objects itself (a GET of the Node and of its lease, field-selected LISTs of its pods and
// events) and hands them here, so that the findings it prints carry the codes, messages and
// remediations doctor's checks give, and no rule is written twice. These are the only doctor
// functions explain calls besides ReadConfigz, ParseIPAMDMetrics, CheckEC2 and
// CheckTemplateVersion; a shared reader of cluster state can take their place later.

// NodeInput is what was read about one node. A nil Node means the Node does not exist (a zombie
// or leaked lease); Missing names the facts whose reads were refused or failed, with the verb
// and resource, so the checks that need them report themselves skipped.
type NodeInput struct {
	Options Options
	Now     time.Time
	Node    *corev1.Node
	Lease   *coordinationv1.Lease
	// Pods are the pods bound to the node; SandboxEvents the FailedCreatePodSandBox events of
	// those that wait (other events are ignored).
	Pods          []corev1.Pod
	SandboxEvents []corev1.Event
	// AWSNode is the VPC CNI DaemonSet (nil: not installed or not read).
	AWSNode *appsv1.DaemonSet
	// Configz is the kubelet's /configz answer, or ConfigzErr why it was not read.
	Configz    []byte
	ConfigzErr string
	// IPAMD are the figures of the node's aws-node pod (nil: IPAMDErr says why).
	IPAMD    *IPAMDMetrics
	IPAMDErr string
	Missing  map[Fact]Missing
}

// NodeFacts turns one node's reads into the Facts doctor's checks judge, with that node alone.
func NodeFacts(in NodeInput) *Facts {
	o := in.Options
	o.defaults()
	f := &Facts{Settings: o.Settings(), Now: in.Now, Stats: map[string]int64{}, Configz: map[string]clusterread.ConfigzResult{}, CNI: CNIFacts{Nodes: map[string]*CNINode{}}}
	for fact, m := range in.Missing {
		f.miss(fact, m.Resource, m.Reason)
	}
	if in.Node != nil {
		f.Nodes = []corev1.Node{*in.Node}
	}
	if in.Lease != nil {
		f.Leases = []coordinationv1.Lease{*in.Lease}
	}
	f.AWSNode = AWSNodeFactsOf(in.AWSNode, "daemonset/"+o.AWSNodeNamespace+"/"+o.AWSNodeName)
	st := newPodNetState(in.Now, o.StuckAfter)
	for i := range in.Pods {
		p := &in.Pods[i]
		st.addPod(p)
		if f.AWSNode.Found && p.Namespace == o.AWSNodeNamespace && isAWSNodePod(p, in.AWSNode) {
			g := gatherer{f: f}
			g.addAWSNodePod(p)
		}
	}
	for i := range in.SandboxEvents {
		st.addEvent(&in.SandboxEvents[i])
	}
	f.Pods = PodFacts{VPCPods: st.vpcPods, Stuck: st.stuck}
	if in.Node != nil {
		switch {
		case in.Configz != nil:
			if c, err := rules.ParseConfigz(in.Configz); err != nil {
				f.Configz[in.Node.Name] = clusterread.ConfigzResult{Err: err.Error()}
			} else {
				f.Configz[in.Node.Name] = clusterread.ConfigzResult{Config: &c}
			}
		case in.ConfigzErr != "":
			f.Configz[in.Node.Name] = clusterread.ConfigzResult{Err: in.ConfigzErr}
		}
		if c := f.CNI.Nodes[in.Node.Name]; c != nil {
			c.Metrics, c.Err = in.IPAMD, in.IPAMDErr
		}
	}
	return f
}

// isAWSNodePod reports whether p is one of the DaemonSet's pods (by its owner, else its labels).
func isAWSNodePod(p *corev1.Pod, ds *appsv1.DaemonSet) bool {
	for _, o := range p.OwnerReferences {
		if o.Kind == "DaemonSet" && o.Name == ds.Name {
			return true
		}
	}
	sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil || sel.Empty() {
		return false
	}
	return sel.Matches(labels.Set(p.Labels))
}

// AWSNodeFactsOf is what the checks read of the aws-node DaemonSet (nil: not found).
func AWSNodeFactsOf(ds *appsv1.DaemonSet, resource string) AWSNodeFacts {
	return awsNodeFacts(clusterread.AWSNodeOf(ds, resource))
}

// AWSNodePodOf is the aws-node pod among a node's pods (nil: none): the Ready one, else the
// later name, as doctor picks it.
func AWSNodePodOf(pods []corev1.Pod, ds *appsv1.DaemonSet) *corev1.Pod {
	if ds == nil {
		return nil
	}
	var best *corev1.Pod
	for i := range pods {
		p := &pods[i]
		if p.Namespace != ds.Namespace || p.DeletionTimestamp != nil || !isAWSNodePod(p, ds) {
			continue
		}
		if best == nil || podReady(p) && !podReady(best) || podReady(p) == podReady(best) && p.Name > best.Name {
			best = p
		}
	}
	return best
}

// ReadIPAMD reads one aws-node pod's ipamd metrics through the pod proxy, once, bounded, as
// doctor reads each node's; the string says why when they were not read.
func ReadIPAMD(ctx context.Context, proxy rest.Interface, pod *corev1.Pod, timeout time.Duration) (*IPAMDMetrics, string) {
	g := gatherer{f: &Facts{CNI: CNIFacts{Nodes: map[string]*CNINode{}}}}
	g.addAWSNodePod(pod)
	c := g.f.CNI.Nodes[pod.Spec.NodeName]
	switch {
	case c == nil:
		return nil, "not an aws-node pod on a node"
	case !c.Ready:
		return nil, "the aws-node pod is not ready"
	case c.ip == "":
		return nil, "the aws-node pod has no IP"
	}
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	raw, err := clusterread.ReadBounded(ctx, proxy.Get().AbsPath("/api/v1/namespaces", pod.Namespace, "pods", pod.Name+":"+strconv.Itoa(c.port), "proxy", "metrics"), maxCNIMetricsBytes, "an ipamd /metrics answer")
	switch {
	case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "pods/proxy"):
		return nil, "forbidden: needs get on pods/proxy in " + pod.Namespace
	case err != nil:
		return nil, clusterread.ProxyFailure(err)
	}
	m, err := ParseIPAMDMetrics(ctx, raw)
	if err != nil {
		return nil, textsafe.ClipRaw(err.Error(), 200)
	}
	return m, ""
}

// NodeChecks are the checks that judge one node: its kubelet's configuration and pod capacity,
// its lease, its stuck pods and their measured cause, its ipamd's counters. The cluster-wide
// ones (API server, add-ons, CSRs, ENIConfigs) are not among them.
func NodeChecks() []Check {
	return []Check{kubeletConfigCheck{}, podCapacityCheck{}, heartbeatCheck{}, stuckPodsCheck{}, cniMetricsCheck{}, stuckCauseCheck{}}
}
