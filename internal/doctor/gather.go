package doctor

import (
	"context"
	"fmt"
	"sort"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekeeper/nodekeeper/internal/clusterread"
	"github.com/nodekeeper/nodekeeper/internal/kube"
)

// gatherer reads the facts; it lives for one Gather call.
type gatherer struct {
	d Deps
	o Options
	f *Facts
	// r reads what doctor shares with plan and the controller (clusterread).
	r clusterread.Reader
	// awsNodeRead is the one GET of the aws-node DaemonSet, kept for the add-on section, which
	// needs its selector and status too.
	awsNodeRead *awsNodeRead
}

// awsNodeRead is the aws-node DaemonSet's read: what it found or the error.
type awsNodeRead struct {
	a   clusterread.AWSNode
	err error
}

// readAWSNode reads the aws-node DaemonSet once per Gather.
func (g *gatherer) readAWSNode(ctx context.Context) (clusterread.AWSNode, error) {
	if g.awsNodeRead == nil {
		a, err := g.r.AWSNode(ctx, g.o.AWSNodeNamespace, g.o.AWSNodeName)
		g.awsNodeRead = &awsNodeRead{a: a, err: err}
	}
	return g.awsNodeRead.a, g.awsNodeRead.err
}

// Gather reads every fact a run with o needs (o with its defaults applied; Run does that). A
// forbidden read leaves its fact missing; other errors fail the run.
func Gather(ctx context.Context, d Deps, o Options) (*Facts, error) {
	g := &gatherer{d: d, o: o, f: &Facts{Settings: o.Settings(), Now: o.Now(), Stats: map[string]int64{}},
		r: clusterread.Reader{Client: d.Client, Dynamic: d.Dynamic, REST: d.REST, ChunkSize: o.ChunkSize}}
	if o.EC2 != nil && d.EC2 == nil {
		return nil, fmt.Errorf("doctor: the EC2 section needs an EC2 client (Deps.EC2)")
	}
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
		if d.LaunchTemplates != nil {
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
	}
	if m, ok := clusterread.AsMissing(err); ok {
		g.f.miss(fact, m.Resource, m.Reason)
		return true, nil
	}
	switch {
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
	read, err := g.readAWSNode(ctx)
	a := &g.f.AWSNode
	a.Resource = read.Resource
	if failed, err := g.failed(err, FactAWSNode, a.Resource, "", "reading "+a.Resource); failed {
		return err
	}
	*a = awsNodeFacts(read)
	return nil
}

// awsNodeFacts is what the checks judge of the aws-node DaemonSet clusterread read.
func awsNodeFacts(read clusterread.AWSNode) AWSNodeFacts {
	return AWSNodeFacts{Resource: read.Resource, Found: read.Found, Container: read.Container, Selector: read.Selector,
		Env: read.Env, Unread: read.Unread, Version: read.Version}
}

// SkippedConfigz is the reason the configz fact is missing from a run with Options.SkipConfigz.
const SkippedConfigz = "not read: this run does not read kubelets through the node proxy"

// configz reads every Ready node's kubelet configuration through the API server's node proxy:
// one request per node, no retries, at most Workers in flight.
func (g *gatherer) configz(ctx context.Context) error {
	if g.o.SkipConfigz {
		g.f.miss(FactConfigz, "nodes/proxy", SkippedConfigz)
		return nil
	}
	out, st, err := g.r.ConfigzAll(ctx, g.f.Nodes, clusterread.ConfigzOptions{Workers: g.o.Workers, Timeout: g.o.ConfigzTimeout, Progress: g.o.ConfigzProgress})
	g.f.Configz = out
	if m, ok := clusterread.AsMissing(err); ok {
		g.f.miss(FactConfigz, m.Resource, m.Reason)
		return nil
	}
	if len(g.f.Nodes) == 0 {
		return err
	}
	g.f.stat(StatConfigzErrors, st.Errors)
	g.f.stat(StatConfigzRequests, st.Requests)
	return err
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
	samples, err := g.r.APIServerMetrics(ctx, "apiserver_flowcontrol_")
	if m, ok := clusterread.AsMissing(err); ok {
		g.f.miss(FactMetrics, m.Resource, m.Reason)
		return nil
	}
	g.f.APF = samples
	return err
}
