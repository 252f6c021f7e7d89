package awsserver

import (
	"encoding/xml"
	"net/http"
	"net/url"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	asgtypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"

	"github.com/nodekeeper/nodekeeper/internal/test/awsfake"
)

// Auto Scaling's Query protocol (awsQuery, query.go): a form like EC2's (Action,
// Version=2011-01-01, lists flattened as Name.member.N), answered with XML, the output inside
// an ACTIONResult element and the request ID in ResponseMetadata; errors as
// <ErrorResponse><Error><Type>Sender</Type><Code>..</Code><Message>..</Message></Error>
// <RequestId>..</RequestId></ErrorResponse>. (Auto Scaling writes its namespace,
// http://autoscaling.amazonaws.com/doc/2011-01-01/, on the root element; awsserver has never
// written it, and the SDK does not read it.) The form is told from EC2's by the service of its
// SigV4 credential scope. API reference: "DescribeAutoScalingGroups", "Common errors".

type asgService struct{}

func (asgService) name() string { return AutoScaling }

var asgOps = map[string]queryOperation[url.Values]{
	"DescribeAutoScalingGroups": {queryParams{plain: []string{"NextToken", "MaxRecords", "IncludeInstances"}, lists: []string{"AutoScalingGroupNames"}},
		op(decodeDescribeAutoScalingGroups, (*awsfake.Cloud).DescribeAutoScalingGroups, encodeDescribeAutoScalingGroups)},
}

func (asgService) decode(r *http.Request) (decoded, error) {
	op, o, form, err := decodeQueryForm(r, "2011-01-01", asgOps)
	if err != nil {
		return decoded{op: op}, err
	}
	return o.read(op, form)
}

func decodeDescribeAutoScalingGroups(form url.Values) (*autoscaling.DescribeAutoScalingGroupsInput, error) {
	in := &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: formList(form, "AutoScalingGroupNames.member"), NextToken: formString(form, "NextToken")}
	if v := formString(form, "MaxRecords"); v != nil {
		n, err := strconv.ParseInt(*v, 10, 32)
		if err != nil {
			return nil, apiError("ValidationError", "MaxRecords %q", *v)
		}
		m := int32(n)
		in.MaxRecords = &m
	}
	if v := formString(form, "IncludeInstances"); v != nil {
		b, err := strconv.ParseBool(*v)
		if err != nil {
			return nil, apiError("ValidationError", "IncludeInstances %q", *v)
		}
		in.IncludeInstances = &b
	}
	return in, nil
}

// asgStatuses are the HTTP statuses Auto Scaling answers error codes with (Throttling,
// ValidationError, InvalidNextToken...: 400).
var asgStatuses = byStatus(map[int][]string{
	http.StatusForbidden:           {"AccessDenied", "MissingAuthenticationToken"},
	http.StatusInternalServerError: {"InternalFailure", "InternalError"},
	http.StatusServiceUnavailable:  {"ServiceUnavailable"},
})

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
	status := asgStatuses.of(code)
	writeXML(w, status, asgErrorResponse{Error: asgError{fault(status), code, msg}, RequestID: reqID})
}

// fault is who an error status blames, as the awsQuery errors' Type says it.
func fault(status int) string {
	if status >= 500 {
		return "Receiver"
	}
	return "Sender"
}

func (asgService) writeOutput(w http.ResponseWriter, _ string, doc any) {
	writeXML(w, http.StatusOK, doc)
}

func encodeDescribeAutoScalingGroups(reqID string, out *autoscaling.DescribeAutoScalingGroupsOutput) any {
	r := describeAutoScalingGroupsResponse{RequestID: reqID}
	r.Result.Groups = members(out.AutoScalingGroups, toXMLGroup)
	r.Result.NextToken = out.NextToken
	return r
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
	return optional(s, func(s asgtypes.LaunchTemplateSpecification) xmlASGLaunchTemplate {
		return xmlASGLaunchTemplate{s.LaunchTemplateId, s.LaunchTemplateName, s.Version}
	})
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
