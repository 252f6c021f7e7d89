package controller

import (
	"context"
	"errors"
	"net"
	"net/url"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/nodekeeper/nodekeeper/internal/buildinfo"
	"github.com/nodekeeper/nodekeeper/internal/lease"
)

// metrics are the controller's Prometheus metrics. They live in their own registry (never the
// global default one) so that nothing else linked into the binary leaks into /metrics.
type metrics struct {
	registry      *prometheus.Registry
	deletions     *prometheus.CounterVec
	adoptions     *prometheus.CounterVec
	skips         *prometheus.CounterVec
	errors        *prometheus.CounterVec
	zombies       prometheus.Counter
	decisions     prometheus.Histogram
	leader        prometheus.Gauge
	synced        prometheus.Gauge
	apiWrites     prometheus.Counter
	apiReads      prometheus.Counter
	eventsDropped prometheus.Counter
	classifier    *classCollector
}

func newMetrics(reg *prometheus.Registry, c *Controller) *metrics {
	m := &metrics{
		registry: reg,
		deletions: counterVec("nodekeeper_lease_deletions_total",
			"Delete decisions for leaked leases by result: deleted, dry_run, precondition_failed (the lease changed or the live GET found its Node), error.",
			"result"),
		adoptions: counterVec("nodekeeper_lease_adoptions_total",
			"Adoptions of unowned leases by result: adopted, dry_run, precondition_failed (the lease changed or its Node is gone), error.",
			"result"),
		skips: counterVec("nodekeeper_lease_skips_total",
			"Deletes or adoptions a safety check stopped, by reason (precondition-failed, node-exists, node-missing, gone).",
			"reason"),
		errors: counterVec("nodekeeper_errors_total",
			"Errors by reason: the API status reason of a failed request (Forbidden, Timeout, ...) or list_watch for a failed cache list or watch.",
			"reason"),
		zombies: counter("nodekeeper_zombie_kubelets_detected_total",
			"Leases found renewed by a kubelet whose Node does not exist (counted once per lease)."),
		decisions: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "nodekeeper_decision_duration_seconds",
			Help:    "Time from taking a lease off the work queue to finishing its decision (classification, live Node GET, delete or patch).",
			Buckets: []float64{0.0001, 0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
		}),
		leader: gauge("nodekeeper_is_leader",
			"1 while this replica holds the leader lease and acts on leases, else 0."),
		synced: gauge("nodekeeper_cache_synced",
			"1 once the lease and Node caches have synced."),
		apiWrites: counter("nodekeeper_api_write_requests_total",
			"DELETE and PATCH requests sent for leases."),
		apiReads: counter("nodekeeper_api_node_gets_total",
			"Live Node GETs sent to confirm a decision."),
		eventsDropped: counter("nodekeeper_events_dropped_total",
			"Events not recorded because more were pending than the paced event queue holds (logs and metrics still have them)."),
		classifier: &classCollector{c: c,
			desc: prometheus.NewDesc("nodekeeper_leases",
				"Leases in kube-node-lease by class, classified at scrape time from the controller's cache.",
				[]string{"class"}, nil),
			zombies: prometheus.NewDesc("nodekeeper_zombie_kubelets",
				"Leases renewed within their duration by a kubelet whose Node does not exist (zombie leases that are not expired).",
				nil, nil),
		},
	}
	reg.MustRegister(m.deletions, m.adoptions, m.skips, m.errors, m.zombies, m.decisions,
		m.leader, m.synced, m.apiWrites, m.apiReads, m.eventsDropped, m.classifier, buildInfoGauge(),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(clientMetrics()...)
	// Every series exists from the start, so rates and alerts see 0 rather than nothing.
	for _, r := range []string{resultDeleted, resultDryRun, resultPrecondition, resultError} {
		m.deletions.WithLabelValues(r)
	}
	for _, r := range []string{resultAdopted, resultDryRun, resultPrecondition, resultError} {
		m.adoptions.WithLabelValues(r)
	}
	return m
}

// buildInfoGauge is nodekeeper_build_info: always 1, with the build as labels, so that dashboards
// can show which version each replica runs and join it onto other series.
func buildInfoGauge() prometheus.Collector {
	bi := buildinfo.Get()
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "nodekeeper_build_info",
		Help: "Always 1; the labels say which nodekeeper build this replica runs.",
	}, []string{"version", "commit", "goversion", "platform"})
	g.WithLabelValues(bi.Version, bi.Commit, bi.GoVersion, bi.Platform).Set(1)
	return g
}

// Values of the result label (docs/metrics.md is the contract with the dashboard and alerts).
const (
	resultDeleted      = "deleted"
	resultAdopted      = "adopted"
	resultDryRun       = "dry_run"
	resultPrecondition = "precondition_failed"
	resultError        = "error"
)

// classCollector computes the per-class gauge when scraped, from the informer caches and the
// controller's clock, so it is exact at scrape time on every replica (leader or not) and needs no
// bookkeeping that could drift from the cache.
type classCollector struct {
	c       *Controller
	desc    *prometheus.Desc
	zombies *prometheus.Desc
}

func (cc *classCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- cc.desc
	ch <- cc.zombies
}

func (cc *classCollector) Collect(ch chan<- prometheus.Metric) {
	counts, live := cc.c.classCounts()
	for _, class := range lease.Classes() {
		ch <- prometheus.MustNewConstMetric(cc.desc, prometheus.GaugeValue, float64(counts[class]), string(class))
	}
	ch <- prometheus.MustNewConstMetric(cc.zombies, prometheus.GaugeValue, float64(live))
}

// errorReason turns an API error into a short, bounded label value.
func errorReason(err error) string {
	if err == nil {
		return "none"
	}
	if r := apierrors.ReasonForError(err); r != "" {
		return string(r)
	}
	var ne net.Error
	var ue *url.Error
	switch {
	case errors.Is(err, context.Canceled):
		return "Canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "Timeout"
	case errors.As(err, &ne) && ne.Timeout():
		return "Timeout"
	case errors.As(err, &ue):
		return "ConnectionError"
	}
	return "Unknown"
}

// Constructors for the metrics above and in clientmetrics.go: a name, a help text, labels.

func counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

func counter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
}

func gauge(name, help string) prometheus.Gauge {
	return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
}

func gaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
}

func histogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
}
