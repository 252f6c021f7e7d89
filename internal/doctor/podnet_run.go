package doctor

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekeeper/nodekeeper/internal/findings"
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
	LabelENIConfig         = "k8s.amazonaws.com/eniConfig"
	defaultENIConfigName   = "default"
	karpenterSettingsCM    = "karpenter-global-settings"
	karpenterSettingsKey   = "aws.reservedENIs"
	karpenterEnvReserved   = "RESERVED_ENIS"
	karpenterAppLabel      = "app.kubernetes.io/name=karpenter"
	kubeletServingSigner   = "kubernetes.io/kubelet-serving"
	reasonSandboxFailed    = "FailedCreatePodSandBox"
	DefaultStuckAfter      = 2 * time.Minute
	DefaultCSRPendingAfter = 5 * time.Minute
)

var (
	gvrENIConfig = schema.GroupVersionResource{Group: "crd.k8s.amazonaws.com", Version: "v1alpha1", Resource: "eniconfigs"}
	gvrCNINode   = schema.GroupVersionResource{Group: "vpcresources.k8s.aws", Version: "v1alpha1", Resource: "cninodes"}
)

// Stats of the section.
const (
	StatPodsListed     = "podsListed"
	StatStuckPods      = "stuckPods"
	StatSandboxEvents  = "sandboxEvents"
	StatPodListPages   = "podListPages"
	StatEventListPages = "eventListPages"
)

// checkPodNetworking runs the section. nodes are the listed Nodes; info their capacity results.
func (r *runner) checkPodNetworking(ctx context.Context, nodes []corev1.Node, info map[string]NodeAddressInfo) error {
	st := newPodNetState(r.o.Now(), r.o.StuckAfter)
	var pages int
	var listed int64
	for _, phase := range []corev1.PodPhase{corev1.PodPending, corev1.PodRunning} {
		opts := metav1.ListOptions{Limit: r.o.ChunkSize, FieldSelector: fields.OneTermEqualSelector("status.phase", string(phase)).String()}
		err := kube.List(ctx, "pods "+string(phase), opts, r.bulk.CoreV1().Pods("").List, func(l *corev1.PodList) error {
			pages++
			for i := range l.Items {
				st.addPod(&l.Items[i])
			}
			listed += int64(len(l.Items))
			return nil
		})
		if apierrors.IsForbidden(err) {
			r.rep.Add(RuleSandboxNoAddress.Skip("pods", "needs list on pods"))
			return nil
		}
		if err != nil {
			return err
		}
	}
	r.rep.AddStat(StatPodsListed, listed)
	r.rep.AddStat(StatPodListPages, int64(pages))
	r.rep.AddStat(StatStuckPods, int64(len(st.stuck)))

	var events, eventPages int64
	if len(st.stuck) > 0 {
		opts := metav1.ListOptions{Limit: r.o.ChunkSize, FieldSelector: fields.OneTermEqualSelector("reason", reasonSandboxFailed).String()}
		err := kube.List(ctx, reasonSandboxFailed+" events", opts, r.bulk.CoreV1().Events("").List, func(l *corev1.EventList) error {
			eventPages++
			for i := range l.Items {
				st.addEvent(&l.Items[i])
			}
			events += int64(len(l.Items))
			return nil
		})
		r.rep.AddStat(StatEventListPages, eventPages)
		switch {
		case apierrors.IsForbidden(err):
			r.rep.Add(RuleSandboxOther.Skip("events", "needs list on events: stuck pods are reported without their cause"))
		case err != nil:
			return err
		}
	}
	r.rep.AddStat(StatSandboxEvents, events)
	r.rep.Checked(SectionPodNet, len(nodes))
	r.rep.Add(st.stuckFindings(info)...)

	if err := r.checkServingCSRs(ctx, nodes); err != nil {
		return err
	}
	if err := r.checkENIConfigs(ctx, nodes); err != nil {
		return err
	}
	return r.checkNodeScopedObjects(ctx, nodes)
}

// checkServingCSRs reports kubelet-serving CSRs that never produced a certificate, by node: those
// nobody approved, and those approved but never signed. The second is what EKS does (since 1.24) with
// a request whose DNS or IP names it cannot verify against the EC2 instance, such as a hard-coded
// hostname: the request shows Approved, yet the kubelet still has no serving certificate.
func (r *runner) checkServingCSRs(ctx context.Context, nodes []corev1.Node) error {
	type pending struct {
		names    []string
		unsigned int // approved, no certificate
		oldest   time.Time
	}
	byNode := map[string]*pending{}
	opts := metav1.ListOptions{Limit: r.o.ChunkSize, FieldSelector: fields.OneTermEqualSelector("spec.signerName", kubeletServingSigner).String()}
	now := r.o.Now()
	err := kube.List(ctx, "certificatesigningrequests", opts, r.client.CertificatesV1().CertificateSigningRequests().List, func(l *certificatesv1.CertificateSigningRequestList) error {
		for i := range l.Items {
			c := &l.Items[i]
			if c.Spec.SignerName != kubeletServingSigner || csrSettled(c) || now.Sub(c.CreationTimestamp.Time) < r.o.CSRPendingAfter {
				continue
			}
			node := strings.TrimPrefix(c.Spec.Username, "system:node:")
			p := byNode[node]
			if p == nil {
				p = &pending{oldest: c.CreationTimestamp.Time}
				byNode[node] = p
			}
			p.names = append(p.names, c.Name)
			if csrApproved(c) {
				p.unsigned++
			}
			if c.CreationTimestamp.Time.Before(p.oldest) {
				p.oldest = c.CreationTimestamp.Time
			}
		}
		return nil
	})
	if apierrors.IsForbidden(err) {
		r.rep.Add(RuleServingCSRPending.Skip("certificatesigningrequests", "needs list on certificatesigningrequests"))
		return nil
	}
	if err != nil {
		return fmt.Errorf("listing kubelet-serving certificate signing requests: %w", err)
	}
	known := map[string]*corev1.Node{}
	for i := range nodes {
		known[nodes[i].Name] = &nodes[i]
	}
	for _, node := range sortedKeys(byNode) {
		p := byNode[node]
		sort.Strings(p.names)
		state := "pending"
		switch {
		case p.unsigned == len(p.names):
			state = "approved but never signed"
		case p.unsigned > 0:
			state = fmt.Sprintf("pending (%d approved but never signed)", p.unsigned)
		}
		f := RuleServingCSRPending.New("node/"+textsafe.Escape(node), "%s %s, oldest %s: kubectl logs/exec and metrics to this node fail with \"no serving certificate available for the kubelet\"",
			plural(len(p.names), "kubelet-serving certificate request"), state, age(now, p.oldest))
		f = f.WithEvidence("requests: " + textsafe.Clip(strings.Join(p.names, ", "), 300))
		if n := known[node]; n != nil {
			if hint := hostnameHint(n); hint != "" {
				f = f.WithEvidence(hint)
			}
		} else {
			f = f.WithEvidence("no Node of this name: the kubelet registered under another name or its Node was deleted")
		}
		r.rep.Add(f)
	}
	return nil
}

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
	hint := fmt.Sprintf("the node name %q is not an EC2 private DNS name: a hostname hard-coded in the bootstrap script (nodekeeper bundle NK631) makes EKS refuse the serving certificate", textsafe.Escape(name))
	if len(dns) > 0 {
		hint += "; the instance's names: " + textsafe.Clip(strings.Join(dns, ", "), 200)
	}
	return hint
}

// servedResource reports whether the API server serves gvr (CRDs that may not be installed).
func (r *runner) servedResource(gvr schema.GroupVersionResource) (bool, error) {
	l, err := r.client.Discovery().ServerResourcesForGroupVersion(gvr.GroupVersion().String())
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
func (r *runner) listAll(ctx context.Context, gvr schema.GroupVersionResource, fn func(*unstructured.Unstructured)) error {
	return kube.List(ctx, gvr.Resource, metav1.ListOptions{Limit: r.o.ChunkSize}, r.dynamic.Resource(gvr).List, func(l *unstructured.UnstructuredList) error {
		for i := range l.Items {
			fn(&l.Items[i])
		}
		return nil
	})
}

// checkENIConfigs checks the custom networking objects: ENIConfigs with a subnet and security
// groups, and one for every node that selects one.
func (r *runner) checkENIConfigs(ctx context.Context, nodes []corev1.Node) error {
	served, err := r.servedResource(gvrENIConfig)
	if err != nil {
		return err
	}
	custom := r.mode.Settings.CustomNetworking
	res := "daemonset/" + r.o.AWSNodeNamespace + "/" + r.o.AWSNodeName
	if !served {
		if custom {
			r.rep.Add(RuleENIConfigMissing.New(res, "custom networking is on but the ENIConfig CRD (crd.k8s.amazonaws.com/v1alpha1) is not installed: no node can get pod addresses"))
		}
		return nil
	}
	configs := map[string]bool{}
	err = r.listAll(ctx, gvrENIConfig, func(u *unstructured.Unstructured) {
		configs[u.GetName()] = true
		subnet, _, _ := unstructured.NestedString(u.Object, "spec", "subnet")
		sgs, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "securityGroups")
		var missing []string
		if strings.TrimSpace(subnet) == "" {
			missing = append(missing, "spec.subnet")
		}
		if len(sgs) == 0 {
			missing = append(missing, "spec.securityGroups")
		}
		if len(missing) > 0 {
			r.rep.Add(RuleENIConfigIncomplete.New("eniconfig/"+textsafe.Escape(u.GetName()), "no %s", strings.Join(missing, " and no ")))
		}
	})
	if apierrors.IsForbidden(err) {
		r.rep.Add(RuleENIConfigMissing.Skip("eniconfigs", "needs list on eniconfigs.crd.k8s.amazonaws.com"))
		return nil
	}
	if err != nil {
		return fmt.Errorf("listing ENIConfigs: %w", err)
	}
	if !custom {
		return nil
	}
	labelDef := r.awsNodeEnv["ENI_CONFIG_LABEL_DEF"]
	annotationDef := r.awsNodeEnv["ENI_CONFIG_ANNOTATION_DEF"]
	for i := range nodes {
		n := &nodes[i]
		if notVPCCNI(n) != "" {
			continue
		}
		name, from := selectedENIConfig(n, labelDef, annotationDef)
		if !configs[name] {
			r.rep.Add(RuleENIConfigMissing.New("node/"+n.Name, "selects ENIConfig %q (%s), which does not exist: pods on this node get no addresses",
				textsafe.Escape(name), from))
		}
	}
	return nil
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

// karpenterReservedENIs finds Karpenter's reservedENIs setting: the RESERVED_ENIS env of its
// Deployment (v0.33+), else the aws.reservedENIs key of the karpenter-global-settings ConfigMap
// (v0.19-v0.32) in the Deployment's namespace (or karpenter and kube-system when no Deployment
// is visible: a GET each, so doctor never needs to list ConfigMaps). found is false when neither
// exists or may be read.
func (r *runner) karpenterReservedENIs(ctx context.Context) (n int, source string, found bool, err error) {
	namespaces := []string{"karpenter", "kube-system"}
	deps, err := r.client.AppsV1().Deployments("").List(ctx, metav1.ListOptions{LabelSelector: karpenterAppLabel, Limit: r.o.ChunkSize})
	switch {
	case apierrors.IsForbidden(err):
	case err != nil:
		return 0, "", false, fmt.Errorf("listing Karpenter deployments: %w", err)
	case len(deps.Items) > 0:
		namespaces = nil
		for i := range deps.Items {
			d := &deps.Items[i]
			if v, ok := deploymentEnv(d, karpenterEnvReserved); ok {
				if n, perr := strconv.Atoi(strings.TrimSpace(v)); perr == nil && n >= 0 {
					return n, fmt.Sprintf("deployment/%s/%s %s=%s", d.Namespace, d.Name, karpenterEnvReserved, textsafe.Clip(v, 20)), true, nil
				}
			}
			namespaces = append(namespaces, d.Namespace)
		}
		if cmN, cmSrc, ok := r.karpenterSettingsConfigMap(ctx, namespaces); ok {
			return cmN, cmSrc, true, nil
		}
		d := &deps.Items[0]
		return 0, fmt.Sprintf("deployment/%s/%s without %s (default 0)", d.Namespace, d.Name, karpenterEnvReserved), true, nil
	}
	if cmN, cmSrc, ok := r.karpenterSettingsConfigMap(ctx, namespaces); ok {
		return cmN, cmSrc, true, nil
	}
	return 0, "", false, nil
}

func (r *runner) karpenterSettingsConfigMap(ctx context.Context, namespaces []string) (int, string, bool) {
	for _, ns := range namespaces {
		cm, err := r.client.CoreV1().ConfigMaps(ns).Get(ctx, karpenterSettingsCM, metav1.GetOptions{})
		if err != nil {
			continue
		}
		if v, ok := cm.Data[karpenterSettingsKey]; ok {
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n >= 0 {
				return n, fmt.Sprintf("configmap/%s/%s %s=%s", cm.Namespace, cm.Name, karpenterSettingsKey, textsafe.Clip(v, 20)), true
			}
		}
	}
	return 0, "", false
}

func deploymentEnv(d *appsv1.Deployment, name string) (string, bool) {
	for _, c := range d.Spec.Template.Spec.Containers {
		for _, e := range c.Env {
			if e.Name == name && e.ValueFrom == nil {
				return e.Value, true
			}
		}
	}
	return "", false
}

// checkNodeScopedObjects reports CSINodes and CNINodes whose Node is gone, classed like leases:
// owned (the garbage collector removes them), unowned and leaked (nobody will). Never deletes.
func (r *runner) checkNodeScopedObjects(ctx context.Context, nodes []corev1.Node) error {
	uids := make(map[string]types.UID, len(nodes))
	for i := range nodes {
		uids[nodes[i].Name] = nodes[i].UID
	}
	// classify returns the class of an object named after a Node that is gone: owned (its
	// ownerReference names the deleted Node, so the garbage collector removes it: info) or leaked
	// (no Node owner: nothing removes it: warning). orphan is false while the Node exists.
	classify := func(name string, owners []metav1.OwnerReference) (class string, sev findings.Severity, orphan bool) {
		if _, ok := uids[name]; ok {
			return "", 0, false
		}
		for _, o := range owners {
			if o.Kind == "Node" {
				return "owned by the deleted Node (uid " + textsafe.Escape(string(o.UID)) + "): the garbage collector removes it", findings.Info, true
			}
		}
		return "unowned and leaked: nothing will remove it", findings.Warning, true
	}
	var csi []findings.Finding
	err := kube.List(ctx, "csinodes", metav1.ListOptions{Limit: r.o.ChunkSize}, r.client.StorageV1().CSINodes().List, func(l *storagev1.CSINodeList) error {
		for _, c := range l.Items {
			if class, sev, orphan := classify(c.Name, c.OwnerReferences); orphan {
				csi = append(csi, RuleCSINodeOrphaned.At(sev, "csinode/"+textsafe.Escape(c.Name), "no Node %s; %s", textsafe.Escape(c.Name), class))
			}
		}
		return nil
	})
	switch {
	case apierrors.IsForbidden(err):
		r.rep.Add(RuleCSINodeOrphaned.Skip("csinodes", "needs list on csinodes"))
	case err != nil:
		return err
	}
	r.rep.Add(csi...)

	served, err := r.servedResource(gvrCNINode)
	if err != nil || !served {
		return err
	}
	var cni []findings.Finding
	err = r.listAll(ctx, gvrCNINode, func(u *unstructured.Unstructured) {
		if class, sev, orphan := classify(u.GetName(), u.GetOwnerReferences()); orphan {
			cni = append(cni, RuleCNINodeOrphaned.At(sev, "cninode/"+textsafe.Escape(u.GetName()), "no Node %s; %s", textsafe.Escape(u.GetName()), class))
		}
	})
	switch {
	case apierrors.IsForbidden(err):
		r.rep.Add(RuleCNINodeOrphaned.Skip("cninodes", "needs list on cninodes.vpcresources.k8s.aws"))
	case err != nil:
		return fmt.Errorf("listing CNINodes: %w", err)
	}
	r.rep.Add(cni...)
	return nil
}
