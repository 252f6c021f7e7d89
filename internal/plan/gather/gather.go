// Package gather reads what a plan needs from a live cluster and, with an EC2 client, from AWS:
// the aws-node DaemonSet's environment, the Nodes (the node groups' instance types, maxPods,
// zones, OS and provisioner), one kubelet's configuration per group through the node proxy, the
// ENIConfigs, the priority level serving node leases and status, and with EC2 the groups'
// subnets (DescribeInstances) and their free addresses (DescribeSubnets). Everything is read,
// nothing is written; what cannot be read is left out with a note, and the plan says which of its
// limits that leaves unknown.
package gather

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	nkaws "github.com/nodekeeper/nodekeeper/internal/aws"
	"github.com/nodekeeper/nodekeeper/internal/clusterread"
	"github.com/nodekeeper/nodekeeper/internal/eni"
	"github.com/nodekeeper/nodekeeper/internal/instances"
	"github.com/nodekeeper/nodekeeper/internal/kube"
	"github.com/nodekeeper/nodekeeper/internal/plan"
	"github.com/nodekeeper/nodekeeper/internal/rules"
	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// Options say where to read.
type Options struct {
	// AWSNodeNamespace and AWSNodeName name the VPC CNI DaemonSet (kube-system/aws-node).
	AWSNodeNamespace, AWSNodeName string
	// EC2 reads subnets and unknown instance types; nil without --aws.
	EC2 nkaws.EC2API
	// Limit is the client-side rate limit; ChunkSize the page size of lists.
	Limit     kube.RateLimit
	ChunkSize int64
}

// Request is one node group to grow, as the command line or a scenario file asks.
type Request struct {
	// Name names the group in the plan; Nodegroup selects its existing nodes (the EKS, eksctl
	// or Karpenter node group or node pool label), from which what is not given is read.
	Name      string
	Nodegroup string
	// InstanceType is the new nodes' type; "" = the type most of the group's nodes have.
	InstanceType string
	Add          int
	PodsPerNode  int
	// MaxPods is the new kubelets' maxPods; 0 = the group's nodes' pod capacity, else the EKS
	// AMI's value for the type.
	MaxPods      int
	PullsPerNode int
	ReservedENIs int
	// Subnets are the new nodes' subnets; none = the subnets of the group's nodes (with EC2).
	Subnets []string
	// Zones restrict or give the zones (with custom networking, the ENIConfig per zone).
	Zones []string
	// ENIConfig is the ENIConfig the new nodes select (custom networking); "" = by zone or the
	// group's nodes' label.
	ENIConfig string
	// Kubelet overrides the pull limits read from a kubelet (nil: read, or the defaults).
	Kubelet *plan.Kubelet
	// SubnetsFree gives subnets' free addresses without EC2 (a scenario's).
	SubnetsFree []plan.Subnet
}

// Labels that name a node's group.
var groupLabels = []string{rules.LabelEKSNodegroup, rules.LabelEksctlNodegroup, rules.LabelKarpenterNodePool}

const (
	labelInstanceType = "node.kubernetes.io/instance-type"
	labelZone         = "topology.kubernetes.io/zone"
	envENIConfigLabel = "ENI_CONFIG_LABEL_DEF"
)

type reader struct {
	o      Options
	client kube.Interface
	// cr reads what plan shares with doctor (clusterread), so that both read it alike.
	cr clusterread.Reader
	in plan.Input
	// eniLabels is the ENIConfig label most of each group's nodes carry.
	eniLabels map[string]string
	// karpenter is Karpenter's setting, read once for every group it provisions.
	karpenter *clusterread.Karpenter
}

// Gather reads the cluster (and AWS) for reqs into a plan's input.
func Gather(ctx context.Context, cfg *rest.Config, o Options, reqs []Request) (plan.Input, error) {
	cfg = kube.Configure(cfg, "plan", o.Limit)
	r := &reader{o: o, in: plan.Input{Subnets: map[string]plan.Subnet{}}, eniLabels: map[string]string{}}
	var err error
	if r.client, err = kube.NewForConfig(cfg); err != nil {
		return r.in, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return r.in, err
	}
	r.cr = clusterread.Reader{Client: r.client, Dynamic: dyn, REST: r.client.CoreV1().RESTClient(), ChunkSize: o.ChunkSize}
	if err := r.awsNode(ctx); err != nil {
		return r.in, err
	}
	nodes, err := r.nodes(ctx)
	if err != nil {
		return r.in, err
	}
	r.in.ExistingNodes = len(nodes)
	custom := eni.ParseSettings(r.in.Env).CustomNetworking
	var eniConfigs map[string]string
	if custom {
		if eniConfigs, err = r.eniConfigs(ctx); err != nil {
			return r.in, err
		}
	}
	for _, q := range reqs {
		for _, s := range q.SubnetsFree {
			r.in.Subnets[s.ID] = s
		}
	}
	var wantSubnets []string
	for _, q := range reqs {
		g, err := r.group(ctx, q, nodes, eniConfigs, custom)
		if err != nil {
			return r.in, err
		}
		r.in.Groups = append(r.in.Groups, g)
		for _, pl := range g.Placements {
			for _, id := range []string{pl.NodeSubnet, pl.PodSubnet} {
				if _, known := r.in.Subnets[id]; id != "" && !known {
					wantSubnets = appendNew(wantSubnets, id)
				}
			}
		}
	}
	if err := r.subnets(ctx, wantSubnets); err != nil {
		return r.in, err
	}
	// Subnets given by ID learn their zone from EC2 only now; with custom networking the zone
	// chooses the ENIConfig, whose subnet is then read too.
	var podSubnets []string
	for gi := range r.in.Groups {
		g := &r.in.Groups[gi]
		for pi := range g.Placements {
			pl := &g.Placements[pi]
			sn, ok := r.in.Subnets[pl.NodeSubnet]
			if pl.Zone != "" || !ok || sn.Zone == "" {
				continue
			}
			pl.Zone = sn.Zone
			if custom && pl.PodSubnet == "" {
				pl.ENIConfig, pl.PodSubnet = r.podSubnet(reqs[gi], g.Name, pl.Zone, eniConfigs)
				if _, known := r.in.Subnets[pl.PodSubnet]; pl.PodSubnet != "" && !known {
					podSubnets = appendNew(podSubnets, pl.PodSubnet)
				}
			}
		}
	}
	if err := r.subnets(ctx, podSubnets); err != nil {
		return r.in, err
	}
	for _, g := range r.in.Groups {
		for _, pl := range g.Placements {
			switch {
			case !custom || pl.PodSubnet != "":
			case pl.ENIConfig == "":
				r.note("node group %s: the zone of subnet %s is unknown (it needs --aws), so is the ENIConfig its nodes select", g.Name, pl.NodeSubnet)
			default:
				r.note("node group %s: ENIConfig %q has no subnet (or does not exist): the pods' subnet in %s is unknown", g.Name, pl.ENIConfig, pl.Zone)
			}
		}
	}
	r.in.APF = r.apf(ctx)
	return r.in, nil
}

func (r *reader) note(format string, args ...any) {
	r.in.Notes = append(r.in.Notes, fmt.Sprintf(format, args...))
}

// awsNode reads the aws-node container's environment; a missing or unreadable DaemonSet leaves
// it empty (the CNI's defaults) with a note. Variables set from a ConfigMap or Secret are noted as
// not read; those set from the pod's own fields (the stock manifest's MY_NODE_NAME) are no
// setting and need no note.
func (r *reader) awsNode(ctx context.Context) error {
	r.in.Env = map[string]string{}
	res := r.o.AWSNodeNamespace + "/" + r.o.AWSNodeName
	a, err := r.cr.AWSNode(ctx, r.o.AWSNodeNamespace, r.o.AWSNodeName)
	if m, ok := clusterread.AsMissing(err); ok {
		r.note("DaemonSet %s cannot be read (%s): the VPC CNI's defaults are assumed", res, m.Reason)
		return nil
	}
	switch {
	case err != nil:
		return fmt.Errorf("reading DaemonSet %s: %w", res, err)
	case !a.Found:
		r.note("DaemonSet %s not found: the VPC CNI's defaults are assumed", res)
		return nil
	case !a.Container:
		r.note("DaemonSet %s has no aws-node container: the VPC CNI's defaults are assumed", res)
		return nil
	}
	r.in.Env = a.Env
	for _, name := range a.Unread {
		r.note("aws-node's %s comes from a reference and is not read", name)
	}
	return nil
}

func (r *reader) nodes(ctx context.Context) ([]corev1.Node, error) {
	var out []corev1.Node
	err := kube.List(ctx, "nodes", metav1.ListOptions{Limit: r.o.ChunkSize}, r.client.CoreV1().Nodes().List, func(l *corev1.NodeList) error {
		out = append(out, l.Items...)
		return nil
	})
	if apierrors.IsForbidden(err) {
		r.note("nodes cannot be listed (%s): node groups are known only from the flags", clusterread.Needs("list", "nodes", ""))
		return nil, nil
	}
	return out, err
}

// eniConfigs maps each ENIConfig's name to its subnet (clusterread: paged); nil when the CRD
// is not served, or with a note when the ENIConfigs may not be listed.
func (r *reader) eniConfigs(ctx context.Context) (map[string]string, error) {
	l, err := r.cr.ENIConfigs(ctx)
	if m, ok := clusterread.AsMissing(err); ok {
		r.note("ENIConfigs cannot be listed (%s): the pods' subnets are unknown", m.Reason)
		return nil, nil
	}
	if err != nil || !l.Served {
		return nil, err
	}
	return l.Subnets(), nil
}

func nodeGroup(n *corev1.Node) string {
	for _, l := range groupLabels {
		if v := n.Labels[l]; v != "" {
			return v
		}
	}
	return ""
}

// mostCommon is the most frequent non-empty value (ties: the smallest).
func mostCommon(values []string) string {
	count := map[string]int{}
	best := ""
	for _, v := range values {
		if v == "" {
			continue
		}
		count[v]++
		if count[v] > count[best] || (count[v] == count[best] && v < best) {
			best = v
		}
	}
	return best
}

func appendNew(list []string, s string) []string {
	for _, v := range list {
		if v == s {
			return list
		}
	}
	return append(list, s)
}

// group builds one node group from a request and the group's existing nodes.
func (r *reader) group(ctx context.Context, q Request, nodes []corev1.Node, eniConfigs map[string]string, custom bool) (plan.Group, error) {
	g := plan.Group{Name: q.Name, Add: q.Add, PodsPerNode: q.PodsPerNode, MaxPods: q.MaxPods, PullsPerNode: q.PullsPerNode, ReservedENIs: q.ReservedENIs}
	if g.Name == "" {
		g.Name = q.Nodegroup
	}
	if g.Name == "" {
		g.Name = "new nodes"
	}
	var members []*corev1.Node
	if q.Nodegroup != "" {
		for i := range nodes {
			if nodeGroup(&nodes[i]) == q.Nodegroup {
				members = append(members, &nodes[i])
			}
		}
		if len(members) == 0 {
			r.note("node group %s has no nodes yet: its instance type, subnets and settings come from the flags", q.Nodegroup)
		}
	}
	var types, pods, zones, eniCfgs []string
	for _, n := range members {
		types = append(types, n.Labels[labelInstanceType])
		if c, ok := n.Status.Capacity[corev1.ResourcePods]; ok {
			pods = append(pods, c.String())
		}
		zones = append(zones, n.Labels[labelZone])
		eniCfgs = append(eniCfgs, n.Labels[clusterread.LabelENIConfig])
	}
	typeName := q.InstanceType
	if typeName == "" {
		typeName = mostCommon(types)
	}
	if typeName == "" {
		return g, fmt.Errorf("node group %q: no instance type: pass --instance-type", g.Name)
	}
	t, err := r.instanceType(ctx, typeName)
	if err != nil {
		return g, fmt.Errorf("node group %q: %w", g.Name, err)
	}
	g.Type = t
	// The group's nodes' pod capacity is what their OS and provisioner set for their type: the
	// new nodes get the same when they are of that type.
	sameType := q.InstanceType == "" || eni.Normalize(q.InstanceType) == mostCommon(types)
	switch {
	case g.MaxPods > 0:
		g.MaxPodsSource = "given"
	case sameType && mostCommon(pods) != "":
		if _, err := fmt.Sscan(mostCommon(pods), &g.MaxPods); err == nil {
			g.MaxPodsSource = "the pod capacity of node group " + q.Nodegroup + "'s nodes"
		}
	}
	if len(members) > 0 {
		g.OS = rules.DetectNodeOS(members[0].Status.NodeInfo.OSImage)
		g.Provisioner = rules.DetectProvisioner(members[0].Labels)
	}
	if g.Provisioner == rules.ProvisionerKarpenter && q.ReservedENIs == 0 {
		// Karpenter's reservedENIs counts the ENI custom networking takes as well; those it
		// reserves beyond that one carry no pod addresses (as doctor reads it).
		n, src, ok, err := r.karpenterReservedENIs(ctx)
		if err != nil {
			return g, err
		}
		if ok {
			if custom {
				n--
			}
			if n > 0 {
				g.ReservedENIs = n
				r.note("node group %s: %d ENIs reserved from pods by Karpenter's reservedENIs (%s)", g.Name, n, src)
			}
		}
	}
	g.Kubelet = r.kubelet(ctx, q, members)

	// Placements: the subnets given, else the subnets of the group's instances (EC2).
	subnets := q.Subnets
	subnetZone := map[string]string{}
	for _, s := range q.SubnetsFree {
		subnetZone[s.ID] = s.Zone
	}
	if len(subnets) == 0 && len(members) > 0 && r.o.EC2 != nil {
		found, zonesOf, err := r.instanceSubnets(ctx, members)
		if err != nil {
			return g, err
		}
		subnets = found
		for k, v := range zonesOf {
			subnetZone[k] = v
		}
	}
	want := q.Zones
	if len(want) == 0 && len(subnets) == 0 {
		for _, z := range zones {
			if z != "" {
				want = appendNew(want, z)
			}
		}
		sort.Strings(want)
	}
	r.eniLabels[g.Name] = mostCommon(eniCfgs)
	podSubnet := func(zone string) (string, string) {
		if !custom || zone == "" && q.ENIConfig == "" && r.byZone() {
			return "", "" // chosen by zone once EC2 has said the subnet's
		}
		return r.podSubnet(q, g.Name, zone, eniConfigs)
	}
	for _, s := range subnets {
		z := subnetZone[s]
		if len(q.Zones) > 0 && z != "" && !slices.Contains(q.Zones, z) {
			continue
		}
		pl := plan.Placement{Zone: z, NodeSubnet: s}
		pl.ENIConfig, pl.PodSubnet = podSubnet(z)
		g.Placements = append(g.Placements, pl)
	}
	if len(subnets) == 0 {
		for _, z := range want {
			pl := plan.Placement{Zone: z}
			pl.ENIConfig, pl.PodSubnet = podSubnet(z)
			g.Placements = append(g.Placements, pl)
		}
		if len(want) == 0 && custom && q.ENIConfig != "" {
			pl := plan.Placement{}
			pl.ENIConfig, pl.PodSubnet = podSubnet("")
			g.Placements = append(g.Placements, pl)
		}
	}
	return g, nil
}

// podSubnet is the ENIConfig a new node of group in zone selects, and its subnet: --eniconfig,
// else the one named after the zone when ENI_CONFIG_LABEL_DEF is the zone label (the VPC CNI's
// usual per-zone setup), else the one the group's nodes are labelled with, else "default".
func (r *reader) podSubnet(q Request, group, zone string, eniConfigs map[string]string) (string, string) {
	name := q.ENIConfig
	if name == "" && zone != "" && r.byZone() {
		name = zone
	}
	if name == "" {
		name = r.eniLabels[group]
	}
	if name == "" {
		name = "default"
	}
	return name, eniConfigs[name]
}

// karpenterReservedENIs reads Karpenter's reservedENIs once (clusterread, as doctor reads it:
// its Deployment's RESERVED_ENIS, else the karpenter-global-settings ConfigMap, in the
// Deployment's namespace or, with no Deployment visible, in karpenter and kube-system). ok is
// false when it is not found; each read RBAC forbade is noted once, naming what it needs.
func (r *reader) karpenterReservedENIs(ctx context.Context) (n int, source string, ok bool, err error) {
	if r.karpenter == nil {
		k, err := r.cr.Karpenter(ctx)
		if err != nil {
			return 0, "", false, err
		}
		for _, m := range k.Unread {
			r.note("Karpenter's reservedENIs: %s cannot be read (%s)", m.Resource, m.Reason)
		}
		r.karpenter = &k
	}
	k := r.karpenter
	return k.ReservedENIs, k.Source, k.Found, nil
}

// byZone: aws-node selects ENIConfigs by the zone label (ENI_CONFIG_LABEL_DEF).
func (r *reader) byZone() bool {
	def := r.in.Env[envENIConfigLabel]
	return def == labelZone || def == "failure-domain.beta.kubernetes.io/zone"
}

// instanceType looks a type up in the built-in table, else (with EC2) DescribeInstanceTypes.
func (r *reader) instanceType(ctx context.Context, name string) (eni.InstanceType, error) {
	t, err := eni.Lookup(name)
	if err == nil || r.o.EC2 == nil || !errors.Is(err, eni.ErrUnknownInstanceType) {
		return t, err
	}
	cat, cerr := nkaws.InstanceCatalog(ctx, r.o.EC2, []string{name})
	if cerr != nil {
		return t, cerr
	}
	return cat.Lookup(name)
}

// kubelet reads the pull limits from one Ready node of the group (configz through the node
// proxy, as doctor reads it), else the kubelet's defaults.
func (r *reader) kubelet(ctx context.Context, q Request, members []*corev1.Node) plan.Kubelet {
	if q.Kubelet != nil {
		return *q.Kubelet
	}
	for _, n := range members {
		if !clusterread.NodeReady(n) {
			continue
		}
		res := r.cr.Configz(ctx, n.Name, 0)
		if res.Config == nil {
			r.note("node group %s: the kubelet configuration of %s could not be read (%s): the kubelet's pull defaults are assumed", q.Nodegroup, n.Name, res.Err)
			break
		}
		c := res.Config
		k := plan.DefaultKubelet()
		if c.RegistryPullQPS != nil {
			k.RegistryPullQPS = int(*c.RegistryPullQPS)
		}
		if c.RegistryBurst != nil {
			k.RegistryBurst = int(*c.RegistryBurst)
		}
		k.Source = "the kubelet configuration of " + n.Name
		return k
	}
	return plan.DefaultKubelet()
}

// instanceSubnets are the subnets of the group's instances (DescribeInstances), sorted.
func (r *reader) instanceSubnets(ctx context.Context, members []*corev1.Node) ([]string, map[string]string, error) {
	var ids []string
	for _, n := range members {
		if id := instances.InstanceIDFromProviderID(n.Spec.ProviderID); id != "" {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil, nil, nil
	}
	var subnets []string
	zones := map[string]string{}
	for len(ids) > 0 {
		batch := ids[:min(len(ids), 200)]
		ids = ids[len(batch):]
		insts, err := nkaws.DescribeInstances(ctx, r.o.EC2, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{{Name: strPtr("instance-id"), Values: batch}}})
		if nkaws.IsAccessDenied(err) {
			r.note("the node group's subnets are unknown: %v", err)
			return nil, nil, nil
		}
		if err != nil {
			return nil, nil, fmt.Errorf("EC2: %w", err)
		}
		for _, inst := range insts {
			if inst.SubnetId != nil {
				subnets = appendNew(subnets, *inst.SubnetId)
				if inst.Placement != nil && inst.Placement.AvailabilityZone != nil {
					zones[*inst.SubnetId] = *inst.Placement.AvailabilityZone
				}
			}
		}
	}
	sort.Strings(subnets)
	return subnets, zones, nil
}

func strPtr(s string) *string { return &s }

// subnets reads the free addresses of ids (DescribeSubnets) into the input.
func (r *reader) subnets(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	if r.o.EC2 == nil {
		r.note("the free addresses of %s are read with --aws", strings.Join(ids, ", "))
		return nil
	}
	sort.Strings(ids)
	subnets, err := nkaws.DescribeSubnets(ctx, r.o.EC2, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{{Name: strPtr("subnet-id"), Values: ids}}})
	if nkaws.IsAccessDenied(err) {
		r.note("subnets' free addresses are unknown: %v", err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("EC2: %w", err)
	}
	for _, s := range subnets {
		if s.SubnetId == nil || s.AvailableIpAddressCount == nil {
			continue
		}
		r.in.Subnets[*s.SubnetId] = plan.Subnet{ID: *s.SubnetId, Zone: deref(s.AvailabilityZone), CIDR: deref(s.CidrBlock), Free: int(*s.AvailableIpAddressCount)}
	}
	for _, id := range ids {
		if _, ok := r.in.Subnets[id]; !ok {
			r.note("subnet %s is not known to EC2", id)
		}
	}
	return nil
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// apf reads the priority level of the suggested FlowSchema system-node-high (node-high) and its
// nominal seats from the API server's metrics (apiserver_flowcontrol_nominal_limit_seats); nil
// when either cannot be read.
func (r *reader) apf(ctx context.Context) *plan.APF {
	level := "node-high"
	fs, err := r.client.FlowcontrolV1().FlowSchemas().Get(ctx, "system-node-high", metav1.GetOptions{})
	switch {
	case err == nil && fs.Spec.PriorityLevelConfiguration.Name != "":
		level = fs.Spec.PriorityLevelConfiguration.Name
	case apierrors.IsForbidden(err):
		r.note("FlowSchema system-node-high cannot be read (%s): its priority level is taken to be %s",
			clusterread.Needs("get", "flowschemas.flowcontrol.apiserver.k8s.io", ""), level)
	}
	samples, err := r.cr.APIServerMetrics(ctx, "apiserver_flowcontrol_nominal_limit_seats")
	if err != nil {
		reason := err.Error()
		if m, ok := clusterread.AsMissing(err); ok {
			reason = m.Reason
		}
		r.note("the API server's /metrics cannot be read (%s): the priority level's seats are unknown", textsafe.ClipRaw(reason, 120))
		return nil
	}
	for _, s := range samples {
		if s.Name == "apiserver_flowcontrol_nominal_limit_seats" && s.Labels["priority_level"] == level {
			return &plan.APF{PriorityLevel: level, Seats: int(s.Value), Source: "apiserver_flowcontrol_nominal_limit_seats"}
		}
	}
	r.note("the API server's metrics have no nominal seats for priority level %s", level)
	return nil
}
