package awsserver

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"

	"github.com/nodekeeper/nodekeeper/internal/aws/awsfake"
)

// EKS's REST-JSON: the operation is the method and path (DescribeCluster: GET /clusters/NAME),
// the output a JSON object, an error an X-Amzn-ErrorType header naming the code and a JSON
// body {"message": ...}.

type eksService struct{}

func (eksService) name() string { return EKS }

func (eksService) decode(r *http.Request) (string, any, error) {
	rest := strings.TrimPrefix(r.URL.EscapedPath(), "/clusters/")
	if r.Method != http.MethodGet || rest == "" || strings.Contains(rest, "/") {
		return "", nil, apiError("InvalidRequestException", "awsserver serves GET /clusters/NAME only, not %s %s", r.Method, r.URL.Path)
	}
	name, err := url.PathUnescape(rest)
	if err != nil {
		return "DescribeCluster", nil, apiError("InvalidParameterException", "cluster name: %v", err)
	}
	return "DescribeCluster", &eks.DescribeClusterInput{Name: &name}, nil
}

func (eksService) call(ctx context.Context, cloud *awsfake.Cloud, op string, in any) (any, error) {
	if in, ok := in.(*eks.DescribeClusterInput); ok {
		return cloud.DescribeCluster(ctx, in)
	}
	return nil, apiError("InvalidRequestException", "awsserver does not serve %s", op)
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
		Status: string(c.Status), PlatformVersion: c.PlatformVersion, Tags: c.Tags}
	if c.CreatedAt != nil {
		secs := float64(c.CreatedAt.UnixMilli()) / 1000
		j.CreatedAt = &secs
	}
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

func (eksService) writeOutput(w http.ResponseWriter, reqID, op string, out any) {
	o, ok := out.(*eks.DescribeClusterOutput)
	if !ok {
		eksService{}.writeError(w, reqID, "ServerException", fmt.Sprintf("awsserver: no encoder for %T of %s", out, op))
		return
	}
	writeJSON(w, "application/json", reqID, http.StatusOK, struct {
		Cluster *jsonCluster `json:"cluster,omitempty"`
	}{toJSONCluster(o.Cluster)})
}

// eksStatus is the HTTP status EKS answers an error code with.
func eksStatus(code string) int {
	switch code {
	case "AccessDeniedException", "MissingAuthenticationToken":
		return http.StatusForbidden
	case "ResourceNotFoundException":
		return http.StatusNotFound
	case "ThrottlingException", "TooManyRequestsException":
		return http.StatusTooManyRequests
	case "ServerException":
		return http.StatusInternalServerError
	case "ServiceUnavailableException":
		return http.StatusServiceUnavailable
	}
	return http.StatusBadRequest
}

func (eksService) writeError(w http.ResponseWriter, reqID, code, msg string) {
	w.Header().Set("X-Amzn-ErrorType", code)
	writeJSON(w, "application/json", reqID, eksStatus(code), map[string]string{"message": msg})
}
