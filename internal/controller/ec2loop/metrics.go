package ec2loop

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/nodekeeper/nodekeeper/internal/instances"
)

// metrics are the EC2 loop's, in the controller's registry (docs/metrics.md is the contract with
// the dashboard and the alert). The gauges keep the last successful scan's values: a failed scan
// says nothing new about the instances, and nodekeeper_instance_scans_total shows the failure.
type metrics struct {
	withoutNode prometheus.Gauge
	oldest      prometheus.Gauge
	scans       *prometheus.CounterVec
	calls       prometheus.Counter
}

// ScanResults are the values of nodekeeper_instance_scans_total's result label.
var ScanResults = []string{ResultSuccess, instances.FailureDenied, instances.FailureThrottled, instances.FailureOther}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		withoutNode: prometheus.NewGauge(prometheus.GaugeOpts{Name: "nodekeeper_instances_without_node",
			Help: "Running EC2 instances tagged for the cluster that no Node stands for (by providerID, or by private DNS name before the providerID is set), launched longer ago than the register grace; as of the last successful EC2 scan (controller --aws)."}),
		oldest: prometheus.NewGauge(prometheus.GaugeOpts{Name: "nodekeeper_instances_without_node_oldest_seconds",
			Help: "How long the oldest of nodekeeper_instances_without_node has been running, in seconds (0 when there is none); as of the last successful EC2 scan."}),
		scans: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nodekeeper_instance_scans_total",
			Help: "EC2 scans by result: success, denied (IAM does not allow ec2:DescribeInstances), throttled (still throttled after the SDK's retries), error (any other failure, Node LIST included)."},
			[]string{"result"}),
		calls: prometheus.NewCounter(prometheus.CounterOpts{Name: "nodekeeper_instance_scan_calls_total",
			Help: "DescribeInstances calls (pages) the EC2 scans made."}),
	}
	for _, c := range []prometheus.Collector{m.withoutNode, m.oldest, m.scans, m.calls} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	// Every series exists from the start, so rates and alerts see 0 rather than nothing.
	for _, r := range ScanResults {
		m.scans.WithLabelValues(r)
	}
	return m, nil
}
