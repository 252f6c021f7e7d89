package controller

import (
	"context"
	"net/url"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientmetrics "k8s.io/client-go/tools/metrics"
	"k8s.io/client-go/util/workqueue"
)

// client-go reports its REST requests (k8s.io/client-go/tools/metrics) and its work queues
// (workqueue.SetProvider) through process-wide hooks that it leaves unset. The controller sets
// both, once per process, to the collectors below, and registers those in its own registry under
// the names Kubernetes' own components use (rest_client_*, workqueue_*), so that the dashboards
// and alerts operators already run for kube-controller-manager work for nodekeeper unchanged.
// Being process-wide, they count every client and queue of the process: in a deployment that is
// the one controller.

var (
	requestBuckets = []float64{0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60}
	queueBuckets   = prometheus.ExponentialBuckets(1e-6, 10, 9) // 1 µs to 100 s

	restRequestDuration = histogramVec("rest_client_request_duration_seconds",
		"Latency of the controller's API requests (client-go), by verb and API server host.",
		requestBuckets, "verb", "host")
	restRateLimiterDuration = histogramVec("rest_client_rate_limiter_duration_seconds",
		"Time the controller's API requests waited for the client-side rate limit (--qps, --burst), by verb and host.",
		requestBuckets, "verb", "host")
	restRequests = counterVec("rest_client_requests_total",
		"The controller's API requests by HTTP status code (\"<error>\" when no response came), method and host.",
		"code", "method", "host")
	restRetries = counterVec("rest_client_request_retries_total",
		"API requests client-go retried (a Retry-After answer, for example 429), by code, method and host.",
		"code", "method", "host")

	queueDepth = gaugeVec("workqueue_depth",
		"Leases waiting in the work queue, ready to be processed.",
		"name")
	queueAdds = counterVec("workqueue_adds_total",
		"Leases added to the work queue.",
		"name")
	queueLatency = histogramVec("workqueue_queue_duration_seconds",
		"How long a lease waited in the work queue before a worker took it.",
		queueBuckets, "name")
	queueWorkDuration = histogramVec("workqueue_work_duration_seconds",
		"How long a worker took to process a lease.",
		queueBuckets, "name")
	queueUnfinished = gaugeVec("workqueue_unfinished_work_seconds",
		"Seconds of work in progress not yet finished; growing without bound means a stuck worker.",
		"name")
	queueLongestRunning = gaugeVec("workqueue_longest_running_processor_seconds",
		"How long the longest-running worker has been processing its lease.",
		"name")
	queueRetries = counterVec("workqueue_retries_total",
		"Leases re-queued with backoff (a failed request, or a safety check that saw newer data).",
		"name")

	hookClientMetrics sync.Once
)

// clientMetrics sets client-go's hooks (once per process) and returns the collectors to register.
func clientMetrics() []prometheus.Collector {
	hookClientMetrics.Do(func() {
		clientmetrics.Register(clientmetrics.RegisterOpts{
			RequestLatency:     latencyAdapter{restRequestDuration},
			RateLimiterLatency: latencyAdapter{restRateLimiterDuration},
			RequestResult:      resultAdapter{restRequests},
			RequestRetry:       retryAdapter{restRetries},
		})
		workqueue.SetProvider(queueMetricsProvider{})
	})
	return []prometheus.Collector{
		restRequestDuration, restRateLimiterDuration, restRequests, restRetries,
		queueDepth, queueAdds, queueLatency, queueWorkDuration, queueUnfinished, queueLongestRunning, queueRetries,
	}
}

// latencyAdapter records a client-go latency by verb and host (never the path: one series per
// object would be unbounded).
type latencyAdapter struct{ h *prometheus.HistogramVec }

func (a latencyAdapter) Observe(_ context.Context, verb string, u url.URL, latency time.Duration) {
	a.h.WithLabelValues(verb, u.Host).Observe(latency.Seconds())
}

type resultAdapter struct{ c *prometheus.CounterVec }

func (a resultAdapter) Increment(_ context.Context, code, method, host string) {
	a.c.WithLabelValues(code, method, host).Inc()
}

type retryAdapter struct{ c *prometheus.CounterVec }

func (a retryAdapter) IncrementRetry(_ context.Context, code, method, host string) {
	a.c.WithLabelValues(code, method, host).Inc()
}

// queueMetricsProvider gives each named work queue its series.
type queueMetricsProvider struct{}

func (queueMetricsProvider) NewDepthMetric(name string) workqueue.GaugeMetric {
	return queueDepth.WithLabelValues(name)
}

func (queueMetricsProvider) NewAddsMetric(name string) workqueue.CounterMetric {
	return queueAdds.WithLabelValues(name)
}

func (queueMetricsProvider) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return queueLatency.WithLabelValues(name)
}

func (queueMetricsProvider) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return queueWorkDuration.WithLabelValues(name)
}

func (queueMetricsProvider) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return queueUnfinished.WithLabelValues(name)
}

func (queueMetricsProvider) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return queueLongestRunning.WithLabelValues(name)
}

func (queueMetricsProvider) NewRetriesMetric(name string) workqueue.CounterMetric {
	return queueRetries.WithLabelValues(name)
}
