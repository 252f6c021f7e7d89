package deploytest

import (
	"strings"

	"github.com/nodekeeper/nodekeeper/internal/lease"
)

// The contract between the manifests and the image's nodekeeper-controller, whose flags are
// `nodekeeper controller`'s (internal/controller/command).
// docs/metrics.md documents the same lists for operators; TestDocsCoverContract keeps them aligned.

// controllerFlags are the flags the manifests may pass to nodekeeper-controller.
var controllerFlags = map[string]bool{
	"grace-period":                   true,
	"dry-run":                        true,
	"qps":                            true,
	"burst":                          true,
	"workers":                        true,
	"leader-elect":                   true,
	"leader-election-namespace":      true,
	"leader-election-id":             true,
	"leader-election-lease-duration": true,
	"leader-election-renew-deadline": true,
	"leader-election-retry-period":   true,
	"metrics-bind-address":           true,
	"metrics-secure":                 true,
	"metrics-cert-dir":               true,
	"health-probe-bind-address":      true,
	"aws":                            true,
	"eks-cluster":                    true,
	"region":                         true,
	"aws-interval":                   true,
	"register-grace":                 true,
	"checks":                         true,
	"checks-interval":                true,
	"checks-headroom-alert":          true,
	"checks-kubelet-config":          true,
	"v":                              true,
	"logging-format":                 true,
}

type metricKind string

const (
	gauge     metricKind = "gauge"
	counter   metricKind = "counter"
	histogram metricKind = "histogram"
)

// metricSpec is one metric of the contract: its type and its labels, each with the values it may
// take (nil: any value).
type metricSpec struct {
	kind   metricKind
	labels map[string][]string
	// optIn is the flag without which the controller does not export the metric at all.
	optIn string
}

func leaseClasses() []string {
	var out []string
	for _, c := range lease.Classes() {
		out = append(out, string(c))
	}
	return out
}

// writeResults are the outcomes of a delete or an adoption: done, only decided (dry-run), refused
// by the API server because the lease changed since the decision (UID/resourceVersion
// precondition), or failed.
var deletionResults = []string{"deleted", "dry_run", "precondition_failed", "error"}
var adoptionResults = []string{"adopted", "dry_run", "precondition_failed", "error"}

var metricsContract = map[string]metricSpec{
	"nodekeeper_leases":                    {kind: gauge, labels: map[string][]string{"class": leaseClasses()}},
	"nodekeeper_lease_deletions_total":     {kind: counter, labels: map[string][]string{"result": deletionResults}},
	"nodekeeper_lease_adoptions_total":     {kind: counter, labels: map[string][]string{"result": adoptionResults}},
	"nodekeeper_zombie_kubelets":           {kind: gauge},
	"nodekeeper_errors_total":              {kind: counter, labels: map[string][]string{"reason": nil}},
	"nodekeeper_decision_duration_seconds": {kind: histogram},
	"nodekeeper_is_leader":                 {kind: gauge},

	// The EC2 loop's (internal/controller/ec2loop), with --aws only.
	"nodekeeper_instances_without_node":                {kind: gauge, optIn: "aws"},
	"nodekeeper_instances_without_node_oldest_seconds": {kind: gauge, optIn: "aws"},
	"nodekeeper_instance_scans_total":                  {kind: counter, optIn: "aws", labels: map[string][]string{"result": scanResults}},
	"nodekeeper_instance_scan_calls_total":             {kind: counter, optIn: "aws"},

	// The check loop's (internal/controller/checks), with --checks only. No label names a node,
	// pod or instance: code is one of the rules doctor knows, nodegroup one of the cluster's
	// node groups.
	"nodekeeper_findings":                         {kind: gauge, optIn: "checks", labels: map[string][]string{"code": nil, "severity": {"skipped", "info", "warning", "error"}}},
	"nodekeeper_pods_stuck":                       {kind: gauge, optIn: "checks", labels: map[string][]string{"cause": stuckCauses}},
	"nodekeeper_scaleup_headroom_nodes":           {kind: gauge, optIn: "checks", labels: map[string][]string{"nodegroup": nil, "limit": planLimits}},
	"nodekeeper_scaleup_headroom_threshold_nodes": {kind: gauge, optIn: "checks"},
	"nodekeeper_check_runs_total":                 {kind: counter, optIn: "checks", labels: map[string][]string{"result": {"success", "partial", "error"}}},
	"nodekeeper_check_duration_seconds":           {kind: histogram, optIn: "checks"},
}

// stuckCauses are the causes of stuck pods measured on their node (doctor's NK743-NK747), and
// unmeasured; planLimits are plan's limits.
var (
	stuckCauses = []string{"pool-full", "subnet", "throttled", "ipamd-unreachable", "unknown", "unmeasured"}
	planLimits  = []string{"subnet-addresses", "pods-per-node", "ec2-api", "image-pulls", "apiserver-priority-level"}
)

// scanResults are the outcomes of an EC2 scan: compared, or failed because IAM denied it, AWS
// throttled it past the SDK's retries, or anything else.
var scanResults = []string{"success", "denied", "throttled", "error"}

// targetLabels are attached by Prometheus (prometheus-operator's ServiceMonitor relabelling) to
// every series of a target; expressions may match and group by them.
// cluster is the label a central Prometheus that scrapes many clusters attaches (external_labels,
// or the chart's metrics.serviceMonitor.relabelings); alerts and dashboard group by it.
var targetLabels = map[string]bool{
	"namespace": true, "pod": true, "instance": true, "job": true,
	"service": true, "container": true, "endpoint": true, "cluster": true,
}

// lookupSeries resolves a series name to its contract metric, accepting the _bucket, _sum and
// _count series of histograms. le is allowed on _bucket only.
func lookupSeries(series string) (base string, spec metricSpec, extraLabels map[string]bool, ok bool) {
	if s, found := metricsContract[series]; found && s.kind != histogram {
		return series, s, nil, true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		name, cut := strings.CutSuffix(series, suffix)
		if !cut {
			continue
		}
		if s, found := metricsContract[name]; found && s.kind == histogram {
			if suffix == "_bucket" {
				return name, s, map[string]bool{"le": true}, true
			}
			return name, s, nil, true
		}
	}
	return "", metricSpec{}, nil, false
}
