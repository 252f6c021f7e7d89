// Package instances is what nodekeeper knows about a cluster's EC2 instances, shared by
// `doctor --aws` (NK801) and the controller's EC2 loop (`controller --aws`): the one listing of
// the instances tagged for an EKS cluster (paginated DescribeInstances, no per-instance call) and
// the pure comparison of those instances with the Nodes' providerIDs.
//
// It imports the EC2 part of the AWS SDK only, never internal/aws (whose CloudWatch Logs and EKS
// clients and instance-type table the controller's binary does not link); internal/aws's EC2API
// satisfies API.
package instances

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
)

// PermDescribeInstances is the IAM action of the one call this package makes (internal/aws and
// docs/aws.md name it too).
const PermDescribeInstances = "ec2:DescribeInstances"

// PageSize is the MaxResults of every DescribeInstances page, EC2's largest.
const PageSize = 1000

// The bounds of a listing: the SDK's paginator stops on an empty or repeated NextToken only, so
// an endpoint that answers every page with a fresh one would be followed for ever, and its
// instances kept. MaxPages bounds the pages of one tag filter's listing, MaxInstances the
// distinct instances kept (EKS's largest clusters run 100,000 nodes).
const (
	MaxPages     = 1000
	MaxInstances = 100_000
)

// ErrEndlessPages is the error of a listing that passed MaxPages or MaxInstances.
var ErrEndlessPages = errors.New("DescribeInstances: stopped after " + strconv.Itoa(MaxPages) + " pages or " + strconv.Itoa(MaxInstances) +
	" instances, the most one listing may take: the answers kept announcing another page")

// API is the EC2 call the listing makes. *ec2.Client and internal/aws's EC2API satisfy it.
type API interface {
	DescribeInstances(context.Context, *ec2.DescribeInstancesInput, ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error)
}

// DescribeInstancesFunc is an EC2 client's DescribeInstances method value as an API. Give it
// rather than the *ec2.Client: a client held in an interface value keeps every one of its
// methods in a binary that links a reflective method lookup (text/template).
type DescribeInstancesFunc func(context.Context, *ec2.DescribeInstancesInput, ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error)

// DescribeInstances calls f.
func (f DescribeInstancesFunc) DescribeInstances(ctx context.Context, in *ec2.DescribeInstancesInput, opts ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error) {
	return f(ctx, in, opts...)
}

// ClusterFilters are the three ways a cluster's instances are tagged: the cloud provider's
// kubernetes.io/cluster/NAME (managed node groups, Karpenter, self-managed), EKS's
// eks:cluster-name (managed node groups) and Karpenter's eks:eks-cluster-name beside
// karpenter.sh/nodepool. EC2 ANDs the filters of one call, so each is a call of its own.
func ClusterFilters(cluster string) [][]ec2types.Filter {
	return [][]ec2types.Filter{
		{{Name: strp("tag-key"), Values: []string{"kubernetes.io/cluster/" + cluster}}},
		{{Name: strp("tag:eks:cluster-name"), Values: []string{cluster}}},
		{{Name: strp("tag-key"), Values: []string{"karpenter.sh/nodepool"}}, {Name: strp("tag:eks:eks-cluster-name"), Values: []string{cluster}}},
	}
}

// Listing is the result of ListRunning.
type Listing struct {
	// Running are the cluster's running instances, each once.
	Running []ec2types.Instance
	// Calls is the number of DescribeInstances calls made (pages of every tag filter).
	Calls int
}

// ListRunning lists the running instances tagged for cluster (ClusterFilters), page by page.
// An error is the SDK's, unexplained (callers name PermDescribeInstances their own way);
// Classify tells denial and throttling apart.
func ListRunning(ctx context.Context, api API, cluster string) (Listing, error) {
	return listRunning(ctx, api, cluster, PageSize)
}

// listRunning is ListRunning with pages of pageSize instances (EC2 takes 5 to 1000): the
// tests page a handful of instances through moto with it.
func listRunning(ctx context.Context, api API, cluster string, pageSize int32) (Listing, error) {
	var l Listing
	seen := map[string]bool{}
	for _, filters := range ClusterFilters(cluster) {
		filters = append(filters, ec2types.Filter{Name: strp("instance-state-name"), Values: []string{"running"}})
		p := ec2.NewDescribeInstancesPaginator(api, &ec2.DescribeInstancesInput{Filters: filters, MaxResults: &pageSize})
		for pages := 0; p.HasMorePages(); pages++ {
			if pages == MaxPages || len(l.Running) > MaxInstances {
				return l, ErrEndlessPages
			}
			l.Calls++
			page, err := p.NextPage(ctx)
			if err != nil {
				return l, err
			}
			for _, r := range page.Reservations {
				for _, inst := range r.Instances {
					if id := deref(inst.InstanceId); !seen[id] {
						seen[id] = true
						l.Running = append(l.Running, inst)
					}
				}
			}
		}
	}
	if len(l.Running) > MaxInstances {
		return l, ErrEndlessPages
	}
	return l, nil
}

// Failure kinds of Classify: the values of the controller's scan result label.
const (
	FailureDenied    = "denied"
	FailureThrottled = "throttled"
	FailureOther     = "error"
)

// Classify says why a listing failed: IAM denied it (EC2 answers UnauthorizedOperation), AWS
// throttled it beyond the SDK's retries, or something else.
func Classify(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		if api.ErrorCode() == "UnauthorizedOperation" {
			return FailureDenied
		}
		if _, ok := retry.DefaultThrottleErrorCodes[api.ErrorCode()]; ok {
			return FailureThrottled
		}
	}
	return FailureOther
}

// InstanceIDFromProviderID returns the EC2 instance ID of an AWS providerID
// (aws:///us-east-1a/i-0abc...), or "".
func InstanceIDFromProviderID(pid string) string {
	if !strings.HasPrefix(pid, "aws://") {
		return ""
	}
	last := pid[strings.LastIndexByte(pid, '/')+1:]
	if strings.HasPrefix(last, "i-") {
		return last
	}
	return ""
}

// Node is what the comparison reads of a Node.
type Node struct {
	Name       string
	ProviderID string
}

// NodeSet indexes Nodes by the instance their providerID names and by name.
type NodeSet struct {
	byInstance map[string]bool
	byName     map[string]bool
}

// NewNodeSet returns an empty set sized for n Nodes.
func NewNodeSet(n int) *NodeSet {
	return &NodeSet{byInstance: make(map[string]bool, n), byName: make(map[string]bool, n)}
}

// Add records a Node.
func (s *NodeSet) Add(n Node) {
	s.byName[n.Name] = true
	if id := InstanceIDFromProviderID(n.ProviderID); id != "" {
		s.byInstance[id] = true
	}
}

// Len is the number of Nodes added.
func (s *NodeSet) Len() int { return len(s.byName) }

// Has reports whether a Node stands for inst: its providerID names the instance, or (a Node
// without a providerID yet) it is named after the instance's private DNS name, as EKS names
// Nodes.
func (s *NodeSet) Has(inst ec2types.Instance) bool {
	return s.byInstance[deref(inst.InstanceId)] || (inst.PrivateDnsName != nil && s.byName[*inst.PrivateDnsName])
}

// Orphan is a running instance without a Node.
type Orphan struct {
	Instance ec2types.Instance
	// Age is how long it has been running (0 when EC2 gave no launch time).
	Age time.Duration
}

// ID is the instance ID.
func (o Orphan) ID() string { return deref(o.Instance.InstanceId) }

// WithoutNode returns the running instances no Node stands for (NodeSet.Has), oldest first;
// an instance launched less than grace before now may still be registering and is left out.
func WithoutNode(running []ec2types.Instance, nodes *NodeSet, now time.Time, grace time.Duration) []Orphan {
	var out []Orphan
	for _, inst := range running {
		if nodes.Has(inst) {
			continue
		}
		var age time.Duration
		if inst.LaunchTime != nil {
			age = now.Sub(*inst.LaunchTime)
			if age < grace {
				continue
			}
		}
		out = append(out, Orphan{Instance: inst, Age: age})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Age != out[j].Age {
			return out[i].Age > out[j].Age
		}
		return out[i].ID() < out[j].ID()
	})
	return out
}

// TagValue is the value of the tag key on an instance, or "".
func TagValue(tags []ec2types.Tag, key string) string {
	for _, t := range tags {
		if t.Key != nil && *t.Key == key && t.Value != nil {
			return *t.Value
		}
	}
	return ""
}

func strp(s string) *string { return &s }

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
