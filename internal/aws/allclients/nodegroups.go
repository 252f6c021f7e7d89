package allclients

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"

	nkaws "github.com/nodekeeper/nodekeeper/internal/aws"
)

// NodegroupsAPI is the part of EKS that reads a cluster's managed node groups. *eks.Client
// satisfies it.
type NodegroupsAPI interface {
	ListNodegroups(context.Context, *eks.ListNodegroupsInput, ...func(*eks.Options)) (*eks.ListNodegroupsOutput, error)
	DescribeNodegroup(context.Context, *eks.DescribeNodegroupInput, ...func(*eks.Options)) (*eks.DescribeNodegroupOutput, error)
}

// ListNodegroups returns the names of a cluster's managed node groups, from every page.
func ListNodegroups(ctx context.Context, api NodegroupsAPI, cluster string) ([]string, error) {
	p := eks.NewListNodegroupsPaginator(api, &eks.ListNodegroupsInput{ClusterName: &cluster})
	return nkaws.AllPages(ctx, nkaws.PermListNodegroups, p.HasMorePages, p.NextPage, func(page *eks.ListNodegroupsOutput) []string {
		return page.Nodegroups
	})
}

// DescribeNodegroup returns one managed node group, with the launch template it uses when it
// was created with one.
func DescribeNodegroup(ctx context.Context, api NodegroupsAPI, cluster, name string) (*ekstypes.Nodegroup, error) {
	out, err := api.DescribeNodegroup(ctx, &eks.DescribeNodegroupInput{ClusterName: &cluster, NodegroupName: &name})
	if err != nil {
		return nil, nkaws.Explain(nkaws.PermDescribeNodegroup, err)
	}
	return out.Nodegroup, nil
}

// Nodegroups is api as doctor reads it (nkaws.NodegroupTemplatesAPI); nil for a nil api.
func Nodegroups(api NodegroupsAPI) nkaws.NodegroupTemplatesAPI {
	if api == nil {
		return nil
	}
	return nodegroupTemplates{api}
}

// nodegroupTemplates is NodegroupsAPI through nkaws.NodegroupTemplatesAPI.
type nodegroupTemplates struct{ api NodegroupsAPI }

func (n nodegroupTemplates) NodegroupNames(ctx context.Context, cluster string) ([]string, error) {
	return ListNodegroups(ctx, n.api, cluster)
}

func (n nodegroupTemplates) NodegroupLaunchTemplate(ctx context.Context, cluster, name string) (id, version string, ok bool, err error) {
	ng, err := DescribeNodegroup(ctx, n.api, cluster, name)
	if err != nil || ng == nil || ng.LaunchTemplate == nil {
		return "", "", false, err
	}
	return deref(ng.LaunchTemplate.Id), deref(ng.LaunchTemplate.Version), true, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
