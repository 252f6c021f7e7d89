package doctor

import (
	"context"
	"fmt"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodekeeper/nodekeeper/internal/clusterread"
	"github.com/nodekeeper/nodekeeper/internal/kube"
	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// The "Pod networking" section reads, with a bounded number of LIST requests whatever the
// cluster's size (each paginated; never a request per node):
//
//   - Pods twice: status.phase=Pending (the stuck ones) and status.phase=Running (the VPC
//     addresses each node's pods hold). Two field-selected lists instead of one of everything so
//     that Succeeded/Failed pods, which can be most of a batch cluster, never leave etcd.
//   - core/v1 Events with reason=FailedCreatePodSandBox. core/v1 rather than events.k8s.io/v1:
//     the kubelet records through the core/v1 event recorder, so count, firstTimestamp and
//     lastTimestamp are filled where events.k8s.io/v1 only shows them as deprecated* fields, and
//     the reason field selector works the same on every server version.
//   - CertificateSigningRequests (kubernetes.io/kubelet-serving), CSINodes, and when served
//     CNINodes (vpcresources.k8s.aws) and ENIConfigs (crd.k8s.amazonaws.com) through the dynamic
//     client, plus Karpenter's Deployment and its old settings ConfigMap (label/field selected).

// Well-known names of the objects the section reads.
const (
	LabelENIConfig         = clusterread.LabelENIConfig
	defaultENIConfigName   = "default"
	kubeletServingSigner   = "kubernetes.io/kubelet-serving"
	reasonSandboxFailed    = "FailedCreatePodSandBox"
	DefaultStuckAfter      = 2 * time.Minute
	DefaultCSRPendingAfter = 5 * time.Minute
)

var (
	gvrCNINode = schema.GroupVersionResource{Group: "vpcresources.k8s.aws", Version: "v1alpha1", Resource: "cninodes"}
)

// Stats of the section.
const (
	StatPodsListed     = "pods listed"
	StatStuckPods      = "stuck pods"
	StatSandboxEvents  = "sandbox events"
	StatPodListPages   = "pod list pages"
	StatEventListPages = "event list pages"
)

// csrSettled reports whether a CSR needs nothing more: denied, failed, or approved and signed.
// An approved request without a certificate is not settled: its signer refused or never came.
func csrSettled(c *certificatesv1.CertificateSigningRequest) bool {
	for _, cond := range c.Status.Conditions {
		switch cond.Type {
		case certificatesv1.CertificateDenied, certificatesv1.CertificateFailed:
			return true
		}
	}
	return csrApproved(c) && len(c.Status.Certificate) > 0
}

func csrApproved(c *certificatesv1.CertificateSigningRequest) bool {
	for _, cond := range c.Status.Conditions {
		if cond.Type == certificatesv1.CertificateApproved {
			return true
		}
	}
	return false
}

// hostnameHint connects a pending serving CSR with a hard-coded hostname (bundle NK631): EKS's
// approver signs only names and addresses that match the EC2 instance, so a Node whose name is
// not an EC2 private DNS name (ip-…/i-… in *.compute.internal or ec2.internal) is the likely cause.
func hostnameHint(n *corev1.Node) string {
	name := n.Name
	if strings.HasSuffix(name, ".compute.internal") || strings.HasSuffix(name, ".ec2.internal") {
		return ""
	}
	var dns []string
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalDNS || a.Type == corev1.NodeHostName {
			if a.Address != name {
				dns = append(dns, a.Address)
			}
		}
	}
	hint := fmt.Sprintf("the node name %q is not an EC2 private DNS name: a hostname hard-coded in the bootstrap script (nodekeeper bundle NK631) makes EKS refuse the serving certificate", name)
	if len(dns) > 0 {
		hint += "; the instance's names: " + textsafe.ClipRaw(strings.Join(dns, ", "), 200)
	}
	return hint
}

// selectedENIConfig is the ENIConfig ipamd uses on a node, in the VPC CNI's order: the
// k8s.amazonaws.com/eniConfig label, the ENI_CONFIG_ANNOTATION_DEF annotation, the
// ENI_CONFIG_LABEL_DEF label (usually the zone), else the ENIConfig named "default".
func selectedENIConfig(n *corev1.Node, labelDef, annotationDef string) (name, from string) {
	if v := n.Labels[LabelENIConfig]; v != "" {
		return v, "label " + LabelENIConfig
	}
	if annotationDef != "" {
		if v := n.Annotations[annotationDef]; v != "" {
			return v, "annotation " + annotationDef + " (ENI_CONFIG_ANNOTATION_DEF)"
		}
	}
	if labelDef != "" {
		if v := n.Labels[labelDef]; v != "" {
			return v, "label " + labelDef + " (ENI_CONFIG_LABEL_DEF)"
		}
	}
	return defaultENIConfigName, "no label: the default"
}

// pods reads the Pending and Running pods, then, when some are stuck, the sandbox failure
// events; what is kept is bounded by the stuck pods and the node count.
func (g *gatherer) pods(ctx context.Context) error {
	st := newPodNetState(g.f.Now, g.o.StuckAfter)
	var pages, listed int64
	for _, phase := range []corev1.PodPhase{corev1.PodPending, corev1.PodRunning} {
		opts := metav1.ListOptions{Limit: g.o.ChunkSize, FieldSelector: fields.OneTermEqualSelector("status.phase", string(phase)).String()}
		n, err := listBudgeted(ctx, "pods "+string(phase), opts, g.o.pageBytes, g.d.Bulk.CoreV1().Pods("").List, func(l *corev1.PodList) error {
			for i := range l.Items {
				st.addPod(&l.Items[i])
			}
			listed += int64(len(l.Items))
			l.Items = nil // the page is garbage before the next one is read
			return nil
		})
		pages += n
		if failed, err := g.failed(err, FactPods, "pods", "needs list on pods", ""); failed {
			return err
		}
	}
	g.f.stat(StatPodsListed, listed)
	g.f.stat(StatPodListPages, pages)
	g.f.stat(StatStuckPods, int64(len(st.stuck)))
	g.f.Pods = PodFacts{VPCPods: st.vpcPods, Stuck: st.stuck}

	var events, eventPages int64
	if len(st.stuck) > 0 {
		var err error
		eventPages, err = g.listEvents(ctx, reasonSandboxFailed, fields.OneTermEqualSelector("reason", reasonSandboxFailed), func(e *corev1.Event) {
			st.addEvent(e)
			events++
		})
		g.f.stat(StatEventListPages, eventPages)
		// Without the events the stuck pods are still reported, without their cause.
		if _, err := g.failed(err, FactEvents, "events", "needs list on events", ""); err != nil {
			return err
		}
	}
	g.f.stat(StatSandboxEvents, events)
	return nil
}

// csrs reads the kubelet-serving certificate signing requests that are not settled.
func (g *gatherer) csrs(ctx context.Context) error {
	opts := metav1.ListOptions{Limit: g.o.ChunkSize, FieldSelector: fields.OneTermEqualSelector("spec.signerName", kubeletServingSigner).String()}
	var out []ServingCSR
	err := kube.List(ctx, "certificatesigningrequests", opts, g.d.Client.CertificatesV1().CertificateSigningRequests().List, func(l *certificatesv1.CertificateSigningRequestList) error {
		for i := range l.Items {
			c := &l.Items[i]
			if c.Spec.SignerName != kubeletServingSigner || csrSettled(c) {
				continue
			}
			out = append(out, ServingCSR{Name: c.Name, Username: c.Spec.Username, Groups: c.Spec.Groups, Created: c.CreationTimestamp.Time, Approved: csrApproved(c)})
		}
		return nil
	})
	if failed, err := g.failed(err, FactCSRs, "certificatesigningrequests", "needs list on certificatesigningrequests", "listing kubelet-serving certificate signing requests"); failed {
		return err
	}
	g.f.CSRs = out
	return nil
}

// servedResource reports whether the API server serves gvr (CRDs that may not be installed).
func (g *gatherer) servedResource(gvr schema.GroupVersionResource) (bool, error) {
	l, err := g.d.Client.Discovery().ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discovering %s: %w", gvr.GroupVersion(), err)
	}
	for _, res := range l.APIResources {
		if res.Name == gvr.Resource {
			return true, nil
		}
	}
	return false, nil
}

// listAll lists a dynamic resource page by page, handing each item to fn.
func (g *gatherer) listAll(ctx context.Context, gvr schema.GroupVersionResource, fn func(*unstructured.Unstructured)) error {
	return kube.List(ctx, gvr.Resource, metav1.ListOptions{Limit: g.o.ChunkSize}, g.d.Dynamic.Resource(gvr).List, func(l *unstructured.UnstructuredList) error {
		for i := range l.Items {
			fn(&l.Items[i])
		}
		return nil
	})
}

func (g *gatherer) eniConfigs(ctx context.Context) error {
	l, err := g.r.ENIConfigs(ctx)
	if failed, err := g.failed(err, FactENIConfigs, "eniconfigs", "", ""); failed {
		return err
	}
	if !l.Served {
		return nil
	}
	items := make([]ENIConfig, len(l.Items))
	for i, c := range l.Items {
		items[i] = ENIConfig(c)
	}
	g.f.ENIConfigs = ENIConfigFacts{Served: true, Items: items}
	return nil
}

func (g *gatherer) csiNodes(ctx context.Context) error {
	var out []NodeScoped
	err := kube.List(ctx, "csinodes", metav1.ListOptions{Limit: g.o.ChunkSize}, g.d.Client.StorageV1().CSINodes().List, func(l *storagev1.CSINodeList) error {
		for _, c := range l.Items {
			out = append(out, NodeScoped{Name: c.Name, Owners: c.OwnerReferences})
		}
		return nil
	})
	if failed, err := g.failed(err, FactCSINodes, "csinodes", "needs list on csinodes", ""); failed {
		return err
	}
	g.f.CSINodes = out
	return nil
}

func (g *gatherer) cniNodes(ctx context.Context) error {
	served, err := g.servedResource(gvrCNINode)
	if err != nil || !served {
		return err
	}
	var out []NodeScoped
	err = g.listAll(ctx, gvrCNINode, func(u *unstructured.Unstructured) {
		out = append(out, NodeScoped{Name: u.GetName(), Owners: u.GetOwnerReferences()})
	})
	if failed, err := g.failed(err, FactCNINodes, "cninodes", "needs list on cninodes.vpcresources.k8s.aws", "listing CNINodes"); failed {
		return err
	}
	g.f.CNINodes = NodeScopedFacts{Served: true, Items: out}
	return nil
}

// karpenter finds Karpenter's reservedENIs setting (clusterread.Reader.Karpenter: its
// Deployment's RESERVED_ENIS, else the karpenter-global-settings ConfigMap in the Deployment's
// namespace, or in karpenter and kube-system when no Deployment is visible). The reads RBAC
// forbade leave FactKarpenter missing with the first one's verb and resource; what could be
// read is kept.
func (g *gatherer) karpenter(ctx context.Context) error {
	k, err := g.r.Karpenter(ctx)
	if err != nil {
		return err
	}
	g.f.Karpenter = KarpenterFacts{Found: k.Found, ReservedENIs: k.ReservedENIs, Source: k.Source}
	if len(k.Unread) > 0 {
		g.f.miss(FactKarpenter, k.Unread[0].Resource, k.Unread[0].Reason)
	}
	return nil
}
