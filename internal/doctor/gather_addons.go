package doctor

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/nodekeeper/nodekeeper/internal/clusterread"
	"github.com/nodekeeper/nodekeeper/internal/eni"
	"github.com/nodekeeper/nodekeeper/internal/kube"
	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// The "Image pulls and add-ons" section reads, with a bounded number of requests whatever the
// cluster's size, and each list reduced page by page to counts and a few examples:
//
//   - a GET of each add-on: the DaemonSets aws-node (--aws-node) and kube-proxy and the
//     Deployment coredns in kube-system (kube-proxy's and CoreDNS's image and managedFields, for
//     their versions and whether EKS manages them, come with it);
//   - the pods of each add-on found: a LIST in its namespace with the workload's own label
//     selector, in pages of at most --chunk-size pods and MaxPageBytes;
//   - core/v1 Events with reason=Failed from source kubelet, in pages as bounded:
//     the kubelet records a refused pull as a Warning "Failed" event on the pod whose message is
//     `Failed to pull image "IMAGE": pull QPS exceeded` (kubernetes v1.36.3,
//     pkg/kubelet/images/helpers.go throttledImageService.PullImage returns "pull QPS exceeded",
//     pkg/kubelet/images/image_manager.go records it with reason events.FailedToPullImage,
//     "Failed", from the recorder whose source is {kubelet, NODE}, cmd/kubelet/app/server.go);
//   - Deployments labelled app.kubernetes.io/name in (karpenter, nodekeeper): one paginated LIST.

// Well-known names the section reads.
const (
	kubeProxyName = "kube-proxy"
	coreDNSName   = "coredns"
	// reasonPullFailed is the kubelet's events.FailedToPullImage.
	reasonPullFailed = "Failed"
	// pullQPSExceeded is the kubelet's error for a pull its limiter refused.
	pullQPSExceeded = "pull QPS exceeded"
	labelAppName    = "app.kubernetes.io/name"
	labelAppVersion = "app.kubernetes.io/version"
	// AddonRestartWindow is how recent a container's last termination must be for its pod to
	// count as restarting (a pod waiting in CrashLoopBackOff always counts); NK753's message says
	// "in the last hour".
	AddonRestartWindow = time.Hour
	// maxRestartGroups bounds the restart groups kept per add-on; further (container, reason,
	// exit code) combinations are counted under the last one.
	maxRestartGroups = 8
	// maxPullMessage bounds a refused pull's message kept as an example.
	maxPullMessage = 200
)

// Stats of the section.
const (
	StatAddonPodPages   = "add-on pod list pages"
	StatPullEventPages  = "pull event list pages"
	StatPullQPSRefusals = "pull QPS refusals"
)

// AddonFacts is one add-on workload as the checks read it.
type AddonFacts struct {
	// Name is the add-on ("aws-node", "kube-proxy", "coredns"); Resource the workload
	// ("daemonset/kube-system/aws-node").
	Name, Resource string
	Found          bool
	// Desired, Available and Unavailable pods from the workload's status.
	Desired, Available, Unavailable int32
	// Pods is how many of its pods were listed; Restarting how many of them restart.
	Pods, Restarting int
	// Restarts groups the restarting containers by container, last termination reason and exit
	// code, most pods first.
	Restarts []*RestartGroup
	// Image is the add-on container's image (kube-proxy and CoreDNS only; the container named
	// after the add-on, else the first), clipped; Container names it.
	Image, Container string
	// EKSManaged: Amazon EKS applied the workload as an Amazon EKS add-on (managedFields).
	EKSManaged bool
}

// eksFieldManager is the field manager of Amazon EKS add-ons: "Amazon EKS uses the Kubernetes
// server-side apply feature to enable management of an add-on by Amazon EKS", and the fields it
// manages "are tagged with manager: eks" (Amazon EKS user guide, "Determine fields you can
// customize for Amazon EKS add-ons", kubernetes-field-management.html). A self-managed add-on
// (what EKS installs with a new cluster unless told otherwise, or anything applied with kubectl
// or Helm) has no server-side apply entry of that manager.
const eksFieldManager = "eks"

// eksManaged reports whether Amazon EKS applies the workload as a managed add-on.
func eksManaged(m metav1.ObjectMeta) bool {
	for _, e := range m.ManagedFields {
		if e.Manager == eksFieldManager && e.Operation == metav1.ManagedFieldsOperationApply {
			return true
		}
	}
	return false
}

// addonImage picks the add-on's own container of a pod template: the one named after it, else
// the first; its image is clipped (anyone who may edit the workload writes it).
func addonImage(name string, spec corev1.PodSpec) (container, image string) {
	cs := spec.Containers
	if len(cs) == 0 {
		return "", ""
	}
	c := cs[0]
	for _, x := range cs {
		if x.Name == name {
			c = x
			break
		}
	}
	return textsafe.ClipRaw(c.Name, 63), textsafe.ClipRaw(c.Image, 300)
}

// RestartGroup is the restarting containers of one add-on that share container name, last
// termination reason and exit code.
type RestartGroup struct {
	Container, Reason string
	ExitCode          int32
	// Other: the group of every combination past maxRestartGroups (Container, Reason and
	// ExitCode are then empty).
	Other bool
	// Pods counts the pods, Restarts their containers' restart counts.
	Pods     int
	Restarts int32
	// Last is the newest termination; Examples name a few pods with their nodes.
	Last     time.Time
	Examples []string
}

// PullQPSNode is what one node's kubelet recorded about pulls its limiter refused.
type PullQPSNode struct {
	// Events is how many events (one per pod and image) say so, Refusals how many refusals
	// they count, Last the newest.
	Events   int
	Refusals int32
	Last     time.Time
	// Examples are a few of the events as "namespace/pod: message".
	Examples []string
}

// ControllerDeployment is a Deployment of a controller that collects leases.
type ControllerDeployment struct {
	Resource string
	// Version as found ("" when neither the label nor the image tag says), and where.
	Version, VersionFrom string
}

// LeaseCollectorFacts are the Deployments of Karpenter and of nodekeeper's controller.
type LeaseCollectorFacts struct {
	Karpenter, Nodekeeper []ControllerDeployment
}

// addons reads the three add-on workloads and their pods.
func (g *gatherer) addons(ctx context.Context) error {
	specs := []struct{ name, namespace, workload string }{
		{"aws-node", g.o.AWSNodeNamespace, g.o.AWSNodeName},
		{kubeProxyName, metav1.NamespaceSystem, kubeProxyName},
		{coreDNSName, metav1.NamespaceSystem, coreDNSName},
	}
	var pages int64
	for _, s := range specs {
		a := AddonFacts{Name: s.name}
		var sel *metav1.LabelSelector
		var err error
		if s.name == coreDNSName {
			a.Resource = "deployment/" + s.namespace + "/" + s.workload
			var d *appsv1.Deployment
			if d, err = g.d.Client.AppsV1().Deployments(s.namespace).Get(ctx, s.workload, metav1.GetOptions{}); err == nil {
				sel = d.Spec.Selector
				desired := int32(1)
				if d.Spec.Replicas != nil {
					desired = *d.Spec.Replicas
				}
				a.setCounts(desired, d.Status.AvailableReplicas, d.Status.UnavailableReplicas)
				a.Container, a.Image = addonImage(s.name, d.Spec.Template.Spec)
				a.EKSManaged = eksManaged(d.ObjectMeta)
			}
		} else {
			a.Resource = "daemonset/" + s.namespace + "/" + s.workload
			var ds *appsv1.DaemonSet
			if s.name == "aws-node" {
				ds, err = g.awsNodeDaemonSet(ctx) // read once for the settings section already
			} else {
				ds, err = g.d.Client.AppsV1().DaemonSets(s.namespace).Get(ctx, s.workload, metav1.GetOptions{})
			}
			if err == nil {
				sel = ds.Spec.Selector
				a.setCounts(ds.Status.DesiredNumberScheduled, ds.Status.NumberAvailable, ds.Status.NumberUnavailable)
				if s.name == kubeProxyName {
					a.Container, a.Image = addonImage(s.name, ds.Spec.Template.Spec)
					a.EKSManaged = eksManaged(ds.ObjectMeta)
				}
			}
		}
		kind := strings.SplitN(a.Resource, "/", 2)[0] + "s"
		if apierrors.IsNotFound(err) {
			g.f.Addons = append(g.f.Addons, a)
			continue
		}
		if failed, err := g.failed(err, FactAddons, kind, "needs get on "+kind+" in "+s.namespace, "reading "+a.Resource); failed {
			return err
		}
		a.Found = true
		var awsNodePod func(*corev1.Pod)
		if s.name == "aws-node" && !g.o.SkipCNIMetrics {
			// The CNI metrics read needs the same pods: keep them here and list them once.
			g.f.CNI.Nodes = map[string]*CNINode{}
			awsNodePod = g.addAWSNodePod
		}
		n, err := g.addonPods(ctx, s.namespace, sel, &a, awsNodePod)
		pages += n
		switch {
		case apierrors.IsForbidden(err):
			g.f.miss(FactAddonPods, "pods", "needs list on pods in "+s.namespace)
		case err != nil:
			return fmt.Errorf("listing the pods of %s: %w", a.Resource, err)
		case awsNodePod != nil:
			g.f.CNI.listed = true
		}
		g.f.Addons = append(g.f.Addons, a)
	}
	g.f.stat(StatAddonPodPages, pages)
	return nil
}

// awsNodeDaemonSet is the aws-node DaemonSet of the settings section's read, or its error as
// the API server gave it (the add-on section names the verb and resource it lacks its own way).
func (g *gatherer) awsNodeDaemonSet(ctx context.Context) (*appsv1.DaemonSet, error) {
	read, err := g.readAWSNode(ctx)
	if m, ok := clusterread.AsMissing(err); ok {
		err = m.Err
	}
	if err == nil && !read.Found {
		err = apierrors.NewNotFound(appsv1.Resource("daemonsets"), g.o.AWSNodeName)
	}
	return read.DaemonSet, err
}

// installedAddons are the add-ons found in the cluster.
func installedAddons(f *Facts) []AddonFacts {
	var out []AddonFacts
	for _, a := range f.Addons {
		if a.Found {
			out = append(out, a)
		}
	}
	return out
}

// setCounts takes the workload's status; unavailable is at least what the desired count lacks,
// so a status without the field (or a controller that lags) still shows missing pods.
func (a *AddonFacts) setCounts(desired, available, unavailable int32) {
	a.Desired, a.Available = desired, available
	a.Unavailable = max(unavailable, desired-available, 0)
}

// addonPods lists the pods of an add-on by its selector and keeps its restarting containers.
// each, when not nil, is given every pod too.
func (g *gatherer) addonPods(ctx context.Context, namespace string, sel *metav1.LabelSelector, a *AddonFacts, each func(*corev1.Pod)) (int64, error) {
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil || s.Empty() {
		// A workload without a usable selector has no pods of its own to find.
		return 0, nil
	}
	opts := metav1.ListOptions{Limit: g.o.ChunkSize, LabelSelector: s.String()}
	pages, err := listBudgeted(ctx, "pods of "+a.Resource, opts, g.o.pageBytes, g.d.Bulk.CoreV1().Pods(namespace).List, func(l *corev1.PodList) error {
		for i := range l.Items {
			a.addPod(&l.Items[i], g.f.Now)
			if each != nil {
				each(&l.Items[i])
			}
		}
		l.Items = nil
		return nil
	})
	sort.SliceStable(a.Restarts, func(i, j int) bool { return a.Restarts[i].Pods > a.Restarts[j].Pods })
	return pages, err
}

// addPod counts one pod of the add-on and files its restarting containers.
func (a *AddonFacts) addPod(p *corev1.Pod, now time.Time) {
	a.Pods++
	restarting := false
	for _, cs := range slices.Concat(p.Status.InitContainerStatuses, p.Status.ContainerStatuses) {
		t := cs.LastTerminationState.Terminated
		crashLoop := cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff"
		if cs.RestartCount == 0 || (!crashLoop && (t == nil || now.Sub(t.FinishedAt.Time) > AddonRestartWindow)) {
			continue
		}
		restarting = true
		reason, code, at := "unknown", int32(0), time.Time{}
		if t != nil {
			reason, code, at = textsafe.ClipRaw(t.Reason, 60), t.ExitCode, t.FinishedAt.Time
		}
		grp := a.restartGroup(cs.Name, reason, code)
		grp.Pods++
		grp.Restarts += cs.RestartCount
		if at.After(grp.Last) {
			grp.Last = at
		}
		if len(grp.Examples) < maxPodsPerFinding {
			grp.Examples = append(grp.Examples, fmt.Sprintf("pod %s/%s on %s, %s", p.Namespace, p.Name, p.Spec.NodeName, plural(int(cs.RestartCount), "restart")))
		}
	}
	if restarting {
		a.Restarting++
	}
}

func (a *AddonFacts) restartGroup(container, reason string, code int32) *RestartGroup {
	for _, grp := range a.Restarts {
		if grp.Container == container && grp.Reason == reason && grp.ExitCode == code {
			return grp
		}
	}
	if len(a.Restarts) == maxRestartGroups {
		// The last group takes every further combination; it names none of them, so that no
		// pod is shown under another container's reason or exit code.
		last := a.Restarts[len(a.Restarts)-1]
		if !last.Other {
			last.Other, last.Container, last.Reason, last.ExitCode = true, "", "", 0
		}
		return last
	}
	grp := &RestartGroup{Container: container, Reason: reason, ExitCode: code}
	a.Restarts = append(a.Restarts, grp)
	return grp
}

// pullEvents reads the kubelets' "Failed" events and keeps, per node, the pulls the limiter
// refused.
func (g *gatherer) pullEvents(ctx context.Context) error {
	sel := fields.SelectorFromSet(fields.Set{"reason": reasonPullFailed, "source": "kubelet", "involvedObject.kind": "Pod"})
	out := map[string]*PullQPSNode{}
	var refusals int64
	nodes := make(map[string]bool, len(g.f.Nodes))
	for i := range g.f.Nodes {
		nodes[g.f.Nodes[i].Name] = true
	}
	pages, err := g.listEvents(ctx, reasonPullFailed, sel, func(e *corev1.Event) { refusals += int64(addPullEvent(out, nodes, e)) })
	g.f.stat(StatPullEventPages, pages)
	if failed, err := g.failed(err, FactPullEvents, "events", "needs list on events", ""); failed {
		return err
	}
	g.f.stat(StatPullQPSRefusals, refusals)
	g.f.PullQPS = out
	return nil
}

// listEvents lists the core/v1 Events sel matches in pages of at most --chunk-size events and
// MaxPageBytes, hands each to fn and drops each page before the next is read; it returns the
// pages read. reason names the events in errors.
func (g *gatherer) listEvents(ctx context.Context, reason string, sel fields.Selector, fn func(*corev1.Event)) (int64, error) {
	opts := metav1.ListOptions{Limit: g.o.ChunkSize, FieldSelector: sel.String()}
	return listBudgeted(ctx, reason+" events", opts, g.o.pageBytes, g.d.Bulk.CoreV1().Events("").List, func(l *corev1.EventList) error {
		for i := range l.Items {
			fn(&l.Items[i])
		}
		l.Items = nil
		return nil
	})
}

// addPullEvent files one event under its node when it is a refused pull, and returns the
// refusals it counts (0 for any other event). Anyone who may create Events can name any host, so
// events whose host is not one of the cluster's nodes share one entry (""): what is kept grows
// with the nodes, not with the events.
func addPullEvent(out map[string]*PullQPSNode, nodes map[string]bool, e *corev1.Event) int32 {
	if e.Reason != reasonPullFailed || e.InvolvedObject.Kind != "Pod" || !strings.Contains(e.Message, pullQPSExceeded) {
		return 0
	}
	node := e.Source.Host
	if node == "" {
		node = e.ReportingInstance
	}
	if !nodes[node] {
		node = ""
	}
	n := out[node]
	if n == nil {
		n = &PullQPSNode{}
		out[node] = n
	}
	count, at := occurrences(e)
	n.Events++
	n.Refusals += count
	if at.After(n.Last) {
		n.Last = at
	}
	if len(n.Examples) < maxPodsPerFinding {
		n.Examples = append(n.Examples, e.InvolvedObject.Namespace+"/"+e.InvolvedObject.Name+": "+textsafe.ClipRaw(e.Message, maxPullMessage))
	}
	return count
}

// leaseCollectors finds the Deployments of Karpenter and of nodekeeper's controller.
func (g *gatherer) leaseCollectors(ctx context.Context) error {
	req, err := labels.NewRequirement(labelAppName, selection.In, []string{"karpenter", "nodekeeper"})
	if err != nil {
		return err
	}
	opts := metav1.ListOptions{Limit: g.o.ChunkSize, LabelSelector: labels.NewSelector().Add(*req).String()}
	// At most maxControllers of each are kept: anyone who may create Deployments can add the label.
	const maxControllers = 16
	var out LeaseCollectorFacts
	err = kube.List(ctx, "deployments", opts, g.d.Client.AppsV1().Deployments("").List, func(l *appsv1.DeploymentList) error {
		for i := range l.Items {
			d := &l.Items[i]
			c := ControllerDeployment{Resource: "deployment/" + d.Namespace + "/" + d.Name}
			switch d.Labels[labelAppName] {
			case "karpenter":
				if len(out.Karpenter) == maxControllers {
					continue
				}
				c.Version, c.VersionFrom = deploymentVersion(d, "karpenter")
				out.Karpenter = append(out.Karpenter, c)
			case "nodekeeper":
				if len(out.Nodekeeper) == maxControllers {
					continue
				}
				c.Version, c.VersionFrom = deploymentVersion(d, "nodekeeper")
				out.Nodekeeper = append(out.Nodekeeper, c)
			}
		}
		return nil
	})
	if failed, err := g.failed(err, FactLeaseCollectors, "deployments", "needs list on deployments", "listing Karpenter and nodekeeper deployments"); failed {
		return err
	}
	g.f.LeaseCollectors = out
	return nil
}

// deploymentVersion reads a controller's version from its Deployment: the Helm chart's
// app.kubernetes.io/version label, else the tag of the first container image naming image.
func deploymentVersion(d *appsv1.Deployment, image string) (version, from string) {
	if v := strings.TrimSpace(d.Labels[labelAppVersion]); v != "" {
		return textsafe.ClipRaw(v, 40), "label " + labelAppVersion
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		if !strings.Contains(c.Image, image) {
			continue
		}
		if tag, ok := eni.ImageTag(c.Image); ok {
			return textsafe.ClipRaw(tag, 40), "image " + textsafe.ClipRaw(c.Image, 200)
		}
	}
	return "", ""
}
