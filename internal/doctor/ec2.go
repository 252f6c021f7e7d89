package doctor

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"

	"github.com/aws/aws-sdk-go-v2/service/ec2"

	nkaws "github.com/nodekeeper/nodekeeper/internal/aws"
	"github.com/nodekeeper/nodekeeper/internal/eni"
	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/instances"
	"github.com/nodekeeper/nodekeeper/internal/lease"
)

// The EC2 section (doctor --aws) joins the cluster's Nodes with what EC2 says: machines running
// without a Node (a kubelet of 1.29 or later whose Node was deleted re-creates nothing, so only
// EC2 or the audit log can see it), Nodes whose instance is gone, and subnets short of addresses.

// SectionEC2 is the section of the EC2 checks; it is in the report only with --aws.
const SectionEC2 = "ec2"

var sectionEC2 = findings.SectionSpec{Name: SectionEC2, Title: "EC2: instances without Nodes, Nodes without instances, subnet addresses"}

func strp(s string) *string { return &s }

// EC2Options turn on the EC2 section; its clients are in Deps.
type EC2Options struct {
	Cluster string // the EKS cluster name the instances are tagged with
	// RegisterGrace: an instance launched less than this ago may still be registering and is
	// not reported (default 10 minutes).
	RegisterGrace time.Duration
	// Region is the region the clients talk to, for the commands NK801 prints.
	Region string
	// AuditLog: --audit-log was given; NodeDeletions are the Node deletions read from it
	// (ReadNodeDeletions), named beside the instances running without a Node.
	AuditLog      bool
	NodeDeletions []NodeDeletion
	// BootWindow: the root volumes of Nodes launched less than this ago are checked (default
	// DefaultBootWindow).
	BootWindow time.Duration
}

// awsRun is what the EC2 reads of one run use: the section's options and the AWS clients of Deps.
type awsRun struct {
	EC2Options
	API             nkaws.EC2API
	Metrics         nkaws.CloudWatchAPI
	LaunchTemplates nkaws.LaunchTemplatesAPI
	Nodegroups      nkaws.NodegroupTemplatesAPI
	AutoScaling     nkaws.AutoScalingAPI
}

func (g *gatherer) aws() awsRun {
	return awsRun{EC2Options: *g.o.EC2, API: g.d.EC2, Metrics: g.d.CloudWatch,
		LaunchTemplates: g.d.LaunchTemplates, Nodegroups: g.d.Nodegroups, AutoScaling: g.d.AutoScaling}
}

// EC2Inputs is what CheckEC2 reads.
type EC2Inputs struct {
	Cluster string
	// Running are the cluster's running instances (found by tag).
	Running []ec2types.Instance
	// ByID are the instances the Nodes' providerIDs name, in any state; an ID absent here is
	// unknown to EC2.
	ByID    map[string]ec2types.Instance
	Subnets []ec2types.Subnet
	Nodes   []corev1.Node
	// Settings are the aws-node settings: custom networking moves pod addresses to the
	// ENIConfig's subnet, the warm-pool targets decide how many addresses a node holds, and
	// prefix delegation turns the count into a fragmentation question.
	Settings eni.Settings
	// PodSubnets maps a node's name to the subnet of the ENIConfig it selects (custom
	// networking only).
	PodSubnets map[string]string
	// Types is where the Nodes' instance types are looked up (nil: the built-in table).
	Types         *eni.Catalog
	Now           time.Time
	RegisterGrace time.Duration
	// Region is put in the commands that remove an instance ("" leaves it to the AWS CLI).
	Region string
	// AuditLog: an audit log was read; Deletions are the Node deletions it holds (zombie.go).
	AuditLog  bool
	Deletions []NodeDeletion
}

func strDeref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// CheckEC2 compares the Nodes with the instances and subnets EC2 knows.
func CheckEC2(in EC2Inputs) []findings.Finding {
	var out []findings.Finding
	nodes := instances.NewNodeSet(len(in.Nodes))
	for i := range in.Nodes {
		nodes.Add(instances.Node{Name: in.Nodes[i].Name, ProviderID: in.Nodes[i].Spec.ProviderID})
	}
	// Running instances without a Node (one launched within the grace may still be registering).
	for _, o := range instances.WithoutNode(in.Running, nodes, in.Now, in.RegisterGrace) {
		inst, id, up := o.Instance, o.ID(), o.Age
		launched := "unknown launch time"
		if inst.LaunchTime != nil {
			launched = inst.LaunchTime.UTC().Format(time.RFC3339)
		}
		f := RuleInstanceWithoutNode.New("instance/"+id, "%s launched %s, running %s with no Node (billed all that time if it never joined, since its Node's deletion otherwise)",
			string(inst.InstanceType), launched, lease.Elapsed(up))
		var ev []string
		if name := strDeref(inst.PrivateDnsName); name != "" {
			ev = append(ev, "private DNS name "+name)
		}
		if ip := strDeref(inst.PrivateIpAddress); ip != "" {
			ev = append(ev, "private IP "+ip)
		}
		if np := instances.TagValue(inst.Tags, "karpenter.sh/nodepool"); np != "" {
			ev = append(ev, "Karpenter nodepool "+np)
		}
		if ng := instances.TagValue(inst.Tags, "eks:nodegroup-name"); ng != "" {
			ev = append(ev, "node group "+ng)
		}
		more, remediation := zombieReport(inst, in)
		f.Remediation = remediation
		out = append(out, f.WithEvidence(append(ev, more...)...))
	}
	// Nodes whose instance is gone.
	for i := range in.Nodes {
		n := &in.Nodes[i]
		id := instances.InstanceIDFromProviderID(n.Spec.ProviderID)
		if id == "" {
			continue
		}
		inst, ok := in.ByID[id]
		res := "node/" + n.Name
		switch {
		case !ok:
			out = append(out, RuleNodeInstanceGone.New(res, "instance %s is not known to EC2 (terminated over an hour ago, or in another account or region)", id))
		case inst.State == nil:
		case inst.State.Name == ec2types.InstanceStateNameTerminated || inst.State.Name == ec2types.InstanceStateNameShuttingDown:
			out = append(out, RuleNodeInstanceGone.New(res, "instance %s is %s%s", id, inst.State.Name, reasonSuffix(inst)))
		case inst.State.Name == ec2types.InstanceStateNameStopped || inst.State.Name == ec2types.InstanceStateNameStopping:
			out = append(out, RuleNodeInstanceGone.At(findings.Info, res, "instance %s is %s%s", id, inst.State.Name, reasonSuffix(inst)))
		}
	}
	out = append(out, checkSubnets(in)...)
	return out
}

// subnetNeed is the most addresses one node takes from a subnet, and the node.
type subnetNeed struct {
	addrs int64
	node  string
	why   string
}

// checkSubnets compares each subnet's free addresses with what the largest node using it takes
// when full of pods (see addressNeed): the node subnets, and with custom networking the
// ENIConfigs' pod subnets. With prefix delegation the question is whether a free /28 is likely.
func checkSubnets(in EC2Inputs) []findings.Finding {
	needs := map[string]subnetNeed{}
	podSubnet := map[string]bool{} // subnets that hold pod addresses (or prefixes)
	note := func(subnet string, n subnetNeed) {
		if subnet != "" && n.addrs > needs[subnet].addrs {
			needs[subnet] = n
		}
	}
	custom := in.Settings.CustomNetworking
	for i := range in.Nodes {
		n := &in.Nodes[i]
		inst, ok := in.ByID[instances.InstanceIDFromProviderID(n.Spec.ProviderID)]
		if !ok || inst.SubnetId == nil {
			continue
		}
		pods := n.Status.Capacity[corev1.ResourcePods]
		p := pods.Value()
		if p == 0 {
			p = 110 // the kubelet's default max pods
		}
		var it *eni.InstanceType
		if t, err := in.Types.Lookup(instanceType(n)); err == nil {
			it = &t
		}
		addrs, enis, why := addressNeed(p, it, in.Settings)
		if !custom {
			podSubnet[*inst.SubnetId] = true
			note(*inst.SubnetId, subnetNeed{addrs + max(enis, 1), n.Name, why})
			continue
		}
		// Custom networking: the node keeps its own address in its subnet; pod ENIs, their
		// primary addresses and the pods' addresses are in the ENIConfig's subnet.
		note(*inst.SubnetId, subnetNeed{1, n.Name, "its own address; pods use the ENIConfig's subnet"})
		if ps := in.PodSubnets[n.Name]; ps != "" {
			podSubnet[ps] = true
			note(ps, subnetNeed{addrs + enis, n.Name, why + ", in its ENIConfig's subnet"})
		}
	}
	var out []findings.Finding
	subnets := append([]ec2types.Subnet(nil), in.Subnets...)
	sort.Slice(subnets, func(i, j int) bool { return strDeref(subnets[i].SubnetId) < strDeref(subnets[j].SubnetId) })
	for _, s := range subnets {
		id := strDeref(s.SubnetId)
		nd, ok := needs[id]
		if !ok || s.AvailableIpAddressCount == nil {
			continue
		}
		free := int64(*s.AvailableIpAddressCount)
		res := "subnet/" + id
		where := fmt.Sprintf("%s in %s", strDeref(s.CidrBlock), strDeref(s.AvailabilityZone))
		switch {
		case free < nd.addrs:
			sev := findings.Warning
			if free == 0 {
				sev = findings.Error
			}
			out = append(out, RuleSubnetAddressesLow.At(sev, res, "%s: %d free addresses, a node like %s needs %d (%s)", where, free, nd.node, nd.addrs, nd.why))
		case in.Settings.PrefixDelegation && podSubnet[id] && free < 64:
			// A prefix is 16 aligned addresses; once a subnet's free addresses are few and
			// scattered, an aligned free /28 is unlikely even when the count looks enough.
			out = append(out, RuleSubnetPrefixFragmented.New(res, "%s: %d free addresses; each /28 prefix needs 16 contiguous aligned ones", where, free))
		}
	}
	return out
}

// addressNeed is how many pod addresses a node with capacity for pods holds when full, and on
// how many pod ENIs (each of which takes one more address, its primary), following ipamd's
// warm pool: with WARM_IP_TARGET or MINIMUM_IP_TARGET it keeps max(pods + WARM_IP_TARGET,
// MINIMUM_IP_TARGET) addresses; otherwise whole ENIs, those the pods fill plus WARM_ENI_TARGET
// (default 1). With prefix delegation it counts /28 prefixes of 16 addresses instead: those the
// addresses above fill, or those the pods fill plus WARM_PREFIX_TARGET (default 1). All are
// bounded by the ENIs the instance type has for pods. Without instance data the need is the
// pods alone.
func addressNeed(pods int64, it *eni.InstanceType, s eni.Settings) (addrs, enis int64, why string) {
	if it == nil || it.IPv4PerENI < 2 {
		return pods, 1, fmt.Sprintf("max pods %d and its own; instance type unknown", pods)
	}
	perENI := int64(it.IPv4PerENI - 1)
	limit := int64(it.ENIs)
	if m := s.EffectiveMaxENI(); m > 0 && int64(m) < limit {
		limit = int64(m)
	}
	if s.CustomNetworking {
		limit--
	}
	limit = max(limit, 1)
	ceilDiv := func(a, b int64) int64 { return (a + b - 1) / b }
	if s.PrefixDelegation && it.Nitro() {
		return prefixNeed(pods, perENI, limit, s)
	}
	if s.WarmIPTarget.Positive() || s.MinimumIPTarget.Positive() {
		addrs = pods
		var parts []string
		if s.WarmIPTarget.Positive() {
			addrs += int64(s.WarmIPTarget.Value)
			parts = append(parts, fmt.Sprintf("max pods %d + WARM_IP_TARGET %d", pods, s.WarmIPTarget.Value))
		} else {
			parts = append(parts, fmt.Sprintf("max pods %d", pods))
		}
		if s.MinimumIPTarget.Positive() && int64(s.MinimumIPTarget.Value) > addrs {
			addrs = int64(s.MinimumIPTarget.Value)
			parts = append(parts, fmt.Sprintf("raised to MINIMUM_IP_TARGET %d", s.MinimumIPTarget.Value))
		}
		enis = min(ceilDiv(addrs, perENI), limit)
		addrs = min(addrs, enis*perENI)
		return addrs, enis, fmt.Sprintf("%s addresses on %s, plus their primary addresses", strings.Join(parts, ", "), plural(int(enis), "ENI"))
	}
	warm := int64(eni.DefaultWarmENITarget)
	if s.WarmENITarget.Valid && s.WarmENITarget.Value >= 0 {
		warm = int64(s.WarmENITarget.Value)
	}
	enis = min(ceilDiv(pods, perENI)+warm, limit)
	return enis * perENI, enis, fmt.Sprintf("%s of %d addresses: max pods %d + WARM_ENI_TARGET %d, on %s", plural(int(enis), "ENI"), perENI+1, pods, warm, it.Name)
}

func reasonSuffix(inst ec2types.Instance) string {
	if r := strDeref(inst.StateTransitionReason); r != "" {
		return " (" + r + ")"
	}
	return ""
}

// ec2InstanceTypes asks EC2 (one batched DescribeInstanceTypes) about the Nodes' instance
// types that the built-in table does not know, so that their capacity is checked too; the
// table's own types cost no call. AccessDenied leaves those types unknown and the fact missing
// with the permission named; other AWS errors fail the run like the rest of the EC2 section.
func (g *gatherer) ec2InstanceTypes(ctx context.Context) error {
	var ask []string
	for i := range g.f.Nodes {
		if t := instanceType(&g.f.Nodes[i]); t != "" && !eni.Known(t) {
			ask = append(ask, t)
		}
	}
	if len(ask) == 0 {
		return nil
	}
	cat, err := nkaws.InstanceCatalog(ctx, g.d.EC2, ask)
	if failed, err := g.awsFailed(FactEC2Types, "EC2", err); failed {
		return err
	}
	g.f.EC2.Types = cat
	return nil
}

// ec2 reads the cluster's running instances (by tag), the instances the Nodes name, and the
// subnets of both (with custom networking, the ENIConfigs' pod subnets too). AccessDenied leaves
// the fact missing with the permission named; other AWS errors fail the run.
func (g *gatherer) ec2(ctx context.Context) error {
	o := g.aws()
	listing, err := instances.ListRunning(ctx, o.API, o.Cluster)
	if err != nil {
		err = nkaws.Explain(nkaws.PermDescribeInstances, err)
	}
	if failed, err := g.awsFailed(FactEC2Instances, "EC2", err); failed {
		return err
	}
	running := listing.Running
	// The Nodes' instances: those the listing of running ones already holds, and EC2 asked
	// only about the others (stopped, terminated, or no longer tagged for the cluster).
	listed := make(map[string]ec2types.Instance, len(running))
	for _, inst := range running {
		listed[strDeref(inst.InstanceId)] = inst
	}
	byID := map[string]ec2types.Instance{}
	var ids []string
	for i := range g.f.Nodes {
		id := instances.InstanceIDFromProviderID(g.f.Nodes[i].Spec.ProviderID)
		if inst, ok := listed[id]; ok {
			byID[id] = inst
		} else if id != "" {
			ids = append(ids, id)
		}
	}
	insts, err := describeByID(ids, "instance-id", func(filters []ec2types.Filter) ([]ec2types.Instance, error) {
		return nkaws.DescribeInstances(ctx, o.API, &ec2.DescribeInstancesInput{Filters: filters})
	})
	if failed, err := g.awsFailed(FactEC2Instances, "EC2", err); failed {
		return err
	}
	for _, inst := range insts {
		byID[strDeref(inst.InstanceId)] = inst
	}
	g.f.EC2.Running, g.f.EC2.ByID = running, byID
	subnetIDs := map[string]bool{}
	for _, inst := range byID {
		if inst.SubnetId != nil {
			subnetIDs[*inst.SubnetId] = true
		}
	}
	if mode, _ := cniMode(g.f); mode.Settings.CustomNetworking {
		for _, id := range podSubnets(g.f) {
			subnetIDs[id] = true
		}
	}
	if len(subnetIDs) == 0 {
		return nil
	}
	var list []string
	for id := range subnetIDs {
		list = append(list, id)
	}
	sort.Strings(list)
	subnets, err := nkaws.DescribeSubnets(ctx, o.API, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{{Name: strp("subnet-id"), Values: list}}})
	if failed, err := g.awsFailed(FactEC2Subnets, "EC2", err); failed {
		return err
	}
	g.f.EC2.Subnets = subnets
	return nil
}

// awsFailed reports whether an AWS read of fact failed: AccessDenied leaves the fact missing
// with the permission named (the run goes on, the checks that need it are skipped), any other
// error comes back naming the service, to fail the run.
func (g *gatherer) awsFailed(fact Fact, service string, err error) (failed bool, fatal error) {
	if err == nil {
		return false, nil
	}
	if nkaws.IsAccessDenied(err) {
		g.f.miss(fact, strings.ToLower(service), err.Error())
		return true, nil
	}
	return true, fmt.Errorf("%s: %w", service, err)
}

// describeByID asks a Describe call for the resources whose ID is in ids, 200 a request,
// through the resource's ID filter rather than its IDs parameter: an unknown ID (an instance
// gone for hours, a volume deleted meanwhile) must be an absent row, not an error that fails the
// whole call.
func describeByID[T any](ids []string, filter string, describe func([]ec2types.Filter) ([]T, error)) ([]T, error) {
	var out []T
	for len(ids) > 0 {
		batch := ids[:min(len(ids), 200)]
		ids = ids[len(batch):]
		items, err := describe([]ec2types.Filter{{Name: strp(filter), Values: batch}})
		if err != nil {
			return nil, err
		}
		out = append(out, items...)
	}
	return out, nil
}

// prefixNeed is addressNeed with prefix delegation: perENI prefixes fit on each of limit ENIs.
func prefixNeed(pods, perENI, limit int64, s eni.Settings) (addrs, enis int64, why string) {
	const perPrefix = eni.IPsPerPrefix
	ceilDiv := func(a, b int64) int64 { return (a + b - 1) / b }
	var prefixes int64
	if s.WarmIPTarget.Positive() || s.MinimumIPTarget.Positive() {
		want := pods + int64(max(s.WarmIPTarget.Value, 0))
		if s.MinimumIPTarget.Positive() {
			want = max(want, int64(s.MinimumIPTarget.Value))
		}
		prefixes = ceilDiv(want, perPrefix)
		why = fmt.Sprintf("%d addresses (max pods %d with WARM_IP_TARGET/MINIMUM_IP_TARGET)", want, pods)
	} else {
		warm := int64(1)
		if s.WarmPrefixTarget.Valid && s.WarmPrefixTarget.Value >= 0 {
			warm = int64(s.WarmPrefixTarget.Value)
		}
		prefixes = ceilDiv(pods, perPrefix) + warm
		why = fmt.Sprintf("max pods %d + WARM_PREFIX_TARGET %d", pods, warm)
	}
	prefixes = min(prefixes, limit*perENI)
	enis = min(ceilDiv(prefixes, perENI), limit)
	return prefixes * perPrefix, enis, fmt.Sprintf("%d /28 prefixes of 16 addresses: %s", prefixes, why)
}

// podSubnets maps each node to the subnet of the ENIConfig it selects (custom networking). A
// missing CRD, a forbidden list or a node selecting a missing ENIConfig leave nodes out: the pod
// networking section reports those.
func podSubnets(f *Facts) map[string]string {
	subnetOf := map[string]string{}
	for _, c := range f.ENIConfigs.Items {
		if c.Subnet != "" {
			subnetOf[c.Name] = c.Subnet
		}
	}
	out := map[string]string{}
	labelDef, annotationDef := f.AWSNode.Env["ENI_CONFIG_LABEL_DEF"], f.AWSNode.Env["ENI_CONFIG_ANNOTATION_DEF"]
	for i := range f.Nodes {
		if name, _ := selectedENIConfig(&f.Nodes[i], labelDef, annotationDef); subnetOf[name] != "" {
			out[f.Nodes[i].Name] = subnetOf[name]
		}
	}
	return out
}
