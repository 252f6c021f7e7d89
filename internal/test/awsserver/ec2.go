package awsserver

import (
	"encoding/xml"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/nodekeeper/nodekeeper/internal/test/awsfake"
)

// EC2's Query protocol (query.go): the request is a form (Action, Version, then the parameters
// with lists flattened as Name.1, Name.2, structures as Name.1.Member), the answer XML
// (ec2Response). API reference: "Query requests for Amazon EC2" and each action's "Response
// elements".

type ec2Service struct{}

func (ec2Service) name() string { return EC2 }

// ec2Request is an EC2 form with what every Describe action reads of it: filters and the page.
type ec2Request struct {
	form       url.Values
	filters    []ec2types.Filter
	maxResults *int32
	token      *string
}

// describeParams are the parameters of a Describe action: the page and the filters, and the list
// of IDs (or names) named ids.
func describeParams(ids string) queryParams {
	return queryParams{plain: []string{"MaxResults", "NextToken"}, lists: []string{"Filter", ids}}
}

// ec2Ops are the actions served, with the parameters each understands besides Action, Version
// and DryRun.
var ec2Ops = map[string]queryOperation[ec2Request]{
	"DescribeInstances": {describeParams("InstanceId"), op(func(r ec2Request) (*ec2.DescribeInstancesInput, error) {
		return &ec2.DescribeInstancesInput{InstanceIds: formList(r.form, "InstanceId"), Filters: r.filters, MaxResults: r.maxResults, NextToken: r.token}, nil
	}, (*awsfake.Cloud).DescribeInstances, func(reqID string, out *ec2.DescribeInstancesOutput) any {
		return ec2Page(reqID, "DescribeInstances", "reservationSet", mapSet(out.Reservations, toXMLReservation), out.NextToken)
	})},
	"DescribeSubnets": {describeParams("SubnetId"), op(func(r ec2Request) (*ec2.DescribeSubnetsInput, error) {
		return &ec2.DescribeSubnetsInput{SubnetIds: formList(r.form, "SubnetId"), Filters: r.filters, MaxResults: r.maxResults, NextToken: r.token}, nil
	}, (*awsfake.Cloud).DescribeSubnets, func(reqID string, out *ec2.DescribeSubnetsOutput) any {
		return ec2Page(reqID, "DescribeSubnets", "subnetSet", mapSet(out.Subnets, toXMLSubnet), out.NextToken)
	})},
	"DescribeInstanceTypes": {describeParams("InstanceType"), op(func(r ec2Request) (*ec2.DescribeInstanceTypesInput, error) {
		var types []ec2types.InstanceType
		for _, t := range formList(r.form, "InstanceType") {
			types = append(types, ec2types.InstanceType(t))
		}
		return &ec2.DescribeInstanceTypesInput{InstanceTypes: types, Filters: r.filters, MaxResults: r.maxResults, NextToken: r.token}, nil
	}, (*awsfake.Cloud).DescribeInstanceTypes, func(reqID string, out *ec2.DescribeInstanceTypesOutput) any {
		return ec2Page(reqID, "DescribeInstanceTypes", "instanceTypeSet", mapSet(out.InstanceTypes, toXMLInstanceType), out.NextToken)
	})},
	"DescribeVolumes": {describeParams("VolumeId"), op(func(r ec2Request) (*ec2.DescribeVolumesInput, error) {
		return &ec2.DescribeVolumesInput{VolumeIds: formList(r.form, "VolumeId"), Filters: r.filters, MaxResults: r.maxResults, NextToken: r.token}, nil
	}, (*awsfake.Cloud).DescribeVolumes, func(reqID string, out *ec2.DescribeVolumesOutput) any {
		return ec2Page(reqID, "DescribeVolumes", "volumeSet", mapSet(out.Volumes, toXMLVolume), out.NextToken)
	})},
	"DescribeLaunchTemplateVersions": {queryParams{plain: []string{"MaxResults", "NextToken", "LaunchTemplateId", "LaunchTemplateName", "MinVersion", "MaxVersion", "ResolveAlias"},
		lists: []string{"Filter", "LaunchTemplateVersion"}}, op(decodeLaunchTemplateVersions, (*awsfake.Cloud).DescribeLaunchTemplateVersions,
		func(reqID string, out *ec2.DescribeLaunchTemplateVersionsOutput) any {
			return ec2Page(reqID, "DescribeLaunchTemplateVersions", "launchTemplateVersionSet", mapSet(out.LaunchTemplateVersions, toXMLLaunchTemplateVersion), out.NextToken)
		})},
}

func decodeLaunchTemplateVersions(r ec2Request) (*ec2.DescribeLaunchTemplateVersionsInput, error) {
	if len(r.filters) > 0 || r.form.Has("MinVersion") || r.form.Has("MaxVersion") {
		return nil, apiError("InvalidParameterValue", "awsserver: DescribeLaunchTemplateVersions takes a template and versions only")
	}
	return &ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateId: formString(r.form, "LaunchTemplateId"), LaunchTemplateName: formString(r.form, "LaunchTemplateName"),
		Versions: formList(r.form, "LaunchTemplateVersion"), MaxResults: r.maxResults, NextToken: r.token}, nil
}

func (ec2Service) decode(r *http.Request) (decoded, error) {
	op, o, form, err := decodeQueryForm(r, "2016-11-15", ec2Ops)
	if err != nil {
		return decoded{op: op}, err
	}
	if form.Get("DryRun") == "true" {
		return decoded{op: op}, apiError("DryRunOperation", "Request would have succeeded, but DryRun flag is set.")
	}
	maxResults, err := formInt32(form, "MaxResults")
	if err != nil {
		return decoded{op: op}, err
	}
	return o.read(op, ec2Request{form, formFilters(form), maxResults, formString(form, "NextToken")})
}

// formFilters reads Filter.N.Name and Filter.N.Value.M.
func formFilters(form url.Values) []ec2types.Filter {
	var out []ec2types.Filter
	for i := 1; ; i++ {
		p := "Filter." + strconv.Itoa(i)
		name := formString(form, p+".Name")
		values := formList(form, p+".Value")
		if name == nil && values == nil {
			return out
		}
		out = append(out, ec2types.Filter{Name: name, Values: values})
	}
}

// ec2Statuses are the HTTP statuses EC2 answers error codes with.
var ec2Statuses = byStatus(map[int][]string{
	http.StatusForbidden:           {"UnauthorizedOperation", "Blocked"},
	http.StatusUnauthorized:        {"AuthFailure", "MissingAuthenticationToken"},
	http.StatusServiceUnavailable:  {"RequestLimitExceeded", "Unavailable", "ServiceUnavailable"},
	http.StatusInternalServerError: {"InternalError", "InternalFailure"},
	http.StatusPreconditionFailed:  {"DryRunOperation"},
})

type ec2ErrorResponse struct {
	XMLName   xml.Name   `xml:"Response"`
	Errors    []ec2Error `xml:"Errors>Error"`
	RequestID string     `xml:"RequestID"`
}

type ec2Error struct {
	Code    string `xml:"Code"`
	Message string `xml:"Message"`
}

func (ec2Service) writeError(w http.ResponseWriter, reqID, code, msg string) {
	writeXML(w, ec2Statuses.of(code), ec2ErrorResponse{Errors: []ec2Error{{code, msg}}, RequestID: reqID})
}

func (ec2Service) writeOutput(w http.ResponseWriter, _ string, doc any) {
	writeXML(w, http.StatusOK, doc)
}

// ec2Response is the document of every Describe action's answer:
// <ACTIONResponse><requestId>..</requestId><LIST><item>..</item>...</LIST><nextToken>..</nextToken></ACTIONResponse>,
// an empty list and a nil token left out, as EC2 leaves out what is not set. (EC2 writes its
// namespace on the root element; awsserver has never written it, and the SDK does not read it.)
type ec2Response[T any] struct {
	XMLName   xml.Name
	RequestID string     `xml:"requestId"`
	List      *xmlSet[T] // named by its XMLName
	NextToken *string    `xml:"nextToken"`
}

func ec2Page[T any](reqID, action, list string, items *xmlSet[T], next *string) ec2Response[T] {
	if items != nil {
		items.XMLName.Local = list
	}
	return ec2Response[T]{XMLName: xml.Name{Local: action + "Response"}, RequestID: reqID, List: items, NextToken: next}
}

type xmlTag struct {
	Key   *string `xml:"key"`
	Value *string `xml:"value"`
}

func toXMLTag(t ec2types.Tag) xmlTag { return xmlTag{t.Key, t.Value} }

// xmlSet is an EC2 list: <NAME><item>..</item>...</NAME>, named by the field that holds it or,
// in an ec2Response, by its XMLName.
type xmlSet[T any] struct {
	XMLName xml.Name
	Items   []T `xml:"item"`
}

// set is the list of items, or nil (no element at all) when there are none, as EC2 leaves
// out an empty list (the SDK then decodes nil, not an empty slice).
func set[T any](items []T) *xmlSet[T] {
	if len(items) == 0 {
		return nil
	}
	return &xmlSet[T]{Items: items}
}

func mapSet[From, To any](items []From, f func(From) To) *xmlSet[To] {
	out := make([]To, len(items))
	for i, it := range items {
		out[i] = f(it)
	}
	return set(out)
}

type xmlReservation struct {
	ReservationID *string              `xml:"reservationId"`
	OwnerID       *string              `xml:"ownerId"`
	Instances     *xmlSet[xmlInstance] `xml:"instancesSet"`
}

func toXMLReservation(r ec2types.Reservation) xmlReservation {
	return xmlReservation{ReservationID: r.ReservationId, OwnerID: r.OwnerId, Instances: mapSet(r.Instances, toXMLInstance)}
}

// xmlInstance carries the fields of an instance nodekeeper reads (ID, type, state and its
// reason, private DNS name and address, launch time, subnet, tags) and their neighbours.
type xmlInstance struct {
	InstanceID       *string                 `xml:"instanceId"`
	ImageID          *string                 `xml:"imageId"`
	State            *xmlState               `xml:"instanceState"`
	PrivateDNSName   *string                 `xml:"privateDnsName"`
	DNSName          *string                 `xml:"dnsName"`
	Reason           *string                 `xml:"reason"`
	InstanceType     string                  `xml:"instanceType,omitempty"`
	LaunchTime       *string                 `xml:"launchTime"`
	Placement        *xmlPlacement           `xml:"placement"`
	SubnetID         *string                 `xml:"subnetId"`
	VpcID            *string                 `xml:"vpcId"`
	PrivateIPAddress *string                 `xml:"privateIpAddress"`
	IPAddress        *string                 `xml:"ipAddress"`
	StateReason      *xmlStateReason         `xml:"stateReason"`
	Architecture     string                  `xml:"architecture,omitempty"`
	Tags             *xmlSet[xmlTag]         `xml:"tagSet"`
	Interfaces       *xmlSet[xmlInterfaceID] `xml:"networkInterfaceSet"`
	RootDeviceName   *string                 `xml:"rootDeviceName"`
	RootDeviceType   string                  `xml:"rootDeviceType,omitempty"`
	BlockDevices     *xmlSet[xmlBlockDevice] `xml:"blockDeviceMapping"`
}

type xmlState struct {
	Code *int32 `xml:"code"`
	Name string `xml:"name"`
}

type xmlStateReason struct {
	Code    *string `xml:"code"`
	Message *string `xml:"message"`
}

type xmlPlacement struct {
	AvailabilityZone *string `xml:"availabilityZone"`
}

type xmlInterfaceID struct {
	NetworkInterfaceID *string `xml:"networkInterfaceId"`
	SubnetID           *string `xml:"subnetId"`
	PrivateIPAddress   *string `xml:"privateIpAddress"`
}

// ec2Time is how EC2 writes a timestamp (ISO 8601, milliseconds, UTC).
func ec2Time(t *time.Time) *string {
	return optional(t, func(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") })
}

func toXMLInstance(i ec2types.Instance) xmlInstance {
	x := xmlInstance{InstanceID: i.InstanceId, ImageID: i.ImageId, PrivateDNSName: i.PrivateDnsName, DNSName: i.PublicDnsName,
		Reason: i.StateTransitionReason, InstanceType: string(i.InstanceType), LaunchTime: ec2Time(i.LaunchTime),
		SubnetID: i.SubnetId, VpcID: i.VpcId, PrivateIPAddress: i.PrivateIpAddress, IPAddress: i.PublicIpAddress,
		Architecture: string(i.Architecture), Tags: mapSet(i.Tags, toXMLTag)}
	if i.State != nil {
		x.State = &xmlState{Code: i.State.Code, Name: string(i.State.Name)}
	}
	if i.StateReason != nil {
		x.StateReason = &xmlStateReason{Code: i.StateReason.Code, Message: i.StateReason.Message}
	}
	if i.Placement != nil {
		x.Placement = &xmlPlacement{AvailabilityZone: i.Placement.AvailabilityZone}
	}
	x.Interfaces = mapSet(i.NetworkInterfaces, func(n ec2types.InstanceNetworkInterface) xmlInterfaceID {
		return xmlInterfaceID{n.NetworkInterfaceId, n.SubnetId, n.PrivateIpAddress}
	})
	x.RootDeviceName, x.RootDeviceType = i.RootDeviceName, string(i.RootDeviceType)
	x.BlockDevices = mapSet(i.BlockDeviceMappings, toXMLBlockDevice)
	return x
}

// xmlSubnet carries the fields of a subnet nodekeeper reads (ID, VPC, CIDR, zone, free
// addresses, tags) and their neighbours.
type xmlSubnet struct {
	SubnetID                *string         `xml:"subnetId"`
	SubnetArn               *string         `xml:"subnetArn"`
	State                   string          `xml:"state,omitempty"`
	OwnerID                 *string         `xml:"ownerId"`
	VpcID                   *string         `xml:"vpcId"`
	CidrBlock               *string         `xml:"cidrBlock"`
	AvailableIPAddressCount *int32          `xml:"availableIpAddressCount"`
	AvailabilityZone        *string         `xml:"availabilityZone"`
	AvailabilityZoneID      *string         `xml:"availabilityZoneId"`
	DefaultForAz            *bool           `xml:"defaultForAz"`
	MapPublicIPOnLaunch     *bool           `xml:"mapPublicIpOnLaunch"`
	Tags                    *xmlSet[xmlTag] `xml:"tagSet"`
}

func toXMLSubnet(s ec2types.Subnet) xmlSubnet {
	return xmlSubnet{SubnetID: s.SubnetId, SubnetArn: s.SubnetArn, State: string(s.State), OwnerID: s.OwnerId, VpcID: s.VpcId,
		CidrBlock: s.CidrBlock, AvailableIPAddressCount: s.AvailableIpAddressCount, AvailabilityZone: s.AvailabilityZone,
		AvailabilityZoneID: s.AvailabilityZoneId, DefaultForAz: s.DefaultForAz, MapPublicIPOnLaunch: s.MapPublicIpOnLaunch,
		Tags: mapSet(s.Tags, toXMLTag)}
}

// xmlInstanceType carries what nodekeeper reads of an instance type (hypervisor, bare metal,
// vCPUs, ENIs and addresses per ENI, network cards) and their neighbours.
type xmlInstanceType struct {
	InstanceType      string          `xml:"instanceType,omitempty"`
	CurrentGeneration *bool           `xml:"currentGeneration"`
	BareMetal         *bool           `xml:"bareMetal"`
	Hypervisor        string          `xml:"hypervisor,omitempty"`
	VCPUInfo          *xmlVCPUInfo    `xml:"vCpuInfo"`
	NetworkInfo       *xmlNetworkInfo `xml:"networkInfo"`
}

type xmlVCPUInfo struct {
	DefaultVCPUs          *int32 `xml:"defaultVCpus"`
	DefaultCores          *int32 `xml:"defaultCores"`
	DefaultThreadsPerCore *int32 `xml:"defaultThreadsPerCore"`
}

type xmlNetworkInfo struct {
	NetworkPerformance        *string                 `xml:"networkPerformance"`
	MaximumNetworkInterfaces  *int32                  `xml:"maximumNetworkInterfaces"`
	MaximumNetworkCards       *int32                  `xml:"maximumNetworkCards"`
	DefaultNetworkCardIndex   *int32                  `xml:"defaultNetworkCardIndex"`
	NetworkCards              *xmlSet[xmlNetworkCard] `xml:"networkCards"`
	IPv4AddressesPerInterface *int32                  `xml:"ipv4AddressesPerInterface"`
	IPv6AddressesPerInterface *int32                  `xml:"ipv6AddressesPerInterface"`
	IPv6Supported             *bool                   `xml:"ipv6Supported"`
	EnaSupport                string                  `xml:"enaSupport,omitempty"`
}

type xmlNetworkCard struct {
	NetworkCardIndex         *int32  `xml:"networkCardIndex"`
	NetworkPerformance       *string `xml:"networkPerformance"`
	MaximumNetworkInterfaces *int32  `xml:"maximumNetworkInterfaces"`
}

func toXMLInstanceType(t ec2types.InstanceTypeInfo) xmlInstanceType {
	x := xmlInstanceType{InstanceType: string(t.InstanceType), CurrentGeneration: t.CurrentGeneration, BareMetal: t.BareMetal,
		Hypervisor: string(t.Hypervisor)}
	if v := t.VCpuInfo; v != nil {
		x.VCPUInfo = &xmlVCPUInfo{v.DefaultVCpus, v.DefaultCores, v.DefaultThreadsPerCore}
	}
	if n := t.NetworkInfo; n != nil {
		x.NetworkInfo = &xmlNetworkInfo{NetworkPerformance: n.NetworkPerformance, MaximumNetworkInterfaces: n.MaximumNetworkInterfaces,
			MaximumNetworkCards: n.MaximumNetworkCards, DefaultNetworkCardIndex: n.DefaultNetworkCardIndex,
			IPv4AddressesPerInterface: n.Ipv4AddressesPerInterface, IPv6AddressesPerInterface: n.Ipv6AddressesPerInterface,
			IPv6Supported: n.Ipv6Supported, EnaSupport: string(n.EnaSupport)}
		x.NetworkInfo.NetworkCards = mapSet(n.NetworkCards, func(c ec2types.NetworkCardInfo) xmlNetworkCard {
			return xmlNetworkCard{c.NetworkCardIndex, c.NetworkPerformance, c.MaximumNetworkInterfaces}
		})
	}
	return x
}

// xmlLaunchTemplateVersion carries what nodekeeper reads of a launch template version (ID,
// number, user data, instance type) and the identity, default and image neighbours of those, as
// the EC2 API reference's DescribeLaunchTemplateVersions response shows them.
type xmlLaunchTemplateVersion struct {
	LaunchTemplateID   *string                `xml:"launchTemplateId"`
	LaunchTemplateName *string                `xml:"launchTemplateName"`
	VersionNumber      *int64                 `xml:"versionNumber"`
	VersionDescription *string                `xml:"versionDescription"`
	CreateTime         *string                `xml:"createTime"`
	CreatedBy          *string                `xml:"createdBy"`
	DefaultVersion     *bool                  `xml:"defaultVersion"`
	Data               *xmlLaunchTemplateData `xml:"launchTemplateData"`
}

type xmlLaunchTemplateData struct {
	ImageID      *string `xml:"imageId"`
	InstanceType string  `xml:"instanceType,omitempty"`
	KeyName      *string `xml:"keyName"`
	UserData     *string `xml:"userData"`
}

func toXMLLaunchTemplateVersion(v ec2types.LaunchTemplateVersion) xmlLaunchTemplateVersion {
	x := xmlLaunchTemplateVersion{LaunchTemplateID: v.LaunchTemplateId, LaunchTemplateName: v.LaunchTemplateName, VersionNumber: v.VersionNumber,
		VersionDescription: v.VersionDescription, CreateTime: ec2Time(v.CreateTime), CreatedBy: v.CreatedBy, DefaultVersion: v.DefaultVersion}
	if d := v.LaunchTemplateData; d != nil {
		x.Data = &xmlLaunchTemplateData{ImageID: d.ImageId, InstanceType: string(d.InstanceType), KeyName: d.KeyName, UserData: d.UserData}
	}
	return x
}
