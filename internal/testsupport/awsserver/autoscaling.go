package awsserver

import (
	"context"
	"encoding/xml"
	"fmt"
	"net/http"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	asgtypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"

	"github.com/nodekeeper/nodekeeper/internal/aws/awsfake"
)

// Auto Scaling's Query protocol (awsQuery): a form like EC2's (Action, Version=2011-01-01, lists
// flattened as Name.member.N), answered with XML in the
// http://autoscaling.amazonaws.com/doc/2011-01-01/ namespace, the output inside an
// ACTIONResult element and the request ID in ResponseMetadata; errors as
// <ErrorResponse><Error><Type>Sender</Type><Code>..</Code><Message>..</Message></Error>
// <RequestId>..</RequestId></ErrorResponse>. The form is told from EC2's by the service of its
// SigV4 credential scope. API reference: "DescribeAutoScalingGroups", "Common errors".

const asgNamespace = "http://autoscaling.amazonaws.com/doc/2011-01-01/"

type asgService struct{}

func (asgService) name() string { return AutoScaling }

var asgParams = map[string]queryParams{
	"DescribeAutoScalingGroups": {plain: []string{"NextToken", "MaxRecords", "IncludeInstances"}, lists: []string{"AutoScalingGroupNames"}},
}

func (asgService) decode(r *http.Request) (string, any, error) {
	op, form, err := decodeQueryForm(r, "2011-01-01", asgParams)
	if err != nil {
		return op, nil, err
	}
	in := &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: formList(form, "AutoScalingGroupNames.member"), NextToken: formString(form, "NextToken")}
	if v := formString(form, "MaxRecords"); v != nil {
		n, err := strconv.ParseInt(*v, 10, 32)
		if err != nil {
			return op, nil, apiError("ValidationError", "MaxRecords %q", *v)
		}
		m := int32(n)
		in.MaxRecords = &m
	}
	if v := formString(form, "IncludeInstances"); v != nil {
		b, err := strconv.ParseBool(*v)
		if err != nil {
			return op, nil, apiError("ValidationError", "IncludeInstances %q", *v)
		}
		in.IncludeInstances = &b
	}
	return op, in, nil
}

func (asgService) call(ctx context.Context, cloud *awsfake.Cloud, op string, in any) (any, error) {
	if in, ok := in.(*autoscaling.DescribeAutoScalingGroupsInput); ok {
		return cloud.DescribeAutoScalingGroups(ctx, in)
	}
	return nil, apiError("InvalidAction", "awsserver does not serve the Auto Scaling action %s", op)
}

// asgStatus is the HTTP status Auto Scaling answers an error code with.
func asgStatus(code string) int {
	switch code {
	case "AccessDenied", "MissingAuthenticationToken":
		return http.StatusForbidden
	case "InternalFailure", "InternalError":
		return http.StatusInternalServerError
	case "ServiceUnavailable":
		return http.StatusServiceUnavailable
	}
	return http.StatusBadRequest // Throttling, ValidationError, InvalidNextToken...
}

type asgErrorResponse struct {
	XMLName   xml.Name `xml:"ErrorResponse"`
	Error     asgError `xml:"Error"`
	RequestID string   `xml:"RequestId"`
}

type asgError struct {
	Type    string `xml:"Type"`
	Code    string `xml:"Code"`
	Message string `xml:"Message"`
}

func (asgService) writeError(w http.ResponseWriter, reqID, code, msg string) {
	typ := "Sender"
	if asgStatus(code) >= 500 {
		typ = "Receiver"
	}
	r := asgErrorResponse{Error: asgError{typ, code, msg}, RequestID: reqID}
	r.XMLName.Space = asgNamespace
	writeXML(w, asgStatus(code), r)
}

func (asgService) writeOutput(w http.ResponseWriter, reqID, op string, out any) {
	o, ok := out.(*autoscaling.DescribeAutoScalingGroupsOutput)
	if !ok {
		asgService{}.writeError(w, reqID, "InternalFailure", fmt.Sprintf("awsserver: no encoder for %T of %s", out, op))
		return
	}
	r := describeAutoScalingGroupsResponse{RequestID: reqID}
	r.XMLName.Space = asgNamespace
	r.Result.Groups = members(o.AutoScalingGroups, toXMLGroup)
	r.Result.NextToken = o.NextToken
	writeXML(w, http.StatusOK, r)
}

type describeAutoScalingGroupsResponse struct {
	XMLName xml.Name `xml:"DescribeAutoScalingGroupsResponse"`
	Result  struct {
		// Groups is always there, empty or not, as Auto Scaling answers.
		Groups    xmlMembers[xmlGroup] `xml:"AutoScalingGroups"`
		NextToken *string              `xml:"NextToken"`
	} `xml:"DescribeAutoScalingGroupsResult"`
	RequestID string `xml:"ResponseMetadata>RequestId"`
}

// xmlMembers is an awsQuery list: <NAME><member>..</member>...</NAME>.
type xmlMembers[T any] struct {
	Items []T `xml:"member"`
}

func members[From, To any](items []From, f func(From) To) xmlMembers[To] {
	out := make([]To, len(items))
	for i, it := range items {
		out[i] = f(it)
	}
	return xmlMembers[To]{out}
}

// optMembers is an awsQuery list left out when empty.
func optMembers[From, To any](items []From, f func(From) To) *xmlMembers[To] {
	if len(items) == 0 {
		return nil
	}
	m := members(items, f)
	return &m
}

func identity[T any](v T) T { return v }

// xmlGroup carries what nodekeeper reads of an Auto Scaling group (name, launch template, the
// mixed instances policy's template) and the identity, size, zone, instance and tag neighbours
// of those.
type xmlGroup struct {
	Name                 *string                     `xml:"AutoScalingGroupName"`
	ARN                  *string                     `xml:"AutoScalingGroupARN"`
	LaunchTemplate       *xmlASGLaunchTemplate       `xml:"LaunchTemplate"`
	MixedInstancesPolicy *xmlMixedInstancesPolicy    `xml:"MixedInstancesPolicy"`
	MinSize              *int32                      `xml:"MinSize"`
	MaxSize              *int32                      `xml:"MaxSize"`
	DesiredCapacity      *int32                      `xml:"DesiredCapacity"`
	AvailabilityZones    *xmlMembers[string]         `xml:"AvailabilityZones"`
	HealthCheckType      *string                     `xml:"HealthCheckType"`
	CreatedTime          *string                     `xml:"CreatedTime"`
	VPCZoneIdentifier    *string                     `xml:"VPCZoneIdentifier"`
	Instances            *xmlMembers[xmlASGInstance] `xml:"Instances"`
	Tags                 *xmlMembers[xmlASGTag]      `xml:"Tags"`
}

type xmlASGLaunchTemplate struct {
	ID      *string `xml:"LaunchTemplateId"`
	Name    *string `xml:"LaunchTemplateName"`
	Version *string `xml:"Version"`
}

type xmlMixedInstancesPolicy struct {
	LaunchTemplate *struct {
		Spec *xmlASGLaunchTemplate `xml:"LaunchTemplateSpecification"`
	} `xml:"LaunchTemplate"`
}

type xmlASGInstance struct {
	InstanceID       *string               `xml:"InstanceId"`
	InstanceType     *string               `xml:"InstanceType"`
	AvailabilityZone *string               `xml:"AvailabilityZone"`
	LifecycleState   string                `xml:"LifecycleState,omitempty"`
	HealthStatus     *string               `xml:"HealthStatus"`
	LaunchTemplate   *xmlASGLaunchTemplate `xml:"LaunchTemplate"`
	Protected        *bool                 `xml:"ProtectedFromScaleIn"`
}

type xmlASGTag struct {
	ResourceID        *string `xml:"ResourceId"`
	ResourceType      *string `xml:"ResourceType"`
	Key               *string `xml:"Key"`
	Value             *string `xml:"Value"`
	PropagateAtLaunch *bool   `xml:"PropagateAtLaunch"`
}

func toXMLASGTemplate(s *asgtypes.LaunchTemplateSpecification) *xmlASGLaunchTemplate {
	if s == nil {
		return nil
	}
	return &xmlASGLaunchTemplate{s.LaunchTemplateId, s.LaunchTemplateName, s.Version}
}

func toXMLGroup(g asgtypes.AutoScalingGroup) xmlGroup {
	x := xmlGroup{Name: g.AutoScalingGroupName, ARN: g.AutoScalingGroupARN, LaunchTemplate: toXMLASGTemplate(g.LaunchTemplate),
		MinSize: g.MinSize, MaxSize: g.MaxSize, DesiredCapacity: g.DesiredCapacity, HealthCheckType: g.HealthCheckType,
		CreatedTime: ec2Time(g.CreatedTime), VPCZoneIdentifier: g.VPCZoneIdentifier,
		AvailabilityZones: optMembers(g.AvailabilityZones, identity[string]),
		Instances: optMembers(g.Instances, func(i asgtypes.Instance) xmlASGInstance {
			return xmlASGInstance{i.InstanceId, i.InstanceType, i.AvailabilityZone, string(i.LifecycleState), i.HealthStatus, toXMLASGTemplate(i.LaunchTemplate), i.ProtectedFromScaleIn}
		}),
		Tags: optMembers(g.Tags, func(t asgtypes.TagDescription) xmlASGTag {
			return xmlASGTag{t.ResourceId, t.ResourceType, t.Key, t.Value, t.PropagateAtLaunch}
		})}
	if p := g.MixedInstancesPolicy; p != nil && p.LaunchTemplate != nil {
		x.MixedInstancesPolicy = &xmlMixedInstancesPolicy{LaunchTemplate: &struct {
			Spec *xmlASGLaunchTemplate `xml:"LaunchTemplateSpecification"`
		}{toXMLASGTemplate(p.LaunchTemplate.LaunchTemplateSpecification)}}
	}
	return x
}
