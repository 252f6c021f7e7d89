package aws

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// The helpers below walk every page with the SDK's paginators and explain errors (see Explain).

// ec2Pager is what the SDK's EC2 paginators have in common.
type ec2Pager[Page any] interface {
	HasMorePages() bool
	NextPage(context.Context, ...func(*ec2.Options)) (Page, error)
}

// allEC2Pages collects the items of every page of p; an error is explained with permission.
func allEC2Pages[Page, Item any](ctx context.Context, permission string, p ec2Pager[Page], items func(Page) []Item) ([]Item, error) {
	return AllPages(ctx, permission, p.HasMorePages, p.NextPage, items)
}

// The bounds of one paginated listing. The SDK's paginators stop on an empty or repeated
// NextToken only: an endpoint (a proxy, a broken or hostile AWS-compatible service) that answers
// every page with a fresh token would be followed for ever, and its items kept. No listing
// nodekeeper makes comes near these: EC2 pages hold up to 1,000 items and a cluster's instances,
// subnets or launch template versions are thousands at most.
const (
	// MaxPages bounds the pages of one listing.
	MaxPages = 1000
	// MaxItems bounds the items of one listing.
	MaxItems = 200_000
)

// PagesError is the error of a listing that passed MaxPages or MaxItems.
type PagesError struct {
	Permission   string
	Pages, Items int
}

func (e *PagesError) Error() string {
	return fmt.Sprintf("%s: stopped after %d pages and %d items (the most one listing may take: %d pages, %d items): the answers kept announcing another page",
		e.Permission, e.Pages, e.Items, MaxPages, MaxItems)
}

// AllPages collects the items of every page of an SDK paginator of any service (more and next
// are its HasMorePages and NextPage), at most MaxPages pages and MaxItems items; an error is
// explained with permission.
func AllPages[Page, Item, Opt any](ctx context.Context, permission string, more func() bool, next func(context.Context, ...func(*Opt)) (Page, error), items func(Page) []Item) ([]Item, error) {
	var out []Item
	pages := 0
	for more() {
		if pages == MaxPages || len(out) > MaxItems {
			return out, &PagesError{Permission: permission, Pages: pages, Items: len(out)}
		}
		page, err := next(ctx)
		if err != nil {
			return out, Explain(permission, err)
		}
		pages++
		out = append(out, items(page)...)
	}
	if len(out) > MaxItems {
		return out, &PagesError{Permission: permission, Pages: pages, Items: len(out)}
	}
	return out, nil
}

// DescribeInstances returns the instances matching in, from every page.
func DescribeInstances(ctx context.Context, api EC2API, in *ec2.DescribeInstancesInput) ([]ec2types.Instance, error) {
	return allEC2Pages(ctx, PermDescribeInstances, ec2.NewDescribeInstancesPaginator(api, in), func(page *ec2.DescribeInstancesOutput) []ec2types.Instance {
		var out []ec2types.Instance
		for _, r := range page.Reservations {
			out = append(out, r.Instances...)
		}
		return out
	})
}

// DescribeSubnets returns the subnets matching in, from every page.
func DescribeSubnets(ctx context.Context, api EC2API, in *ec2.DescribeSubnetsInput) ([]ec2types.Subnet, error) {
	return allEC2Pages(ctx, PermDescribeSubnets, ec2.NewDescribeSubnetsPaginator(api, in), func(page *ec2.DescribeSubnetsOutput) []ec2types.Subnet {
		return page.Subnets
	})
}

// DescribeInstanceTypes returns the instance types matching in, from every page.
func DescribeInstanceTypes(ctx context.Context, api EC2API, in *ec2.DescribeInstanceTypesInput) ([]ec2types.InstanceTypeInfo, error) {
	return allEC2Pages(ctx, PermDescribeInstanceTypes, ec2.NewDescribeInstanceTypesPaginator(api, in), func(page *ec2.DescribeInstanceTypesOutput) []ec2types.InstanceTypeInfo {
		return page.InstanceTypes
	})
}
