package awsfake

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	nkaws "github.com/nodekeeper/nodekeeper/internal/aws"
)

var _ nkaws.EC2API = (*Cloud)(nil)

// matchFilters applies EC2 filters the way EC2 does: filters are ANDed, the values of one
// filter ORed, and * and ? are wildcards. get returns the attribute values a filter name sees
// and whether the name is supported.
func matchFilters(filters []ec2types.Filter, get func(name string) ([]string, bool)) (bool, error) {
	for _, f := range filters {
		if f.Name == nil {
			return false, apiError("InvalidParameterValue", "filter without a name")
		}
		have, ok := get(*f.Name)
		if !ok {
			return false, apiError("InvalidParameterValue", "The filter '%s' is invalid", *f.Name)
		}
		hit := false
		for _, want := range f.Values {
			for _, h := range have {
				if m, _ := path.Match(want, h); m {
					hit = true
				}
			}
		}
		if !hit {
			return false, nil
		}
	}
	return true, nil
}

func tagValues(tags []ec2types.Tag, name string) ([]string, bool) {
	if key, ok := strings.CutPrefix(name, "tag:"); ok {
		var out []string
		for _, t := range tags {
			if t.Key != nil && *t.Key == key && t.Value != nil {
				out = append(out, *t.Value)
			}
		}
		return out, true
	}
	if name == "tag-key" {
		var out []string
		for _, t := range tags {
			if t.Key != nil {
				out = append(out, *t.Key)
			}
		}
		return out, true
	}
	return nil, false
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// resourceKind is what the fake's Describe calls know of one kind of EC2 resource.
type resourceKind[T any] struct {
	// values gives a resource's tags (the filters tag:KEY and tag-key) and the values the other
	// filters it supports see, by filter name.
	values func(T) ([]ec2types.Tag, map[string][]string)
	// idFilter is the filter that holds a resource's ID.
	idFilter string
	// unknownID, when set, is the error for an asked-for ID that no resource has (EC2 then fails
	// the whole call).
	unknownID func(id string) error
}

var (
	instanceKind = resourceKind[ec2types.Instance]{values: instanceValues, idFilter: "instance-id"}
	subnetKind   = resourceKind[ec2types.Subnet]{values: subnetValues, idFilter: "subnet-id", unknownID: unknownSubnet}
)

func unknownSubnet(id string) error {
	return apiError("InvalidSubnetID.NotFound", "The subnet ID '%s' does not exist", id)
}

// describeQuery is what a Describe call asks for: the IDs (none: every resource), the filters,
// and the page (NextToken, MaxResults).
type describeQuery struct {
	ids     []string
	filters []ec2types.Filter
	token   *string
	max     *int32
}

// describe answers a Describe call as the IAM action permission: it keeps the resources of *all
// whose ID is in q's IDs and that match its filters, and returns the page q asks for.
func (k resourceKind[T]) describe(c *Cloud, permission string, all *[]T, q describeQuery) (paged[T], error) {
	return answer(c, permission, q, func(q describeQuery) (paged[T], error) {
		var match []T
		known := map[string]bool{}
		for _, r := range *all {
			tags, attrs := k.values(r)
			id := attrs[k.idFilter][0]
			known[id] = true
			if len(q.ids) > 0 && !slices.Contains(q.ids, id) {
				continue
			}
			ok, err := matchFilters(q.filters, func(name string) ([]string, bool) {
				if v, ok := attrs[name]; ok {
					return v, true
				}
				return tagValues(tags, name)
			})
			if err != nil {
				return paged[T]{}, err
			}
			if ok {
				match = append(match, r)
			}
		}
		for _, id := range q.ids {
			if !known[id] && k.unknownID != nil {
				return paged[T]{}, k.unknownID(id)
			}
		}
		return pageOf(match, q.token, c.pageSize(defaultPageSize, q.max))
	})
}

// instanceValues is what DescribeInstances filters see on an instance.
func instanceValues(inst ec2types.Instance) ([]ec2types.Tag, map[string][]string) {
	var state []string
	if inst.State != nil {
		state = []string{string(inst.State.Name)}
	}
	return inst.Tags, map[string][]string{
		"instance-id":         {str(inst.InstanceId)},
		"instance-type":       {string(inst.InstanceType)},
		"private-dns-name":    {str(inst.PrivateDnsName)},
		"private-ip-address":  {str(inst.PrivateIpAddress)},
		"instance-state-name": state,
	}
}

// subnetValues is what DescribeSubnets filters see on a subnet.
func subnetValues(s ec2types.Subnet) ([]ec2types.Tag, map[string][]string) {
	return s.Tags, map[string][]string{"subnet-id": {str(s.SubnetId)}, "vpc-id": {str(s.VpcId)}}
}

// DescribeInstances implements EC2API: InstanceIds, and the filters instance-id,
// instance-state-name, instance-type, private-dns-name, private-ip-address, tag:KEY and tag-key.
// MaxResults with InstanceIds is refused (InvalidParameterCombination), as EC2 does.
func (c *Cloud) DescribeInstances(ctx context.Context, in *ec2.DescribeInstancesInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error) {
	if err := c.before(ctx, nkaws.PermDescribeInstances); err != nil {
		return nil, err
	}
	// "You cannot specify this parameter [MaxResults] and the instance IDs parameter in the
	// same request" (EC2 API Reference, DescribeInstances); moto refuses it the same way.
	if len(in.InstanceIds) > 0 && in.MaxResults != nil {
		return nil, apiError("InvalidParameterCombination", "The parameter instancesSet cannot be used with the parameter maxResults")
	}
	if n, token, ok := c.endless(); ok {
		id := fmt.Sprintf("i-endless%012d", n)
		return &ec2.DescribeInstancesOutput{NextToken: token, Reservations: []ec2types.Reservation{{Instances: []ec2types.Instance{{InstanceId: &id,
			State: &ec2types.InstanceState{Name: ec2types.InstanceStateNameRunning}}}}}}, nil
	}
	p, err := instanceKind.describe(c, nkaws.PermDescribeInstances, &c.Instances, describeQuery{in.InstanceIds, in.Filters, in.NextToken, in.MaxResults})
	if err != nil {
		return nil, err
	}
	out := &ec2.DescribeInstancesOutput{NextToken: p.next}
	for _, inst := range p.items {
		out.Reservations = append(out.Reservations, ec2types.Reservation{Instances: []ec2types.Instance{inst}})
	}
	return out, nil
}

// DescribeSubnets implements EC2API: SubnetIds, and the filters subnet-id, vpc-id, tag:KEY.
func (c *Cloud) DescribeSubnets(_ context.Context, in *ec2.DescribeSubnetsInput, _ ...func(*ec2.Options)) (*ec2.DescribeSubnetsOutput, error) {
	if n, token, ok := c.endless(); ok {
		id := fmt.Sprintf("subnet-endless%08d", n)
		return &ec2.DescribeSubnetsOutput{NextToken: token, Subnets: []ec2types.Subnet{{SubnetId: &id}}}, nil
	}
	p, err := subnetKind.describe(c, nkaws.PermDescribeSubnets, &c.Subnets, describeQuery{in.SubnetIds, in.Filters, in.NextToken, in.MaxResults})
	if err != nil {
		return nil, err
	}
	return &ec2.DescribeSubnetsOutput{Subnets: p.items, NextToken: p.next}, nil
}

// DescribeInstanceTypes implements EC2API: InstanceTypes, at most 100 of them as in EC2, where
// unknown names fail the whole request with InvalidInstanceType listing them.
func (c *Cloud) DescribeInstanceTypes(_ context.Context, in *ec2.DescribeInstanceTypesInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error) {
	return answer(c, nkaws.PermDescribeInstanceTypes, in, c.describeInstanceTypes)
}

func (c *Cloud) describeInstanceTypes(in *ec2.DescribeInstanceTypesInput) (*ec2.DescribeInstanceTypesOutput, error) {
	if len(in.InstanceTypes) > 100 {
		return nil, apiError("InvalidParameterValue", "The maximum number of instance types is 100, got %d", len(in.InstanceTypes))
	}
	if in.NextToken == nil { // the later pages repeat the request
		c.typesAsked = append(c.typesAsked, in.InstanceTypes...)
	}
	var match []ec2types.InstanceTypeInfo
	var unknown []string
	for _, want := range in.InstanceTypes {
		i := slices.IndexFunc(c.InstanceTypes, func(t ec2types.InstanceTypeInfo) bool { return t.InstanceType == want })
		if i < 0 {
			unknown = append(unknown, string(want))
			continue
		}
		match = append(match, c.InstanceTypes[i])
	}
	if len(unknown) > 0 {
		return nil, apiError("InvalidInstanceType", "The following supplied instance types do not exist: [%s]", strings.Join(unknown, ", "))
	}
	if len(in.InstanceTypes) == 0 {
		match = c.InstanceTypes
	}
	p, err := pageOf(match, in.NextToken, c.pageSize(defaultPageSize, in.MaxResults))
	if err != nil {
		return nil, err
	}
	return &ec2.DescribeInstanceTypesOutput{InstanceTypes: p.items, NextToken: p.next}, nil
}

// InstanceTypesAsked lists the names DescribeInstanceTypes requests asked about, in order (a
// name asked twice is listed twice; the later pages of a request do not count).
func (c *Cloud) InstanceTypesAsked() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, len(c.typesAsked))
	for i, t := range c.typesAsked {
		out[i] = string(t)
	}
	return out
}
