package awsserver

import (
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/nodekeeper/nodekeeper/internal/aws/awsfake"
)

// EC2's Query protocol: the request is a form (Action, Version, then the parameters with
// lists flattened as Name.1, Name.2, structures as Name.1.Member), the answer XML in EC2's
// namespace. API reference: "Query requests for Amazon EC2" and each action's "Response
// elements".

const ec2Namespace = "http://ec2.amazonaws.com/doc/2016-11-15/"

type ec2Service struct{}

func (ec2Service) name() string { return EC2 }

// ec2Params are the parameters each action understands besides Action, Version and DryRun:
// the plain ones and the flattened lists (Name.N...). A parameter outside them is refused with
// UnknownParameter, as EC2 does, so that a request the SDK builds differently fails the tests.
var ec2Params = map[string]queryParams{
	"DescribeInstances":     {plain: []string{"MaxResults", "NextToken"}, lists: []string{"Filter", "InstanceId"}},
	"DescribeSubnets":       {plain: []string{"MaxResults", "NextToken"}, lists: []string{"Filter", "SubnetId"}},
	"DescribeInstanceTypes": {plain: []string{"MaxResults", "NextToken"}, lists: []string{"Filter", "InstanceType"}},
	"DescribeVolumes":       {plain: []string{"MaxResults", "NextToken"}, lists: []string{"Filter", "VolumeId"}},
	"DescribeLaunchTemplateVersions": {plain: []string{"MaxResults", "NextToken", "LaunchTemplateId", "LaunchTemplateName", "MinVersion", "MaxVersion", "ResolveAlias"},
		lists: []string{"Filter", "LaunchTemplateVersion"}},
}

// queryParams are the parameters of one action of a Query protocol: the plain ones and the
// flattened lists (Name.N..., Name.member.N...).
type queryParams struct{ plain, lists []string }

// decodeQueryForm reads a Query protocol request (EC2's, Auto Scaling's): a POSTed form whose
// Action is one of actions, of the API version given, with only the parameters that action
// understands (and DryRun).
func decodeQueryForm(r *http.Request, version string, actions map[string]queryParams) (string, url.Values, error) {
	if r.Method != http.MethodPost {
		return "", nil, apiError("InvalidAction", "the Query protocol takes a POST of a form, not %s %s", r.Method, r.URL.Path)
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return "", nil, apiError("InvalidRequest", "reading the request: %v", err)
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return "", nil, apiError("InvalidRequest", "the body is not a form: %v", err)
	}
	op := form.Get("Action")
	params, ok := actions[op]
	if !ok {
		return op, nil, apiError("InvalidAction", "The action %s is not valid for this web service.", op)
	}
	if v := form.Get("Version"); v != version {
		return op, nil, apiError("InvalidParameterValue", "Version %q is not %s", v, version)
	}
	for key := range form {
		head, _, _ := strings.Cut(key, ".")
		known := key == "Action" || key == "Version" || key == "DryRun"
		for _, p := range params.plain {
			known = known || key == p
		}
		for _, l := range params.lists {
			known = known || (head == l && key != l)
		}
		if !known {
			return op, nil, apiError("UnknownParameter", "The parameter %s is not recognized", key)
		}
	}
	return op, form, nil
}

func (ec2Service) decode(r *http.Request) (string, any, error) {
	op, form, err := decodeQueryForm(r, "2016-11-15", ec2Params)
	if err != nil {
		return op, nil, err
	}
	if form.Get("DryRun") == "true" {
		return op, nil, apiError("DryRunOperation", "Request would have succeeded, but DryRun flag is set.")
	}
	maxResults, err := formInt32(form, "MaxResults")
	if err != nil {
		return op, nil, err
	}
	token := formString(form, "NextToken")
	filters := formFilters(form)
	switch op {
	case "DescribeInstances":
		return op, &ec2.DescribeInstancesInput{InstanceIds: formList(form, "InstanceId"), Filters: filters, MaxResults: maxResults, NextToken: token}, nil
	case "DescribeSubnets":
		return op, &ec2.DescribeSubnetsInput{SubnetIds: formList(form, "SubnetId"), Filters: filters, MaxResults: maxResults, NextToken: token}, nil
	case "DescribeVolumes":
		return op, &ec2.DescribeVolumesInput{VolumeIds: formList(form, "VolumeId"), Filters: filters, MaxResults: maxResults, NextToken: token}, nil
	case "DescribeLaunchTemplateVersions":
		if len(filters) > 0 || form.Has("MinVersion") || form.Has("MaxVersion") {
			return op, nil, apiError("InvalidParameterValue", "awsserver: DescribeLaunchTemplateVersions takes a template and versions only")
		}
		return op, &ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateId: formString(form, "LaunchTemplateId"), LaunchTemplateName: formString(form, "LaunchTemplateName"),
			Versions: formList(form, "LaunchTemplateVersion"), MaxResults: maxResults, NextToken: token}, nil
	default: // DescribeInstanceTypes
		var types []ec2types.InstanceType
		for _, t := range formList(form, "InstanceType") {
			types = append(types, ec2types.InstanceType(t))
		}
		return op, &ec2.DescribeInstanceTypesInput{InstanceTypes: types, Filters: filters, MaxResults: maxResults, NextToken: token}, nil
	}
}

func formString(form url.Values, key string) *string {
	if v, ok := form[key]; ok && len(v) > 0 {
		return &v[0]
	}
	return nil
}

func formInt32(form url.Values, key string) (*int32, error) {
	s := formString(form, key)
	if s == nil {
		return nil, nil
	}
	n, err := strconv.ParseInt(*s, 10, 32)
	if err != nil {
		return nil, apiError("InvalidParameterValue", "Invalid value '%s' for %s", *s, key)
	}
	v := int32(n)
	return &v, nil
}

// formList reads the flattened list prefix.1, prefix.2, ... (EC2 numbers from 1, without gaps).
func formList(form url.Values, prefix string) []string {
	var out []string
	for i := 1; ; i++ {
		v, ok := form[prefix+"."+strconv.Itoa(i)]
		if !ok {
			return out
		}
		out = append(out, v[0])
	}
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

func (ec2Service) call(ctx context.Context, cloud *awsfake.Cloud, op string, in any) (any, error) {
	switch in := in.(type) {
	case *ec2.DescribeInstancesInput:
		return cloud.DescribeInstances(ctx, in)
	case *ec2.DescribeSubnetsInput:
		return cloud.DescribeSubnets(ctx, in)
	case *ec2.DescribeInstanceTypesInput:
		return cloud.DescribeInstanceTypes(ctx, in)
	case *ec2.DescribeVolumesInput:
		return cloud.DescribeVolumes(ctx, in)
	case *ec2.DescribeLaunchTemplateVersionsInput:
		return cloud.DescribeLaunchTemplateVersions(ctx, in)
	}
	return nil, apiError("InvalidAction", "The action %s is not valid for this web service.", op)
}

// ec2Status is the HTTP status EC2 answers an error code with.
func ec2Status(code string) int {
	switch code {
	case "UnauthorizedOperation", "Blocked":
		return http.StatusForbidden
	case "AuthFailure", "MissingAuthenticationToken":
		return http.StatusUnauthorized
	case "RequestLimitExceeded", "Unavailable", "ServiceUnavailable":
		return http.StatusServiceUnavailable
	case "InternalError", "InternalFailure":
		return http.StatusInternalServerError
	case "DryRunOperation":
		return http.StatusPreconditionFailed
	}
	return http.StatusBadRequest
}

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
	writeXML(w, ec2Status(code), ec2ErrorResponse{Errors: []ec2Error{{code, msg}}, RequestID: reqID})
}

func writeXML(w http.ResponseWriter, status int, v any) {
	body, err := xml.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.WriteHeader(status)
	io.WriteString(w, xml.Header)
	w.Write(body)
}

func (ec2Service) writeOutput(w http.ResponseWriter, reqID, op string, out any) {
	var resp any
	switch out := out.(type) {
	case *ec2.DescribeInstancesOutput:
		r := describeInstancesResponse{RequestID: reqID, NextToken: out.NextToken}
		r.XMLName.Space = ec2Namespace
		var reservations []xmlReservation
		for _, res := range out.Reservations {
			xr := xmlReservation{ReservationID: res.ReservationId, OwnerID: res.OwnerId, Instances: mapSet(res.Instances, toXMLInstance)}
			reservations = append(reservations, xr)
		}
		r.Reservations = set(reservations)
		resp = r
	case *ec2.DescribeSubnetsOutput:
		r := describeSubnetsResponse{RequestID: reqID, NextToken: out.NextToken}
		r.XMLName.Space = ec2Namespace
		r.Subnets = mapSet(out.Subnets, toXMLSubnet)
		resp = r
	case *ec2.DescribeInstanceTypesOutput:
		r := describeInstanceTypesResponse{RequestID: reqID, NextToken: out.NextToken}
		r.XMLName.Space = ec2Namespace
		r.InstanceTypes = mapSet(out.InstanceTypes, toXMLInstanceType)
		resp = r
	case *ec2.DescribeVolumesOutput:
		resp = describeVolumesResponse(reqID, out)
	case *ec2.DescribeLaunchTemplateVersionsOutput:
		r := describeLaunchTemplateVersionsResponse{RequestID: reqID, NextToken: out.NextToken}
		r.XMLName.Space = ec2Namespace
		r.Versions = mapSet(out.LaunchTemplateVersions, toXMLLaunchTemplateVersion)
		resp = r
	default:
		ec2Service{}.writeError(w, reqID, "InternalError", fmt.Sprintf("awsserver: no encoder for %T of %s", out, op))
		return
	}
	writeXML(w, http.StatusOK, resp)
}

// The response documents. Nil pointers and empty lists are left out, as EC2 leaves out what is
// not set.

type describeInstancesResponse struct {
	XMLName      xml.Name                `xml:"DescribeInstancesResponse"`
	RequestID    string                  `xml:"requestId"`
	Reservations *xmlSet[xmlReservation] `xml:"reservationSet"`
	NextToken    *string                 `xml:"nextToken"`
}

type describeSubnetsResponse struct {
	XMLName   xml.Name           `xml:"DescribeSubnetsResponse"`
	RequestID string             `xml:"requestId"`
	Subnets   *xmlSet[xmlSubnet] `xml:"subnetSet"`
	NextToken *string            `xml:"nextToken"`
}

type describeInstanceTypesResponse struct {
	XMLName       xml.Name                 `xml:"DescribeInstanceTypesResponse"`
	RequestID     string                   `xml:"requestId"`
	InstanceTypes *xmlSet[xmlInstanceType] `xml:"instanceTypeSet"`
	NextToken     *string                  `xml:"nextToken"`
}

type describeLaunchTemplateVersionsResponse struct {
	XMLName   xml.Name                          `xml:"DescribeLaunchTemplateVersionsResponse"`
	RequestID string                            `xml:"requestId"`
	Versions  *xmlSet[xmlLaunchTemplateVersion] `xml:"launchTemplateVersionSet"`
	NextToken *string                           `xml:"nextToken"`
}

type xmlTag struct {
	Key   *string `xml:"key"`
	Value *string `xml:"value"`
}

func toXMLTag(t ec2types.Tag) xmlTag { return xmlTag{t.Key, t.Value} }

// xmlSet is an EC2 list: <NAME><item>..</item>...</NAME>.
type xmlSet[T any] struct {
	Items []T `xml:"item"`
}

// set is the list of items, or nil (no element at all) when there are none, as EC2 leaves
// out an empty list (the SDK then decodes nil, not an empty slice).
func set[T any](items []T) *xmlSet[T] {
	if len(items) == 0 {
		return nil
	}
	return &xmlSet[T]{items}
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
	if t == nil {
		return nil
	}
	s := t.UTC().Format("2006-01-02T15:04:05.000Z")
	return &s
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
