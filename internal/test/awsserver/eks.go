package awsserver

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"

	"github.com/nodekeeper/nodekeeper/internal/test/awsfake"
)

// EKS's REST-JSON: the operation is the method and path (DescribeCluster: GET /clusters/NAME,
// ListNodegroups: GET /clusters/NAME/node-groups, DescribeNodegroup: GET
// /clusters/NAME/node-groups/NODEGROUP),
// the output a JSON object, an error an X-Amzn-ErrorType header naming the code and a JSON
// body {"message": ...}.

type eksService struct{}

func (eksService) name() string { return EKS }

// eksRequest is an EKS request's path, unescaped: the cluster's name, then "node-groups" and
// the node group's name when there, and its query.
type eksRequest struct {
	path  []string
	query url.Values
}

// eksOps are the operations served, by the number of segments of their path.
var eksOps = []struct {
	name string
	operation[eksRequest]
}{
	1: {"DescribeCluster", op(func(r eksRequest) (*eks.DescribeClusterInput, error) {
		return &eks.DescribeClusterInput{Name: &r.path[0]}, nil
	}, (*awsfake.Cloud).DescribeCluster, func(_ string, out *eks.DescribeClusterOutput) any {
		return struct {
			Cluster *jsonCluster `json:"cluster,omitempty"`
		}{toJSONCluster(out.Cluster)}
	})},
	2: {"ListNodegroups", op(decodeListNodegroups, (*awsfake.Cloud).ListNodegroups, func(_ string, out *eks.ListNodegroupsOutput) any {
		return struct {
			Nodegroups []string `json:"nodegroups"`
			NextToken  *string  `json:"nextToken,omitempty"`
		}{append([]string{}, out.Nodegroups...), out.NextToken}
	})},
	3: {"DescribeNodegroup", op(func(r eksRequest) (*eks.DescribeNodegroupInput, error) {
		return &eks.DescribeNodegroupInput{ClusterName: &r.path[0], NodegroupName: &r.path[2]}, nil
	}, (*awsfake.Cloud).DescribeNodegroup, func(_ string, out *eks.DescribeNodegroupOutput) any {
		return struct {
			Nodegroup *jsonNodegroup `json:"nodegroup,omitempty"`
		}{toJSONNodegroup(out.Nodegroup)}
	})},
}

// decode routes GET /clusters/NAME (DescribeCluster), GET /clusters/NAME/node-groups
// (ListNodegroups, with maxResults and nextToken in the query) and
// GET /clusters/NAME/node-groups/NODEGROUP (DescribeNodegroup).
func (eksService) decode(r *http.Request) (decoded, error) {
	rest := strings.TrimPrefix(r.URL.EscapedPath(), "/clusters/")
	segs := strings.Split(rest, "/")
	if r.Method != http.MethodGet || rest == "" || len(segs) > 3 || (len(segs) > 1 && segs[1] != "node-groups") {
		return decoded{}, apiError("InvalidRequestException", "awsserver serves GET /clusters/NAME[/node-groups[/NODEGROUP]] only, not %s %s", r.Method, r.URL.Path)
	}
	names := make([]string, len(segs))
	for i, seg := range segs {
		name, err := url.PathUnescape(seg)
		if err != nil {
			return decoded{}, apiError("InvalidParameterException", "path: %v", err)
		}
		names[i] = name
	}
	o := eksOps[len(segs)]
	return o.read(o.name, eksRequest{names, r.URL.Query()})
}

func decodeListNodegroups(r eksRequest) (*eks.ListNodegroupsInput, error) {
	in := &eks.ListNodegroupsInput{ClusterName: &r.path[0]}
	if v := r.query.Get("nextToken"); v != "" {
		in.NextToken = &v
	}
	if v := r.query.Get("maxResults"); v != "" {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			return nil, apiError("InvalidParameterException", "maxResults %q", v)
		}
		m := int32(n)
		in.MaxResults = &m
	}
	return in, nil
}

// jsonCluster carries what nodekeeper reads of a cluster (name, tags, logging) and the
// identity, status and network neighbours of those.
type jsonCluster struct {
	Name                    *string            `json:"name,omitempty"`
	Arn                     *string            `json:"arn,omitempty"`
	CreatedAt               *float64           `json:"createdAt,omitempty"` // epoch seconds
	Version                 *string            `json:"version,omitempty"`
	Endpoint                *string            `json:"endpoint,omitempty"`
	RoleArn                 *string            `json:"roleArn,omitempty"`
	Status                  string             `json:"status,omitempty"`
	PlatformVersion         *string            `json:"platformVersion,omitempty"`
	Tags                    map[string]string  `json:"tags,omitempty"`
	Logging                 *jsonLogging       `json:"logging,omitempty"`
	ResourcesVpcConfig      *jsonVpcConfig     `json:"resourcesVpcConfig,omitempty"`
	KubernetesNetworkConfig *jsonNetworkConfig `json:"kubernetesNetworkConfig,omitempty"`
}

type jsonLogging struct {
	ClusterLogging []jsonLogSetup `json:"clusterLogging"`
}

type jsonLogSetup struct {
	Types   []string `json:"types,omitempty"`
	Enabled *bool    `json:"enabled,omitempty"`
}

type jsonVpcConfig struct {
	SubnetIDs              []string `json:"subnetIds,omitempty"`
	SecurityGroupIDs       []string `json:"securityGroupIds,omitempty"`
	ClusterSecurityGroupID *string  `json:"clusterSecurityGroupId,omitempty"`
	VpcID                  *string  `json:"vpcId,omitempty"`
	EndpointPublicAccess   bool     `json:"endpointPublicAccess"`
	EndpointPrivateAccess  bool     `json:"endpointPrivateAccess"`
}

type jsonNetworkConfig struct {
	ServiceIPv4Cidr *string `json:"serviceIpv4Cidr,omitempty"`
	ServiceIPv6Cidr *string `json:"serviceIpv6Cidr,omitempty"`
	IPFamily        string  `json:"ipFamily,omitempty"`
}

func toJSONCluster(c *ekstypes.Cluster) *jsonCluster {
	if c == nil {
		return nil
	}
	j := &jsonCluster{Name: c.Name, Arn: c.Arn, Version: c.Version, Endpoint: c.Endpoint, RoleArn: c.RoleArn,
		Status: string(c.Status), PlatformVersion: c.PlatformVersion, Tags: c.Tags, CreatedAt: optional(c.CreatedAt, epochSeconds)}
	if c.Logging != nil {
		j.Logging = &jsonLogging{ClusterLogging: []jsonLogSetup{}}
		for _, l := range c.Logging.ClusterLogging {
			s := jsonLogSetup{Enabled: l.Enabled}
			for _, t := range l.Types {
				s.Types = append(s.Types, string(t))
			}
			j.Logging.ClusterLogging = append(j.Logging.ClusterLogging, s)
		}
	}
	if v := c.ResourcesVpcConfig; v != nil {
		j.ResourcesVpcConfig = &jsonVpcConfig{SubnetIDs: v.SubnetIds, SecurityGroupIDs: v.SecurityGroupIds,
			ClusterSecurityGroupID: v.ClusterSecurityGroupId, VpcID: v.VpcId,
			EndpointPublicAccess: v.EndpointPublicAccess, EndpointPrivateAccess: v.EndpointPrivateAccess}
	}
	if n := c.KubernetesNetworkConfig; n != nil {
		j.KubernetesNetworkConfig = &jsonNetworkConfig{ServiceIPv4Cidr: n.ServiceIpv4Cidr, ServiceIPv6Cidr: n.ServiceIpv6Cidr, IPFamily: string(n.IpFamily)}
	}
	return j
}

func (eksService) writeOutput(w http.ResponseWriter, reqID string, doc any) {
	writeJSON(w, "application/json", reqID, http.StatusOK, doc)
}

// jsonNodegroup carries what nodekeeper reads of a managed node group (name, cluster, launch
// template) and the identity, scaling, instance and status neighbours of those, as the EKS API
// reference's DescribeNodegroup response shows them.
type jsonNodegroup struct {
	NodegroupName  *string             `json:"nodegroupName,omitempty"`
	NodegroupArn   *string             `json:"nodegroupArn,omitempty"`
	ClusterName    *string             `json:"clusterName,omitempty"`
	Version        *string             `json:"version,omitempty"`
	ReleaseVersion *string             `json:"releaseVersion,omitempty"`
	CreatedAt      *float64            `json:"createdAt,omitempty"` // epoch seconds
	Status         string              `json:"status,omitempty"`
	CapacityType   string              `json:"capacityType,omitempty"`
	ScalingConfig  *jsonScalingConfig  `json:"scalingConfig,omitempty"`
	InstanceTypes  []string            `json:"instanceTypes,omitempty"`
	Subnets        []string            `json:"subnets,omitempty"`
	AmiType        string              `json:"amiType,omitempty"`
	NodeRole       *string             `json:"nodeRole,omitempty"`
	Labels         map[string]string   `json:"labels,omitempty"`
	LaunchTemplate *jsonLaunchTemplate `json:"launchTemplate,omitempty"`
	Tags           map[string]string   `json:"tags,omitempty"`
}

type jsonScalingConfig struct {
	MinSize     *int32 `json:"minSize,omitempty"`
	MaxSize     *int32 `json:"maxSize,omitempty"`
	DesiredSize *int32 `json:"desiredSize,omitempty"`
}

type jsonLaunchTemplate struct {
	Name    *string `json:"name,omitempty"`
	Version *string `json:"version,omitempty"`
	ID      *string `json:"id,omitempty"`
}

func toJSONNodegroup(n *ekstypes.Nodegroup) *jsonNodegroup {
	if n == nil {
		return nil
	}
	j := &jsonNodegroup{NodegroupName: n.NodegroupName, NodegroupArn: n.NodegroupArn, ClusterName: n.ClusterName, Version: n.Version,
		ReleaseVersion: n.ReleaseVersion, CreatedAt: optional(n.CreatedAt, epochSeconds), Status: string(n.Status), CapacityType: string(n.CapacityType),
		InstanceTypes: n.InstanceTypes, Subnets: n.Subnets, AmiType: string(n.AmiType), NodeRole: n.NodeRole, Labels: n.Labels, Tags: n.Tags}
	if s := n.ScalingConfig; s != nil {
		j.ScalingConfig = &jsonScalingConfig{s.MinSize, s.MaxSize, s.DesiredSize}
	}
	if lt := n.LaunchTemplate; lt != nil {
		j.LaunchTemplate = &jsonLaunchTemplate{lt.Name, lt.Version, lt.Id}
	}
	return j
}

// eksStatuses are the HTTP statuses EKS answers error codes with.
var eksStatuses = byStatus(map[int][]string{
	http.StatusForbidden:           {"AccessDeniedException", "MissingAuthenticationToken"},
	http.StatusNotFound:            {"ResourceNotFoundException"},
	http.StatusTooManyRequests:     {"ThrottlingException", "TooManyRequestsException"},
	http.StatusInternalServerError: {"ServerException"},
	http.StatusServiceUnavailable:  {"ServiceUnavailableException"},
})

func (eksService) writeError(w http.ResponseWriter, reqID, code, msg string) {
	w.Header().Set("X-Amzn-ErrorType", code)
	writeJSON(w, "application/json", reqID, eksStatuses.of(code), map[string]string{"message": msg})
}
