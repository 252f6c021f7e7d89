package doctor

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/nodekeeper/nodekeeper/internal/eni"
	"github.com/nodekeeper/nodekeeper/internal/kube"
	"github.com/nodekeeper/nodekeeper/internal/rules"
	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// gatherer reads the facts; it lives for one Gather call.
type gatherer struct {
	d Deps
	o Options
	f *Facts
	// awsNodeRead is the one GET of the aws-node DaemonSet, kept for the add-on section, which
	// needs its selector and status too.
	awsNodeRead *daemonSetRead
}

// daemonSetRead is a DaemonSet GET's answer: the object or the error.
type daemonSetRead struct {
	ds  *appsv1.DaemonSet
	err error
}

// getAWSNode reads the aws-node DaemonSet once per Gather.
func (g *gatherer) getAWSNode(ctx context.Context) (*appsv1.DaemonSet, error) {
	if g.awsNodeRead == nil {
		ds, err := g.d.Client.AppsV1().DaemonSets(g.o.AWSNodeNamespace).Get(ctx, g.o.AWSNodeName, metav1.GetOptions{})
		g.awsNodeRead = &daemonSetRead{ds: ds, err: err}
	}
	return g.awsNodeRead.ds, g.awsNodeRead.err
}

// Gather reads every fact a run with o needs (o with its defaults applied; Run does that). A
// forbidden read leaves its fact missing; other errors fail the run.
func Gather(ctx context.Context, d Deps, o Options) (*Facts, error) {
	g := &gatherer{d: d, o: o, f: &Facts{Options: o, Now: o.Now(), Stats: map[string]int64{}}}
	sv, err := d.Client.Discovery().ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("reading the API server version: %w", err)
	}
	g.f.Server = sv.GitVersion
	steps := []func(context.Context) error{g.nodes, g.awsNode, g.karpenter, g.configz}
	if o.EC2 != nil {
		steps = append(steps, g.ec2InstanceTypes)
	}
	steps = append(steps, g.leases, g.metrics)
	steps = append(steps, g.addons, g.pullEvents, g.leaseCollectors)
	if !o.SkipPodNetworking {
		steps = append(steps, g.pods, g.csrs, g.csiNodes, g.cniNodes)
	}
	if !o.SkipCNIMetrics {
		steps = append(steps, g.cniMetrics)
	}
	if !o.SkipPodNetworking || o.EC2 != nil {
		steps = append(steps, g.eniConfigs)
	}
	if o.EC2 != nil {
		steps = append(steps, g.ec2, g.bootVolumes)
		if o.EC2.LaunchTemplates != nil {
			steps = append(steps, g.launchTemplates) // after ec2: it reads the instances' tags
		}
	}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			return nil, err
		}
	}
	return g.f, nil
}

// failed settles the error of a read that feeds fact. A read RBAC forbids records the fact as
// missing, naming resource and the verb it needs, and is no error: doctor reports what it could
// not check and goes on. Any other error is returned, wrapped in doing when that is given. The
// caller stops (returns the error) when failed is true: the fact was not read.
func (g *gatherer) failed(err error, fact Fact, resource, needs, doing string) (failed bool, _ error) {
	switch {
	case err == nil:
		return false, nil
	case apierrors.IsForbidden(err):
		g.f.miss(fact, resource, needs)
		return true, nil
	case doing == "":
		return true, err
	}
	return true, fmt.Errorf("%s: %w", doing, err)
}

func (g *gatherer) nodes(ctx context.Context) error {
	var out []corev1.Node
	_, err := kube.Pages(ctx, "nodes", metav1.ListOptions{Limit: g.o.ChunkSize}, func(ctx context.Context, o metav1.ListOptions) (string, error) {
		l, err := g.d.Bulk.CoreV1().Nodes().List(ctx, o)
		if err != nil {
			return "", err
		}
		out = append(out, l.Items...)
		return l.Continue, nil
	})
	if failed, err := g.failed(err, FactNodes, "nodes", "needs list on nodes", ""); failed {
		return err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	g.f.Nodes = out
	g.f.stat(StatNodes, int64(len(out)))
	return nil
}

// awsNode reads the VPC CNI DaemonSet.
func (g *gatherer) awsNode(ctx context.Context) error {
	a := &g.f.AWSNode
	a.Resource = "daemonset/" + g.o.AWSNodeNamespace + "/" + g.o.AWSNodeName
	ds, err := g.getAWSNode(ctx)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if failed, err := g.failed(err, FactAWSNode, a.Resource, "needs get on daemonsets in "+g.o.AWSNodeNamespace, "reading "+a.Resource); failed {
		return err
	}
	g.setAWSNode(ds)
	return nil
}

// setAWSNode keeps what the checks read of the aws-node DaemonSet found.
func (g *gatherer) setAWSNode(ds *appsv1.DaemonSet) {
	a := &g.f.AWSNode
	a.Found = true
	if sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector); err == nil && !sel.Empty() {
		a.Selector = sel.String()
	}
	c := awsNodeContainer(ds)
	if c == nil {
		return
	}
	a.Container = true
	a.Env = map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			a.Env[e.Name] = e.Value
		case e.ValueFrom.ConfigMapKeyRef != nil || e.ValueFrom.SecretKeyRef != nil:
			// A value doctor could read only with more permissions, and may be a setting.
			a.Unread = append(a.Unread, e.Name)
		}
		// fieldRef and resourceFieldRef are the pod's own fields (the stock manifest's
		// MY_NODE_NAME and MY_POD_NAME): never a CNI setting, so nothing was assumed.
	}
	if v, err := eni.VersionFromImage(c.Image); err == nil {
		a.Version = &v
	}
}

func awsNodeContainer(ds *appsv1.DaemonSet) *corev1.Container {
	return awsNodeContainerIn(ds.Spec.Template.Spec.Containers)
}

// awsNodeContainerIn finds the VPC CNI's container: named aws-node, else running its image.
func awsNodeContainerIn(cs []corev1.Container) *corev1.Container {
	for i := range cs {
		if cs[i].Name == "aws-node" {
			return &cs[i]
		}
	}
	for i := range cs {
		if strings.Contains(cs[i].Image, "amazon-k8s-cni:") {
			return &cs[i]
		}
	}
	return nil
}

// configz reads every Ready node's kubelet configuration through the API server's node proxy:
// one request per node, no retries, at most Workers in flight.
func (g *gatherer) configz(ctx context.Context) error {
	nodes := g.f.Nodes
	out := make(map[string]ConfigzResult, len(nodes))
	g.f.Configz = out
	if len(nodes) == 0 {
		return nil
	}
	if g.d.REST == nil {
		g.f.miss(FactConfigz, "nodes/proxy", "no client for the node proxy")
		return nil
	}
	allowed, reason, err := g.canI(ctx, authorizationv1.ResourceAttributes{Verb: "get", Resource: "nodes", Subresource: "proxy"})
	if err != nil {
		klog.ErrorS(err, "SelfSubjectAccessReview for nodes/proxy failed; trying the requests")
		allowed = true
	}
	if !allowed {
		g.f.miss(FactConfigz, "nodes/proxy", "needs get on nodes/proxy ("+reason+")")
		return nil
	}
	var ready []string
	for i := range nodes {
		if n := &nodes[i]; nodeReady(n) {
			ready = append(ready, n.Name)
		} else {
			out[n.Name] = ConfigzResult{Err: "node not Ready"}
		}
	}
	var errs, requests atomic.Int64
	results := make([]ConfigzResult, len(ready))
	eachBounded(ctx, g.o.Workers, len(ready), g.o.ConfigzProgress, func(i int) {
		results[i] = g.getConfigz(ctx, ready[i], &requests)
		if results[i].Err != "" {
			errs.Add(1)
		}
	})
	for i, name := range ready {
		if results[i].Config == nil && results[i].Err == "" {
			// Not started: the run was interrupted.
			results[i].Err = "not read: " + context.Cause(ctx).Error()
			errs.Add(1)
		}
		out[name] = results[i]
	}
	g.f.stat(StatConfigzErrors, errs.Load())
	g.f.stat(StatConfigzRequests, requests.Load())
	return nil
}

func (g *gatherer) getConfigz(ctx context.Context, node string, requests *atomic.Int64) ConfigzResult {
	if ctx.Err() != nil {
		return ConfigzResult{Err: ctx.Err().Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, g.o.ConfigzTimeout)
	defer cancel()
	requests.Add(1)
	raw, err := ReadConfigz(ctx, g.d.REST, node)
	switch {
	case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "nodes/proxy"):
		// RBAC's denial names the resource; other 403s come from the path to the kubelet.
		return ConfigzResult{Err: "forbidden: needs get on nodes/proxy"}
	case err != nil:
		return ConfigzResult{Err: ConfigzFailure(err)}
	}
	c, err := rules.ParseConfigz(raw)
	if err != nil {
		return ConfigzResult{Err: err.Error()}
	}
	return ConfigzResult{Config: &c}
}

// maxConfigzBytes bounds one /configz answer. A kubelet's is a few KiB; whatever answers on the
// node-proxy path in its place is not trusted to stay small, and thousands are read at once.
const maxConfigzBytes = 1 << 20

// ReadConfigz reads node's kubelet configuration through the API server's node proxy, once (no
// retries), at most maxConfigzBytes of it, refusing a larger answer where DoRaw would hold all of
// it in memory. Non-2xx answers become errors as with DoRaw. doctor and plan read it this way.
func ReadConfigz(ctx context.Context, client rest.Interface, node string) ([]byte, error) {
	return readBounded(ctx, client.Get().AbsPath("/api/v1/nodes", node, "proxy", "configz"), maxConfigzBytes, "the /configz answer (a kubelet's is a few KiB)")
}

// canI asks the API server whether the caller may do what attrs say (a SelfSubjectAccessReview),
// with the authorizer's reason when not.
func (g *gatherer) canI(ctx context.Context, attrs authorizationv1.ResourceAttributes) (bool, string, error) {
	ssar := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs}}
	res, err := g.d.Client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, ssar, metav1.CreateOptions{})
	if err != nil {
		return false, "", err
	}
	reason := res.Status.Reason
	if reason == "" {
		reason = "denied"
	}
	return res.Status.Allowed, reason, nil
}

// ConfigzFailure is the one-line reason a configz request failed, with the HTTP status when there
// is one. The error can quote whatever answered on the path to the kubelet (a proxy's HTML page, a
// kubelet's message in any language), so it is clipped to 200 characters on a character boundary
// and kept as written (the printers escape it).
func ConfigzFailure(err error) string {
	msg := err.Error()
	var st apierrors.APIStatus
	if errors.As(err, &st) && st.Status().Code != 0 {
		msg = fmt.Sprintf("HTTP %d: %s", st.Status().Code, msg)
	}
	return textsafe.ClipRaw(msg, 200)
}

func (g *gatherer) leases(ctx context.Context) error {
	var leases []coordinationv1.Lease
	err := kube.ListLeases(ctx, g.d.Bulk.CoordinationV1(), corev1.NamespaceNodeLease, g.o.ChunkSize, func(l *coordinationv1.LeaseList) error {
		leases = append(leases, l.Items...)
		return nil
	})
	if failed, err := g.failed(err, FactLeases, "leases", "needs list on leases in "+corev1.NamespaceNodeLease, ""); failed {
		return err
	}
	g.f.Leases = leases
	g.f.stat(StatLeases, int64(len(leases)))
	return nil
}

// metrics reads the API server's priority-and-fairness samples from /metrics.
func (g *gatherer) metrics(ctx context.Context) error {
	if g.d.REST == nil {
		g.f.miss(FactMetrics, "apiserver", "no client for /metrics")
		return nil
	}
	raw, err := g.d.REST.Get().AbsPath("/metrics").DoRaw(ctx)
	switch {
	case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
		g.f.miss(FactMetrics, "apiserver", "needs get on the non-resource URL /metrics")
		return nil
	case apierrors.IsNotFound(err):
		g.f.miss(FactMetrics, "apiserver", "the API server serves no /metrics")
		return nil
	case err != nil:
		g.f.miss(FactMetrics, "apiserver", "reading /metrics: "+err.Error())
		return nil
	}
	samples, err := ParseMetrics(raw, "apiserver_flowcontrol_")
	if err != nil {
		g.f.miss(FactMetrics, "apiserver", err.Error())
		return nil
	}
	g.f.APF = samples
	return nil
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
