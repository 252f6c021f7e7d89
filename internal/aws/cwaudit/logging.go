package cwaudit

import (
	"context"
	"fmt"
	"strings"

	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"

	"github.com/nodekeeper/nodekeeper/internal/aws/allclients"
)

// An EKS cluster writes its audit log to CloudWatch Logs only while the control plane log type
// "audit" is enabled (EKS User Guide, "Send control plane logs to CloudWatch Logs";
// DescribeCluster's logging.clusterLogging). With it off the log group holds at most what was
// logged while it was on, and an empty read would look like a quiet cluster: the state is checked
// before reading, and said.

// LoggingState is what DescribeCluster says of a cluster's audit logging.
type LoggingState struct {
	Cluster string
	// Enabled: a clusterLogging entry with enabled true lists the type audit.
	Enabled bool
}

// AuditLogging asks EKS whether the cluster sends its audit log to CloudWatch Logs.
func AuditLogging(ctx context.Context, api allclients.EKSAPI, cluster string) (LoggingState, error) {
	st := LoggingState{Cluster: cluster}
	c, err := allclients.DescribeCluster(ctx, api, cluster)
	if err != nil {
		return st, err
	}
	st.Enabled = auditEnabled(c.Logging)
	return st, nil
}

func auditEnabled(l *ekstypes.Logging) bool {
	if l == nil {
		return false
	}
	for _, s := range l.ClusterLogging {
		if s.Enabled == nil || !*s.Enabled {
			continue
		}
		for _, t := range s.Types {
			if t == ekstypes.LogTypeAudit {
				return true
			}
		}
	}
	return false
}

// Off says that audit logging is off and how to turn it on.
func (s LoggingState) Off() string {
	return fmt.Sprintf("audit logging is OFF for the EKS cluster %s (DescribeCluster: no enabled \"audit\" type in logging.clusterLogging): "+
		"the log group holds only what was logged while it was on, so a quiet report may mean no log; turn it on with "+
		`aws eks update-cluster-config --name %s --logging '{"clusterLogging":[{"types":["audit"],"enabled":true}]}'`, s.Cluster, s.Cluster)
}

// ClusterOfLogGroup is the cluster name of an EKS control plane log group
// (/aws/eks/NAME/cluster), or "".
func ClusterOfLogGroup(group string) string {
	rest, ok := strings.CutPrefix(group, "/aws/eks/")
	if !ok {
		return ""
	}
	name, ok := strings.CutSuffix(rest, "/cluster")
	if !ok || name == "" || strings.Contains(name, "/") {
		return ""
	}
	return name
}
