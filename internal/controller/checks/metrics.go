package checks

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the check loop's, in the controller's registry (docs/metrics.md is the contract
// with the dashboard and the alerts). No label names a node, pod or instance: the series count
// depends on the rules, causes and node groups, never on the cluster's size. The gauges hold the
// last run's values; a run that fails leaves them, and nodekeeper_check_runs_total shows it.
type metrics struct {
	findings *prometheus.GaugeVec
	stuck    *prometheus.GaugeVec
	headroom *prometheus.GaugeVec
	// threshold is --checks-headroom-alert, for the alert NodekeeperScaleUpHeadroomLow.
	threshold prometheus.Gauge
	runs      *prometheus.CounterVec
	duration  prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		findings: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "nodekeeper_findings",
			Help: "Findings of doctor's checks in the last check run (controller --checks), by rule code and severity (info, warning, error; skipped: the check could not run, usually for a permission)."},
			[]string{"code", "severity"}),
		stuck: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "nodekeeper_pods_stuck",
			Help: "Pods stuck in ContainerCreating in the last check run, by the cause measured on their node from its aws-node pod and ipamd's figures: pool-full (NK743), subnet (NK744), throttled (NK745), ipamd-unreachable (NK746), unknown (NK747), unmeasured (no figures for the node)."},
			[]string{"cause"}),
		headroom: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "nodekeeper_scaleup_headroom_nodes",
			Help: "New nodes a node group can take, alone and at today's settings, before the limit breaks, as `nodekeeper plan` computes it in the last check run; no series for a limit with no bound within the nodes plan simulates, or unknown (subnets without --aws)."},
			[]string{"nodegroup", "limit"}),
		threshold: prometheus.NewGauge(prometheus.GaugeOpts{Name: "nodekeeper_scaleup_headroom_threshold_nodes",
			Help: "The headroom below which the alert NodekeeperScaleUpHeadroomLow fires (--checks-headroom-alert), so that the alert rule is one file for every installation."}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nodekeeper_check_runs_total",
			Help: "Check runs by result: success, partial (doctor's checks ran, the headroom could not be computed), error (the run failed; the gauges keep the last values)."},
			[]string{"result"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "nodekeeper_check_duration_seconds",
			Help:    "How long a check run took, reads included.",
			Buckets: []float64{1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600}}),
	}
	for _, c := range []prometheus.Collector{m.findings, m.stuck, m.headroom, m.threshold, m.runs, m.duration} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	// Every result and cause exists from the start, so rates and alerts see 0 rather than nothing.
	for _, r := range RunResults {
		m.runs.WithLabelValues(r)
	}
	return m, nil
}

func (m *metrics) setFindings(counts map[findingKey]int) {
	m.findings.Reset()
	for k, n := range counts {
		m.findings.WithLabelValues(k.Code, k.Severity).Set(float64(n))
	}
}

func (m *metrics) setStuck(counts map[string]int) {
	for _, c := range Causes {
		m.stuck.WithLabelValues(c).Set(float64(counts[c]))
	}
}

func (m *metrics) setHeadroom(hs []Headroom) {
	m.headroom.Reset()
	for _, h := range hs {
		m.headroom.WithLabelValues(h.NodeGroup, h.Limit).Set(float64(h.Nodes))
	}
}

// clear drops what only the leader knows.
func (m *metrics) clear() {
	m.findings.Reset()
	m.stuck.Reset()
	m.headroom.Reset()
}
