package explain

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/nodekeeper/nodekeeper/internal/clusterread"
	"github.com/nodekeeper/nodekeeper/internal/doctor"
	"github.com/nodekeeper/nodekeeper/internal/kube"
	"github.com/nodekeeper/nodekeeper/internal/lease"
	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// Bounds of what one node's reads keep: a node runs at most a few hundred pods, and Events are
// kept per object by the API server; past these the story says how many were left out.
const (
	maxPods          = 2000
	maxEvents        = 200
	maxSandboxNS     = 8
	maxMessage       = 300
	maxStuckOnStory  = 20
	defaultPageLimit = 500
)

// cluster is what readCluster read, for the judging.
type cluster struct {
	pods          []corev1.Pod
	sandboxEvents []corev1.Event
	awsNode       *appsv1.DaemonSet
	configz       []byte
	configzErr    string
	ipamd         *doctor.IPAMDMetrics
	ipamdErr      string
	missing       map[doctor.Fact]doctor.Missing
}

// readCluster reads the node's objects: the Node and lease were read by resolve; here its pods
// (spec.nodeName), the Events on the Node (involvedObject), the sandbox failures of its stuck
// pods (reason, in their namespaces), aws-node, its kubelet's configz and its ipamd's metrics.
func (t *teller) readCluster(ctx context.Context) error {
	c := &cluster{missing: map[doctor.Fact]doctor.Missing{}}
	t.cl = c
	name := t.s.Target.Node
	t.tellNode()
	t.tellLease()
	if name == "" {
		return nil
	}
	// The pods bound to the node.
	opts := metav1.ListOptions{Limit: t.o.ChunkSize, FieldSelector: fields.OneTermEqualSelector("spec.nodeName", name).String()}
	err := kube.List(ctx, "pods on "+name, opts, t.d.Bulk.CoreV1().Pods("").List, func(l *corev1.PodList) error {
		for i := range l.Items {
			if len(c.pods) < maxPods {
				c.pods = append(c.pods, l.Items[i])
			}
		}
		return nil
	})
	if err := t.readFailed(err, SourcePod, "list", "pods (spec.nodeName="+name+")", doctor.FactPods); err != nil {
		return err
	}
	// The Events on the Node.
	opts = metav1.ListOptions{Limit: maxEvents, FieldSelector: fields.AndSelectors(
		fields.OneTermEqualSelector("involvedObject.kind", "Node"),
		fields.OneTermEqualSelector("involvedObject.name", name)).String()}
	var nodeEvents []corev1.Event
	l, err := t.d.Bulk.CoreV1().Events("").List(ctx, opts)
	if err == nil {
		nodeEvents = l.Items
	}
	if err := t.readFailed(err, SourceEvent, "list", "events (involvedObject.name="+name+")", ""); err != nil {
		return err
	}
	for i := range nodeEvents {
		t.tellEvent(&nodeEvents[i])
	}
	// aws-node, whose pod on this node has ipamd's figures.
	ns, dsName := t.o.Doctor.AWSNodeNamespace, t.o.Doctor.AWSNodeName
	if ns == "" {
		ns = "kube-system"
	}
	if dsName == "" {
		dsName = "aws-node"
	}
	ds, err := t.d.Client.AppsV1().DaemonSets(ns).Get(ctx, dsName, metav1.GetOptions{})
	switch {
	case err == nil:
		c.awsNode = ds
	case apierrors.IsNotFound(err):
	default:
		if err := t.readFailed(err, SourceIPAMD, "get", "daemonsets/"+dsName+" in "+ns, doctor.FactAWSNode); err != nil {
			return err
		}
		c.missing[doctor.FactCNIMetrics] = c.missing[doctor.FactAWSNode]
	}
	// Stuck pods, with the sandbox failures of their namespaces.
	stuck := t.stuckPods()
	if len(stuck) > 0 {
		t.readSandboxEvents(ctx, stuck)
	}
	t.tellPods(stuck)
	// The kubelet's configuration and ipamd's figures, through the API server's proxies.
	if t.node != nil && nodeReady(t.node.n) && t.d.REST != nil {
		cctx, cancel := context.WithTimeout(ctx, timeoutOr(t.o.Doctor.ConfigzTimeout))
		raw, err := clusterread.ReadConfigz(cctx, t.d.REST, name)
		cancel()
		switch {
		case err == nil:
			c.configz = raw
		case apierrors.IsForbidden(err):
			t.gap(SourceConfigz, "get", "nodes/"+name+"/proxy/configz", err)
			c.missing[doctor.FactConfigz] = doctor.Missing{Resource: "nodes/proxy", Reason: "needs get on nodes/proxy"}
		default:
			c.configzErr = clusterread.ProxyFailure(err)
			t.add(t.now, SourceConfigz, "", "kubelet configuration not read: %s", c.configzErr)
		}
	}
	if pod := doctor.AWSNodePodOf(c.pods, c.awsNode); pod != nil && t.node != nil {
		proxy := t.d.Proxy
		if proxy == nil {
			proxy = t.d.REST
		}
		if proxy != nil {
			c.ipamd, c.ipamdErr = doctor.ReadIPAMD(ctx, proxy, pod, t.o.Doctor.ConfigzTimeout)
			switch {
			case strings.HasPrefix(c.ipamdErr, "forbidden"):
				t.gap(SourceIPAMD, "get", "pods/"+pod.Name+":proxy/metrics in "+pod.Namespace, fmt.Errorf("%s", c.ipamdErr))
				c.missing[doctor.FactCNIMetrics] = doctor.Missing{Resource: "pods/proxy", Reason: c.ipamdErr}
			case c.ipamd != nil:
				m := c.ipamd
				t.add(t.now, SourceIPAMD, "", "ipamd (%s/%s): %s; no address for %d pod address requests; EC2 API errors: %s",
					pod.Namespace, pod.Name, m.PoolText(), m.NoAddress, countText(m.EC2Errors))
			}
		}
	}
	return nil
}

// readFailed turns a failed read into a gap (forbidden, or any error but a dead API server),
// marking fact missing for doctor's checks; it returns the error only when the API server
// cannot be used at all.
func (t *teller) readFailed(err error, source, verb, resource string, fact doctor.Fact) error {
	if err == nil {
		return nil
	}
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		// No answer from the API server at all: nothing else would be read either.
		return fmt.Errorf("%s %s: %w", verb, resource, err)
	}
	t.gap(source, verb, resource, err)
	if fact != "" {
		t.cl.missing[fact] = doctor.Missing{Resource: resource, Reason: "needs " + verb + " on " + strings.SplitN(resource, " ", 2)[0]}
	}
	return nil
}

// stuckPods are the node's pods waiting in ContainerCreating longer than doctor's stuck-after,
// as doctor counts them.
func (t *teller) stuckPods() []doctor.StuckPod {
	f := doctor.NodeFacts(doctor.NodeInput{Options: t.o.Doctor, Now: t.now, Pods: t.cl.pods})
	var out []doctor.StuckPod
	for _, p := range f.Pods.Stuck {
		out = append(out, *p)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Since.Equal(out[j].Since) {
			return out[i].Since.Before(out[j].Since)
		}
		return out[i].Namespace+"/"+out[i].Name < out[j].Namespace+"/"+out[j].Name
	})
	return out
}

// readSandboxEvents lists the FailedCreatePodSandBox events of the stuck pods' namespaces (at
// most maxSandboxNS namespaces, one LIST each, field-selected by reason).
func (t *teller) readSandboxEvents(ctx context.Context, stuck []doctor.StuckPod) {
	nss := map[string]bool{}
	for _, p := range stuck {
		nss[p.Namespace] = true
	}
	var names []string
	for ns := range nss {
		names = append(names, ns)
	}
	sort.Strings(names)
	if len(names) > maxSandboxNS {
		names = names[:maxSandboxNS]
	}
	// An Event names its pod by namespace, name and UID: a pod of the same name before this one
	// (another node's, deleted since) left Events that are not this pod's story.
	uids := map[string]string{}
	for i := range t.cl.pods {
		p := &t.cl.pods[i]
		uids[p.Namespace+"/"+p.Name] = string(p.UID)
	}
	onNode := map[string]bool{}
	for _, p := range stuck {
		onNode[p.Namespace+"/"+p.Name] = true
	}
	for _, ns := range names {
		opts := metav1.ListOptions{Limit: maxEvents, FieldSelector: fields.AndSelectors(
			fields.OneTermEqualSelector("involvedObject.kind", "Pod"),
			fields.OneTermEqualSelector("reason", "FailedCreatePodSandBox")).String()}
		l, err := t.d.Bulk.CoreV1().Events(ns).List(ctx, opts)
		if err != nil {
			_ = t.readFailed(err, SourceEvent, "list", "events in "+ns+" (reason=FailedCreatePodSandBox)", doctor.FactEvents)
			continue
		}
		for _, e := range l.Items {
			key := e.InvolvedObject.Namespace + "/" + e.InvolvedObject.Name
			if onNode[key] && (e.InvolvedObject.UID == "" || string(e.InvolvedObject.UID) == uids[key]) {
				t.cl.sandboxEvents = append(t.cl.sandboxEvents, e)
				t.tellEvent(&e)
			}
		}
	}
}

// tellNode puts the Node's life on the timeline: creation, conditions, taints, deletion.
func (t *teller) tellNode() {
	if t.node == nil {
		return
	}
	n := t.node.n
	src := SourceNode
	t.add(n.CreationTimestamp.Time, src, "", "Node %s created (providerID %s, kubelet %s)", n.Name, orNone(n.Spec.ProviderID), orNone(n.Status.NodeInfo.KubeletVersion))
	for _, c := range n.Status.Conditions {
		if c.LastTransitionTime.IsZero() {
			continue
		}
		if c.Type == corev1.NodeReady || c.Status == corev1.ConditionTrue {
			what := fmt.Sprintf("condition %s=%s", c.Type, c.Status)
			if c.Reason != "" {
				what += " (" + c.Reason + ")"
			}
			if c.Message != "" {
				what += ": " + textsafe.ClipRaw(c.Message, maxMessage)
			}
			t.add(c.LastTransitionTime.Time, src, "", "%s", what)
		}
	}
	for _, tn := range n.Spec.Taints {
		at := n.CreationTimestamp.Time
		if tn.TimeAdded != nil {
			at = tn.TimeAdded.Time
		}
		t.add(at, src, "", "taint %s=%s:%s", tn.Key, tn.Value, tn.Effect)
	}
	if n.DeletionTimestamp != nil {
		t.add(n.DeletionTimestamp.Time, src, "", "Node being deleted (finalizers %v)", n.Finalizers)
	}
}

// tellLease puts the lease on the timeline, with its class now.
func (t *teller) tellLease() {
	if t.lease == nil {
		return
	}
	l := t.lease.l
	var ref *lease.NodeRef
	if t.node != nil {
		ref = &lease.NodeRef{Name: t.node.n.Name, UID: t.node.n.UID}
	}
	v := lease.Classify(l, ref, t.now, t.o.Lease)
	t.s.Target.LeaseClass = string(v.Class)
	owner := "no owner"
	if o := lease.NodeOwner(l); o != nil {
		owner = "owned by Node " + o.Name + " (uid " + string(o.UID) + ")"
	}
	holder := ""
	if l.Spec.HolderIdentity != nil {
		holder = *l.Spec.HolderIdentity
	}
	t.add(l.CreationTimestamp.Time, SourceLease, "", "lease %s/%s created, holder %s, %s", l.Namespace, l.Name, orNone(holder), owner)
	if !v.RenewTime.IsZero() {
		t.add(v.RenewTime, SourceLease, "", "lease last renewed; class %s: %s", v.Class, v.Reason)
	} else {
		t.add(t.now, SourceLease, "", "lease never renewed; class %s: %s", v.Class, v.Reason)
	}
}

// tellEvent puts one Event on the timeline.
func (t *teller) tellEvent(e *corev1.Event) {
	at := e.LastTimestamp.Time
	if !e.EventTime.IsZero() && e.EventTime.Time.After(at) {
		at = e.EventTime.Time
	}
	if at.IsZero() {
		at = e.CreationTimestamp.Time
	}
	count := ""
	if e.Count > 1 {
		count = fmt.Sprintf(" (×%d)", e.Count)
	}
	obj := strings.ToLower(e.InvolvedObject.Kind) + " " + e.InvolvedObject.Name
	if e.InvolvedObject.Namespace != "" {
		obj = strings.ToLower(e.InvolvedObject.Kind) + " " + e.InvolvedObject.Namespace + "/" + e.InvolvedObject.Name
	}
	t.add(at, SourceEvent, "", "%s %s on %s%s: %s", e.Type, e.Reason, obj, count, textsafe.ClipRaw(e.Message, maxMessage))
}

// tellPods puts the stuck pods on the timeline, each when it was scheduled.
func (t *teller) tellPods(stuck []doctor.StuckPod) {
	for i, p := range stuck {
		if i == maxStuckOnStory {
			t.add(p.Since, SourcePod, "", "and %d more pods stuck in ContainerCreating", len(stuck)-i)
			break
		}
		t.add(p.Since, SourcePod, "", "pod %s/%s scheduled, stuck in ContainerCreating since", p.Namespace, p.Name)
	}
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func timeoutOr(d time.Duration) time.Duration {
	if d <= 0 {
		return 10 * time.Second
	}
	return d
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// countText writes "A 3, B 1" in descending count order, or "none".
func countText(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
