package doctor

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/nodekeeper/nodekeeper/internal/ipamdmetrics"
)

// ipamdFigures are what a simulated ipamd publishes.
type ipamdFigures struct {
	total, assigned, maxIPs, enis, maxENIs, noAddress int
	// ec2Errors by {api, error code}; ipamdErrors by fn.
	ec2Errors   map[[2]string]int
	ipamdErrors map[string]int
	// starting leaves the pool gauges out, as before ipamd's first reconcile.
	starting bool
}

// ipamdMetricsBody is a real-format ipamd /metrics answer: the metrics are declared as ipamd
// declares them (names, help texts, label names and types quoted from
// utils/prometheusmetrics/prometheusmetrics.go of github.com/aws/amazon-vpc-cni-k8s, identical in
// v1.20.5, v1.21.2, v1.22.4 and v1.23.0; the error codes are the EC2 codes ipamd passes through
// awsAPIErrInc in pkg/awsutils/awsutils.go, the fn values ipamdErrInc's in pkg/ipamd/ipamd.go),
// registered in a Prometheus registry and written by the client library's text encoder, as
// promhttp writes them for aws-node.
func ipamdMetricsBody(t testing.TB, f ipamdFigures) []byte {
	t.Helper()
	reg := prometheus.NewRegistry()
	gauge := func(name, help string, v int) {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
		g.Set(float64(v))
		reg.MustRegister(g)
	}
	if !f.starting {
		gauge("awscni_total_ip_addresses", "The total number of IP addresses", f.total)
		gauge("awscni_assigned_ip_addresses", "The number of IP addresses assigned to pods", f.assigned)
		gauge("awscni_ip_max", "The maximum number of IP addresses that can be allocated to the instance", f.maxIPs)
		gauge("awscni_eni_allocated", "The number of ENIs allocated", f.enis)
		gauge("awscni_eni_max", "The maximum number of ENIs that can be attached to the instance, accounting for unmanaged ENIs", f.maxENIs)
	}
	noAddr := prometheus.NewCounter(prometheus.CounterOpts{Name: "awscni_no_available_ip_addresses", Help: "The number of pod IP assignments that fail due to no available IP addresses"})
	noAddr.Add(float64(f.noAddress))
	apiErr := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "awscni_aws_api_error_count", Help: "The number of times AWS API returns an error"}, []string{"api", "error"})
	for k, v := range f.ec2Errors {
		apiErr.WithLabelValues(k[0], k[1]).Add(float64(v))
	}
	ipamdErr := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "awscni_ipamd_error_count", Help: "The number of errors encountered in ipamd"}, []string{"fn"})
	for k, v := range f.ipamdErrors {
		ipamdErr.WithLabelValues(k).Add(float64(v))
	}
	// Series doctor does not read, as ipamd publishes them beside the others.
	addIP := prometheus.NewCounter(prometheus.CounterOpts{Name: "awscni_add_ip_req_count", Help: "The number of add IP address requests"})
	addIP.Add(float64(f.assigned + f.noAddress))
	perENI := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "awscni_assigned_ip_per_eni", Help: "The number of allocated ips partitioned by eni"}, []string{"eni"})
	perENI.WithLabelValues("eni-0a1b2c3d4e5f60718").Set(float64(f.assigned))
	latency := prometheus.NewSummaryVec(prometheus.SummaryOpts{Name: "awscni_aws_api_latency_ms", Help: "AWS API call latency in ms"}, []string{"api", "error", "status"})
	latency.WithLabelValues("AssignPrivateIpAddresses", "false", "200").Observe(212)
	reg.MustRegister(noAddr, apiErr, ipamdErr, addIP, perENI, latency, prometheus.NewGoCollector())
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

// healthyIPAMD is an m5.large's ipamd with the default warm ENI: 2 ENIs of 9 pod addresses, 5
// assigned, room to grow to 27 on 3 ENIs.
var healthyIPAMD = ipamdFigures{total: 18, assigned: 5, maxIPs: 27, enis: 2, maxENIs: 3}

func TestParseIPAMDMetrics(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want string // PoolText, then the counts
		err  bool
	}{
		{name: "healthy", in: ipamdMetricsBody(t, healthyIPAMD),
			want: "address pool 18 (5 assigned, 13 warm) of at most 27; ENIs 2 of at most 3 | ec2:  | ipamd:  | no-address 0"},
		{name: "errors summed over APIs by code", in: ipamdMetricsBody(t, ipamdFigures{total: 27, assigned: 27, maxIPs: 27, enis: 3, maxENIs: 3, noAddress: 4,
			ec2Errors: map[[2]string]int{
				{"AssignPrivateIpAddresses", "RequestLimitExceeded"}: 7, {"CreateNetworkInterface", "RequestLimitExceeded"}: 2,
				{"CreateNetworkInterface", "InsufficientFreeAddressesInSubnet"}: 3,
			},
			ipamdErrors: map[string]int{"increaseIPPoolAllocIPAddressesFailed": 5}}),
			want: "address pool 27 (27 assigned, 0 warm) of at most 27; ENIs 3 of at most 3 | ec2: RequestLimitExceeded 9, InsufficientFreeAddressesInSubnet 3 | ipamd: increaseIPPoolAllocIPAddressesFailed 5 | no-address 4"},
		{name: "starting", in: ipamdMetricsBody(t, ipamdFigures{starting: true}),
			want: "ipamd has not published its address pool yet | ec2:  | ipamd:  | no-address 0"},
		{name: "not metrics", in: []byte("<html><body>502 Bad Gateway</body></html>\n"), err: true},
		{name: "other metrics only", in: []byte("# TYPE go_goroutines gauge\ngo_goroutines 12\n"), err: true},
		{name: "malformed awscni line", in: []byte("awscni_ip_max{ 27\n"), err: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ParseIPAMDMetrics(context.Background(), tc.in)
			if tc.err {
				if err == nil {
					t.Fatalf("no error for %q", tc.in)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := m.PoolText() + " | ec2: " + countsText(m.EC2Errors) + " | ipamd: " + countsText(m.IPAMDErrors) + " | no-address " + strconv.Itoa(m.NoAddress)
			if got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestParseIPAMDMetricsBoundsLabels(t *testing.T) {
	f := ipamdFigures{ec2Errors: map[[2]string]int{}}
	for i := 0; i < 3*ipamdmetrics.MaxKeys; i++ {
		f.ec2Errors[[2]string{"AssignPrivateIpAddresses", "Code" + strconv.Itoa(i)}] = 1
	}
	m, err := ParseIPAMDMetrics(context.Background(), ipamdMetricsBody(t, f))
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, v := range m.EC2Errors {
		total += v
	}
	if len(m.EC2Errors) > ipamdmetrics.MaxKeys+1 || total != 3*ipamdmetrics.MaxKeys || m.EC2Errors["other"] == 0 {
		t.Fatalf("kept %d codes (sum %d, other %d), want at most %d plus other and every count", len(m.EC2Errors), total, m.EC2Errors["other"], ipamdmetrics.MaxKeys)
	}
}

// TestParseIPAMDMetricsHostile (issue 31 item 5): hostile numbers are refused with the reason
// NK741 gives, not summed as int(value) (NaN printed "address pool -9223372036854775808", two
// 9e18 subnet errors overflowed and flipped the cause to throttling), and identical series count
// once (they counted three times).
func TestParseIPAMDMetricsHostile(t *testing.T) {
	body := string(ipamdMetricsBody(t, healthyIPAMD))
	subnet := `awscni_aws_api_error_count{api="CreateNetworkInterface",error="InsufficientFreeAddressesInSubnet"} `
	for _, tc := range []struct{ name, extra, err string }{
		{"NaN", "awscni_total_ip_addresses NaN\n", "awscni_total_ip_addresses is NaN: not a count"},
		{"Inf", "awscni_ip_max +Inf\n", "awscni_ip_max is +Inf: not a count"},
		{"negative", "awscni_no_available_ip_addresses -3\n", "is negative"},
		{"two 9e18", subnet + "9e18\n" + strings.Replace(subnet, "CreateNetworkInterface", "AssignPrivateIpAddresses", 1) + "9e18\n", "beyond any count ipamd keeps"},
	} {
		if _, err := ParseIPAMDMetrics(context.Background(), []byte(body+tc.extra)); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
		}
	}
	m, err := ParseIPAMDMetrics(context.Background(), []byte(body+subnet+"3\n"+subnet+"3\n"+subnet+"3\n"))
	if err != nil {
		t.Fatal(err)
	}
	if n := m.EC2Errors["InsufficientFreeAddressesInSubnet"]; n != 3 {
		t.Errorf("a series repeated three times counted %d, want 3 (once)", n)
	}
}
