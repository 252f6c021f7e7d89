package awsfake

import (
	"context"
	"fmt"
	"github.com/nodekeeper/nodekeeper/internal/aws/allclients"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"

	nkaws "github.com/nodekeeper/nodekeeper/internal/aws"
)

var _ allclients.NodegroupsAPI = (*Cloud)(nil)

// ListNodegroups implements NodegroupsAPI: the names of the cluster's node groups, paged by
// MaxResults (at most 100, as EKS) and NextToken. An unknown cluster is ResourceNotFoundException.
func (c *Cloud) ListNodegroups(_ context.Context, in *eks.ListNodegroupsInput, _ ...func(*eks.Options)) (*eks.ListNodegroupsOutput, error) {
	return answer(c, nkaws.PermListNodegroups, in, c.listNodegroups)
}

func (c *Cloud) listNodegroups(in *eks.ListNodegroupsInput) (*eks.ListNodegroupsOutput, error) {
	cluster := str(in.ClusterName)
	if _, ok := c.Clusters[cluster]; !ok {
		return nil, apiError("ResourceNotFoundException", "No cluster found for name: %s.", cluster)
	}
	if err := checkPageSize(in.MaxResults, 100, "InvalidParameterException", "maxResults"); err != nil {
		return nil, err
	}
	var names []string
	for _, ng := range c.Nodegroups {
		if str(ng.ClusterName) == cluster {
			names = append(names, str(ng.NodegroupName))
		}
	}
	p, err := pageOf(names, in.NextToken, c.pageSize(defaultPageSize, in.MaxResults))
	if err != nil {
		return nil, err
	}
	return &eks.ListNodegroupsOutput{Nodegroups: p.items, NextToken: p.next}, nil
}

// DescribeNodegroup implements NodegroupsAPI.
func (c *Cloud) DescribeNodegroup(_ context.Context, in *eks.DescribeNodegroupInput, _ ...func(*eks.Options)) (*eks.DescribeNodegroupOutput, error) {
	return answer(c, nkaws.PermDescribeNodegroup, in, c.describeNodegroup)
}

func (c *Cloud) describeNodegroup(in *eks.DescribeNodegroupInput) (*eks.DescribeNodegroupOutput, error) {
	for _, ng := range c.Nodegroups {
		if str(ng.ClusterName) == str(in.ClusterName) && str(ng.NodegroupName) == str(in.NodegroupName) {
			return &eks.DescribeNodegroupOutput{Nodegroup: &ng}, nil
		}
	}
	return nil, apiError("ResourceNotFoundException", "No node group found for name: %s.", str(in.NodegroupName))
}

// AddManagedNodegroup adds a managed node group to cluster that launches from version of the
// user's launch template userTemplate, as EKS does it: "The Amazon EKS API creates this launch
// template either by copying one you provide or by creating one automatically with default values
// in your account" (Amazon EKS User Guide, "Customize managed nodes with launch templates",
// https://docs.aws.amazon.com/eks/latest/userguide/launch-templates.html). The copy is a template
// of its own, copyID, named "eks-" and the group's name, holding the user's version's data as its
// version 1; DescribeNodegroup names the user's template and version, while the instances the
// group launches are tagged aws:ec2launchtemplate:id/version with the copy's. It returns those
// two tags for the test's instances. The user's version must be in LaunchTemplateVersions.
func (c *Cloud) AddManagedNodegroup(cluster, name, userTemplate string, version int64, copyID string) map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var data *ec2types.ResponseLaunchTemplateData
	for _, v := range c.LaunchTemplateVersions {
		if str(v.LaunchTemplateId) == userTemplate && num(v.VersionNumber) == version {
			data = v.LaunchTemplateData
		}
	}
	if data == nil {
		panic(fmt.Sprintf("awsfake: AddManagedNodegroup: no launch template %s version %d", userTemplate, version))
	}
	one := int64(1)
	c.LaunchTemplateVersions = append(c.LaunchTemplateVersions, ec2types.LaunchTemplateVersion{
		LaunchTemplateId: aws.String(copyID), LaunchTemplateName: aws.String("eks-" + name), VersionNumber: &one,
		DefaultVersion: aws.Bool(true), LaunchTemplateData: data})
	c.Nodegroups = append(c.Nodegroups, ekstypes.Nodegroup{ClusterName: aws.String(cluster), NodegroupName: aws.String(name),
		LaunchTemplate: &ekstypes.LaunchTemplateSpecification{Id: aws.String(userTemplate), Version: aws.String(strconv.FormatInt(version, 10))}})
	return map[string]string{"aws:ec2launchtemplate:id": copyID, "aws:ec2launchtemplate:version": "1"}
}
