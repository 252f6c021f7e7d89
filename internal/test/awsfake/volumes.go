package awsfake

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	nkaws "github.com/nodekeeper/nodekeeper/internal/aws"
)

var volumeKind = resourceKind[ec2types.Volume]{values: volumeValues, idFilter: "volume-id", unknownID: unknownVolume}

// unknownVolume is EC2's answer to a VolumeIds entry no volume has (DescribeVolumes, "Errors":
// InvalidVolume.NotFound fails the whole call).
func unknownVolume(id string) error {
	return apiError("InvalidVolume.NotFound", "The volume '%s' does not exist.", id)
}

// volumeValues is what DescribeVolumes filters see on a volume.
func volumeValues(v ec2types.Volume) ([]ec2types.Tag, map[string][]string) {
	var attached []string
	for _, a := range v.Attachments {
		attached = append(attached, str(a.InstanceId))
	}
	return v.Tags, map[string][]string{
		"volume-id":              {str(v.VolumeId)},
		"volume-type":            {string(v.VolumeType)},
		"status":                 {string(v.State)},
		"attachment.instance-id": attached,
		"availability-zone":      {str(v.AvailabilityZone)},
	}
}

// DescribeVolumes implements EC2API: VolumeIds, and the filters volume-id, volume-type, status,
// attachment.instance-id, availability-zone, tag:KEY and tag-key.
func (c *Cloud) DescribeVolumes(_ context.Context, in *ec2.DescribeVolumesInput, _ ...func(*ec2.Options)) (*ec2.DescribeVolumesOutput, error) {
	p, err := volumeKind.describe(c, nkaws.PermDescribeVolumes, &c.Volumes, describeQuery{in.VolumeIds, in.Filters, in.NextToken, in.MaxResults})
	if err != nil {
		return nil, err
	}
	return &ec2.DescribeVolumesOutput{Volumes: p.items, NextToken: p.next}, nil
}
