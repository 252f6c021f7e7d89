package awsfake

import (
	"context"
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

// resourceKind is what the fake's Describe calls know of one kind of EC2 resource: its ID, its
// tags (the filters tag:KEY and tag-key) and the other filters it supports, by name.
type resourceKind[T any] struct {
	id      func(T) string
	tags    func(T) []ec2types.Tag
	filters map[string]func(T) []string
}

// selectFrom keeps the resources whose ID is in ids (every one when ids is empty) and that
// match filters.
func (k resourceKind[T]) selectFrom(all []T, ids []string, filters []ec2types.Filter) ([]T, error) {
	var match []T
	for _, r := range all {
		if len(ids) > 0 && !slices.Contains(ids, k.id(r)) {
			continue
		}
		ok, err := matchFilters(filters, func(name string) ([]string, bool) {
			if get, ok := k.filters[name]; ok {
				return get(r), true
			}
			return tagValues(k.tags(r), name)
		})
		if err != nil {
			return nil, err
		}
		if ok {
			match = append(match, r)
		}
	}
	return match, nil
}

func instanceID(i ec2types.Instance) string { return str(i.InstanceId) }

// instances are what DescribeInstances filters.
var instances = resourceKind[ec2types.Instance]{
	id:   instanceID,
	tags: func(i ec2types.Instance) []ec2types.Tag { return i.Tags },
	filters: map[string]func(ec2types.Instance) []string{
		"instance-id":      func(i ec2types.Instance) []string { return []string{instanceID(i)} },
		"instance-type":    func(i ec2types.Instance) []string { return []string{string(i.InstanceType)} },
		"private-dns-name": func(i ec2types.Instance) []string { return []string{str(i.PrivateDnsName)} },
		"instance-state-name": func(i ec2types.Instance) []string {
			if i.State == nil {
				return nil
			}
			return []string{string(i.State.Name)}
		},
	},
}

func subnetID(s ec2types.Subnet) string { return str(s.SubnetId) }

// subnets are what DescribeSubnets filters.
var subnets = resourceKind[ec2types.Subnet]{
	id:   subnetID,
	tags: func(s ec2types.Subnet) []ec2types.Tag { return s.Tags },
	filters: map[string]func(ec2types.Subnet) []string{
		"subnet-id": func(s ec2types.Subnet) []string { return []string{subnetID(s)} },
		"vpc-id":    func(s ec2types.Subnet) []string { return []string{str(s.VpcId)} },
	},
}

// DescribeInstances implements EC2API: InstanceIds, and the filters instance-id,
// instance-state-name, instance-type, private-dns-name, tag:KEY and tag-key.
func (c *Cloud) DescribeInstances(_ context.Context, in *ec2.DescribeInstancesInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.call(nkaws.PermDescribeInstances); err != nil {
		return nil, err
	}
	match, err := instances.selectFrom(c.Instances, in.InstanceIds, in.Filters)
	if err != nil {
		return nil, err
	}
	from, to, next, err := page(in.NextToken, len(match), c.pageSize(in.MaxResults))
	if err != nil {
		return nil, err
	}
	out := &ec2.DescribeInstancesOutput{NextToken: next}
	for _, inst := range match[from:to] {
		out.Reservations = append(out.Reservations, ec2types.Reservation{Instances: []ec2types.Instance{inst}})
	}
	return out, nil
}

// DescribeSubnets implements EC2API: SubnetIds, and the filters subnet-id, vpc-id, tag:KEY.
func (c *Cloud) DescribeSubnets(_ context.Context, in *ec2.DescribeSubnetsInput, _ ...func(*ec2.Options)) (*ec2.DescribeSubnetsOutput, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.call(nkaws.PermDescribeSubnets); err != nil {
		return nil, err
	}
	match, err := subnets.selectFrom(c.Subnets, in.SubnetIds, in.Filters)
	if err != nil {
		return nil, err
	}
	for _, id := range in.SubnetIds {
		if !slices.ContainsFunc(c.Subnets, func(s ec2types.Subnet) bool { return subnetID(s) == id }) {
			return nil, apiError("InvalidSubnetID.NotFound", "The subnet ID '%s' does not exist", id)
		}
	}
	from, to, next, err := page(in.NextToken, len(match), c.pageSize(in.MaxResults))
	if err != nil {
		return nil, err
	}
	return &ec2.DescribeSubnetsOutput{Subnets: match[from:to], NextToken: next}, nil
}

// DescribeInstanceTypes implements EC2API: InstanceTypes, at most 100 of them as in EC2, where
// unknown names fail the whole request with InvalidInstanceType listing them.
func (c *Cloud) DescribeInstanceTypes(_ context.Context, in *ec2.DescribeInstanceTypesInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.call(nkaws.PermDescribeInstanceTypes); err != nil {
		return nil, err
	}
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
	from, to, next, err := page(in.NextToken, len(match), c.pageSize(in.MaxResults))
	if err != nil {
		return nil, err
	}
	return &ec2.DescribeInstanceTypesOutput{InstanceTypes: match[from:to], NextToken: next}, nil
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
