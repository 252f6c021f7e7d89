package awsserver

import (
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// EBS in EC2's Query protocol: an instance's root device and block device mapping
// (DescribeInstances' blockDeviceMapping items) and DescribeVolumes' volumeSet, as the EC2 API
// reference's "InstanceBlockDeviceMapping", "EbsInstanceBlockDevice", "Volume" and
// "VolumeAttachment" response elements name them.

type xmlBlockDevice struct {
	DeviceName *string      `xml:"deviceName"`
	EBS        *xmlEBSBlock `xml:"ebs"`
}

type xmlEBSBlock struct {
	VolumeID            *string `xml:"volumeId"`
	Status              string  `xml:"status,omitempty"`
	AttachTime          *string `xml:"attachTime"`
	DeleteOnTermination *bool   `xml:"deleteOnTermination"`
}

func toXMLBlockDevice(m ec2types.InstanceBlockDeviceMapping) xmlBlockDevice {
	x := xmlBlockDevice{DeviceName: m.DeviceName}
	if e := m.Ebs; e != nil {
		x.EBS = &xmlEBSBlock{VolumeID: e.VolumeId, Status: string(e.Status), AttachTime: ec2Time(e.AttachTime), DeleteOnTermination: e.DeleteOnTermination}
	}
	return x
}

// xmlVolume carries what nodekeeper reads of a volume (ID, type, size, IOPS, throughput,
// attachments) and their neighbours.
type xmlVolume struct {
	VolumeID           *string                    `xml:"volumeId"`
	Size               *int32                     `xml:"size"`
	SnapshotID         *string                    `xml:"snapshotId"`
	AvailabilityZone   *string                    `xml:"availabilityZone"`
	Status             string                     `xml:"status,omitempty"`
	CreateTime         *string                    `xml:"createTime"`
	Attachments        *xmlSet[xmlVolumeAttached] `xml:"attachmentSet"`
	VolumeType         string                     `xml:"volumeType,omitempty"`
	Iops               *int32                     `xml:"iops"`
	Throughput         *int32                     `xml:"throughput"`
	Encrypted          *bool                      `xml:"encrypted"`
	MultiAttachEnabled *bool                      `xml:"multiAttachEnabled"`
	Tags               *xmlSet[xmlTag]            `xml:"tagSet"`
}

type xmlVolumeAttached struct {
	VolumeID            *string `xml:"volumeId"`
	InstanceID          *string `xml:"instanceId"`
	Device              *string `xml:"device"`
	Status              string  `xml:"status,omitempty"`
	AttachTime          *string `xml:"attachTime"`
	DeleteOnTermination *bool   `xml:"deleteOnTermination"`
}

func toXMLVolume(v ec2types.Volume) xmlVolume {
	return xmlVolume{VolumeID: v.VolumeId, Size: v.Size, SnapshotID: v.SnapshotId, AvailabilityZone: v.AvailabilityZone,
		Status: string(v.State), CreateTime: ec2Time(v.CreateTime), VolumeType: string(v.VolumeType), Iops: v.Iops,
		Throughput: v.Throughput, Encrypted: v.Encrypted, MultiAttachEnabled: v.MultiAttachEnabled, Tags: mapSet(v.Tags, toXMLTag),
		Attachments: mapSet(v.Attachments, func(a ec2types.VolumeAttachment) xmlVolumeAttached {
			return xmlVolumeAttached{VolumeID: a.VolumeId, InstanceID: a.InstanceId, Device: a.Device, Status: string(a.State),
				AttachTime: ec2Time(a.AttachTime), DeleteOnTermination: a.DeleteOnTermination}
		})}
}
