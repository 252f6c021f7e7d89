package clusterread

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/nodekeeper/nodekeeper/internal/test/textcheck"
)

func TestParseMetrics(t *testing.T) {
	const exposition = `# HELP apiserver_flowcontrol_rejected_requests_total [BETA] Number of requests rejected by API Priority and Fairness subsystem
# TYPE apiserver_flowcontrol_rejected_requests_total counter
apiserver_flowcontrol_rejected_requests_total{flow_schema="noisy",priority_level="workload-low",reason="queue-full"} 42
apiserver_flowcontrol_rejected_requests_total{flow_schema="a \"quoted\" one\n",priority_level="catch-all",reason="time-out"} 1
# HELP apiserver_request_total unrelated
# TYPE apiserver_request_total counter
apiserver_request_total{verb="GET"} 1e6
# TYPE apiserver_flowcontrol_request_wait_duration_seconds histogram
apiserver_flowcontrol_request_wait_duration_seconds_bucket{priority_level="exempt",le="0.1"} 3
apiserver_flowcontrol_request_wait_duration_seconds_bucket{priority_level="exempt",le="+Inf"} 4
apiserver_flowcontrol_request_wait_duration_seconds_sum{priority_level="exempt"} 0.5
apiserver_flowcontrol_request_wait_duration_seconds_count{priority_level="exempt"} 4
apiserver_flowcontrol_current_inqueue_requests{priority_level="global-default"} 0`
	tests := []struct {
		name    string
		in      string
		want    []string
		wantErr string
	}{
		{name: "counters, escaped labels, histograms; other metrics dropped", in: exposition, want: []string{
			`apiserver_flowcontrol_current_inqueue_requests{priority_level=global-default} 0`,
			`apiserver_flowcontrol_rejected_requests_total{flow_schema=a "quoted" one` + "\n" + `,priority_level=catch-all,reason=time-out} 1`,
			`apiserver_flowcontrol_rejected_requests_total{flow_schema=noisy,priority_level=workload-low,reason=queue-full} 42`,
			`apiserver_flowcontrol_request_wait_duration_seconds_bucket{le=+Inf,priority_level=exempt} 4`,
			`apiserver_flowcontrol_request_wait_duration_seconds_bucket{le=0.1,priority_level=exempt} 3`,
			`apiserver_flowcontrol_request_wait_duration_seconds_count{priority_level=exempt} 4`,
			`apiserver_flowcontrol_request_wait_duration_seconds_sum{priority_level=exempt} 0.5`,
		}},
		{name: "no matching series", in: "# nothing\nother_metric 1\n", want: nil},
		{name: "malformed value", in: "apiserver_flowcontrol_x{a=\"b\"} notanumber\n", wantErr: "apiserver_flowcontrol_"},
		{name: "unterminated labels", in: "apiserver_flowcontrol_x{a=\"b 1\n", wantErr: "apiserver_flowcontrol_"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseMetrics([]byte(tt.in), "apiserver_flowcontrol_")
			if textcheck.WantError(t, err, tt.wantErr) {
				return
			}
			var lines []string
			for _, s := range got {
				var labels []string
				for k, v := range s.Labels {
					labels = append(labels, k+"="+v)
				}
				sort.Strings(labels)
				lines = append(lines, fmt.Sprintf("%s{%s} %g", s.Name, strings.Join(labels, ","), s.Value))
			}
			sort.Strings(lines)
			if strings.Join(lines, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("samples:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}
