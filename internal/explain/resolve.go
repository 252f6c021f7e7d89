package explain

import (
	"context"
	"net/netip"
	"regexp"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekeeper/nodekeeper/internal/instances"
	"github.com/nodekeeper/nodekeeper/internal/kube"
	"github.com/nodekeeper/nodekeeper/internal/lease"
)

// How a target was read (Target.As).
const (
	AsNode       = "node"
	AsLease      = "lease"
	AsInstance   = "instance"
	AsProviderID = "providerID"
	AsDNS        = "dns"
	AsIP         = "ip"
	AsAuditLog   = "audit-log"
)

var (
	reInstanceID = regexp.MustCompile(`^i-[0-9a-f]{8}(?:[0-9a-f]{9})?$`)
	// reDNS is an EC2 private DNS name, IP-based: ip-10-0-1-2.ec2.internal (us-east-1),
	// ip-10-0-1-2.us-west-2.compute.internal (the other regions), or its first label alone.
	reDNS = regexp.MustCompile(`^ip-(\d{1,3})-(\d{1,3})-(\d{1,3})-(\d{1,3})(?:\.|$)`)
)

// nodeRead is the Node, when it exists.
type nodeRead struct {
	n *corev1.Node
}

// leaseRead is the node lease, when it exists.
type leaseRead struct {
	l *coordinationv1.Lease
}

// instanceRead is the instance EC2 described.
type instanceRead struct {
	i ec2types.Instance
}

// resolve finds the node the target names: by name first (a GET of the Node and of the lease),
// then by EC2 (--aws), then by one LIST of the Nodes (instance IDs, providerIDs and IPs are not
// field-selectable), then in the audit log.
func (t *teller) resolve(ctx context.Context) error {
	given := strings.TrimSpace(t.o.Target)
	tg := &t.s.Target
	var wantID, wantIP string
	switch {
	case reInstanceID.MatchString(given):
		tg.As, wantID = AsInstance, given
	case strings.HasPrefix(given, "aws://"):
		tg.As, wantID = AsProviderID, instances.InstanceIDFromProviderID(given)
		if wantID == "" {
			return &TargetError{Target: given}
		}
	default:
		if ip, err := netip.ParseAddr(given); err == nil && ip.Is4() {
			tg.As, wantIP = AsIP, ip.String()
		} else if m := reDNS.FindStringSubmatch(given); m != nil {
			tg.As, wantIP = AsDNS, strings.Join(m[1:], ".")
		}
	}
	// A name: the Node, else its lease.
	if wantID == "" && tg.As != AsIP {
		found, err := t.byName(ctx, given)
		if err != nil || found {
			return err
		}
	}
	// EC2 knows every instance by ID, private IP and private DNS name.
	if t.o.AWS != nil && (wantID != "" || wantIP != "") {
		inst, err := t.describeTarget(ctx, wantID, wantIP)
		if err != nil {
			return err
		}
		if inst != nil {
			t.inst = &instanceRead{i: *inst}
			if dns := deref(inst.PrivateDnsName); dns != "" {
				if _, err := t.byName(ctx, dns); err != nil {
					return err
				}
				if t.node == nil && t.lease == nil {
					tg.Node = dns
				}
			}
			if t.node == nil && tg.Node == "" {
				tg.Node = deref(inst.InstanceId)
			}
			return nil
		}
	}
	// One LIST of the Nodes for what a GET cannot find.
	var nodes []corev1.Node
	err := kube.List(ctx, "nodes", metav1.ListOptions{Limit: t.o.ChunkSize}, t.d.Bulk.CoreV1().Nodes().List, func(l *corev1.NodeList) error {
		nodes = append(nodes, l.Items...)
		return nil
	})
	if err != nil && !apierrors.IsForbidden(err) {
		return err
	}
	if err != nil {
		t.gap(SourceNode, "list", "nodes", err)
	}
	var matches []*corev1.Node
	for i := range nodes {
		n := &nodes[i]
		if matchesNode(n, given, wantID, wantIP) {
			matches = append(matches, n)
		}
	}
	switch {
	case len(matches) == 1:
		t.setNode(matches[0])
		return t.getLease(ctx, matches[0].Name)
	case len(matches) > 1:
		var names []string
		for _, n := range matches {
			names = append(names, n.Name)
		}
		sort.Strings(names)
		return &TargetError{Target: given, Ambiguous: true, Nearest: names}
	}
	// Only the audit log may still know it: a Node deleted, its lease gone, no --aws.
	if len(t.o.Audit) > 0 && wantID == "" && tg.As != AsIP {
		tg.As, tg.Node = AsAuditLog, given
		return nil
	}
	names := make([]string, 0, len(nodes))
	for i := range nodes {
		names = append(names, nodes[i].Name)
	}
	_ = kube.ListLeases(ctx, t.d.Bulk.CoordinationV1(), lease.NodeLeaseNamespace, t.o.ChunkSize, func(l *coordinationv1.LeaseList) error {
		for i := range l.Items {
			names = append(names, l.Items[i].Name)
		}
		return nil
	})
	return &TargetError{Target: given, Nearest: nearest(given, names, 5)}
}

// byName looks for a Node, then a node lease, of that name.
func (t *teller) byName(ctx context.Context, name string) (bool, error) {
	n, err := t.d.Bulk.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		if t.s.Target.As == "" {
			t.s.Target.As = AsNode
		}
		t.setNode(n)
		return true, t.getLease(ctx, name)
	case apierrors.IsForbidden(err):
		t.gap(SourceNode, "get", "nodes/"+name, err)
	case !apierrors.IsNotFound(err):
		return false, err
	}
	if err := t.getLease(ctx, name); err != nil {
		return false, err
	}
	if t.lease != nil {
		if t.s.Target.As == "" {
			t.s.Target.As = AsLease
		}
		t.s.Target.Node = name
		return true, nil
	}
	return false, nil
}

// getLease reads the node lease of name (absent: no lease).
func (t *teller) getLease(ctx context.Context, name string) error {
	l, err := t.d.Bulk.CoordinationV1().Leases(lease.NodeLeaseNamespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		t.lease = &leaseRead{l: l}
		t.s.Target.Lease = lease.NodeLeaseNamespace + "/" + name
	case apierrors.IsForbidden(err):
		t.gap(SourceLease, "get", "leases/"+name+" in "+lease.NodeLeaseNamespace, err)
	case !apierrors.IsNotFound(err):
		return err
	}
	return nil
}

func (t *teller) setNode(n *corev1.Node) {
	t.node = &nodeRead{n: n}
	tg := &t.s.Target
	tg.Node, tg.NodeExists, tg.ProviderID = n.Name, true, n.Spec.ProviderID
	tg.InstanceID = instances.InstanceIDFromProviderID(n.Spec.ProviderID)
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP && tg.InternalIP == "" {
			tg.InternalIP = a.Address
		}
	}
}

// matchesNode reports whether n is the node the target names.
func matchesNode(n *corev1.Node, given, id, ip string) bool {
	if n.Name == given || (id != "" && instances.InstanceIDFromProviderID(n.Spec.ProviderID) == id) {
		return true
	}
	for _, a := range n.Status.Addresses {
		switch a.Type {
		case corev1.NodeInternalIP:
			if ip != "" && a.Address == ip {
				return true
			}
		case corev1.NodeInternalDNS, corev1.NodeHostName:
			if a.Address == given {
				return true
			}
		}
	}
	return false
}

// describeTarget asks EC2 for the instance by ID, else by private IP or DNS name. A refused
// call is a gap; nil without error: EC2 does not know it.
func (t *teller) describeTarget(ctx context.Context, id, ip string) (*ec2types.Instance, error) {
	in := &ec2.DescribeInstancesInput{}
	switch {
	case id != "":
		in.InstanceIds = []string{id}
	default:
		// A private DNS name holds the IP (ip-10-0-1-2.…), whichever form it takes: EC2's
		// private-ip-address filter finds it in any region.
		in.Filters = []ec2types.Filter{{Name: strp("private-ip-address"), Values: []string{ip}}}
	}
	return t.describeInstance(ctx, in)
}

// nearest are the names closest to given (shared prefix, then edit distance), at most n.
func nearest(given string, names []string, n int) []string {
	type scored struct {
		name string
		d    int
	}
	seen := map[string]bool{}
	var out []scored
	for _, name := range names {
		if seen[name] {
			continue
		}
		seen[name] = true
		out = append(out, scored{name, distance(given, name)})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].d != out[j].d {
			return out[i].d < out[j].d
		}
		return out[i].name < out[j].name
	})
	var names2 []string
	for i := 0; i < len(out) && i < n; i++ {
		if out[i].d > max(len(given), len(out[i].name))*2/3 {
			break // nothing alike
		}
		names2 = append(names2, out[i].name)
	}
	return names2
}

// distance is the Levenshtein distance, on bytes, bounded to 256 bytes a side.
func distance(a, b string) int {
	if len(a) > 256 {
		a = a[:256]
	}
	if len(b) > 256 {
		b = b[:256]
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func strp(s string) *string { return &s }

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
