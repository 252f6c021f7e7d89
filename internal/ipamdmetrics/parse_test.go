package ipamdmetrics

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"
)

// ipamdAnswer is an m5.large's ipamd answer as promhttp writes it (the HELP and TYPE lines and
// label names of utils/prometheusmetrics/prometheusmetrics.go in amazon-vpc-cni-k8s v1.23.0),
// with a Go runtime series beside it and extra lines appended.
func ipamdAnswer(extra ...string) []byte {
	s := `# HELP awscni_assigned_ip_addresses The number of IP addresses assigned to pods
# TYPE awscni_assigned_ip_addresses gauge
awscni_assigned_ip_addresses 5
# HELP awscni_aws_api_error_count The number of times AWS API returns an error
# TYPE awscni_aws_api_error_count counter
awscni_aws_api_error_count{api="AssignPrivateIpAddresses",error="RequestLimitExceeded"} 7
awscni_aws_api_error_count{api="CreateNetworkInterface",error="RequestLimitExceeded"} 2
# HELP awscni_aws_api_latency_ms AWS API call latency in ms
# TYPE awscni_aws_api_latency_ms summary
awscni_aws_api_latency_ms{api="AssignPrivateIpAddresses",error="false",status="200",quantile="0.5"} NaN
awscni_aws_api_latency_ms_sum{api="AssignPrivateIpAddresses",error="false",status="200"} 212
awscni_aws_api_latency_ms_count{api="AssignPrivateIpAddresses",error="false",status="200"} 1
# HELP awscni_eni_allocated The number of ENIs allocated
# TYPE awscni_eni_allocated gauge
awscni_eni_allocated 2
# HELP awscni_eni_max The maximum number of ENIs that can be attached to the instance, accounting for unmanaged ENIs
# TYPE awscni_eni_max gauge
awscni_eni_max 3
# HELP awscni_ip_max The maximum number of IP addresses that can be allocated to the instance
# TYPE awscni_ip_max gauge
awscni_ip_max 27
# HELP awscni_ipamd_error_count The number of errors encountered in ipamd
# TYPE awscni_ipamd_error_count counter
awscni_ipamd_error_count{fn="increaseIPPoolAllocIPAddressesFailed"} 5
# HELP awscni_no_available_ip_addresses The number of pod IP assignments that fail due to no available IP addresses
# TYPE awscni_no_available_ip_addresses counter
awscni_no_available_ip_addresses 4
# HELP awscni_total_ip_addresses The total number of IP addresses
# TYPE awscni_total_ip_addresses gauge
awscni_total_ip_addresses 18
# HELP go_goroutines Number of goroutines that currently exist.
# TYPE go_goroutines gauge
go_goroutines 42
`
	return []byte(s + strings.Join(extra, ""))
}

// text is the figures in one line, the counts sorted by key.
func text(f *Figures) string {
	counts := func(m map[string]int) string {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var b strings.Builder
		for _, k := range keys {
			fmt.Fprintf(&b, " %s=%d", k, m[k])
		}
		return b.String()
	}
	return fmt.Sprintf("pool=%v total=%d assigned=%d max=%d enis=%d/%d noaddr=%d ec2:%s ipamd:%s",
		f.HasPool, f.TotalIPs, f.AssignedIPs, f.MaxIPs, f.ENIs, f.MaxENIs, f.NoAddress, counts(f.EC2Errors), counts(f.IPAMDErrors))
}

func TestParse(t *testing.T) {
	const base = "pool=true total=18 assigned=5 max=27 enis=2/3 noaddr=4 ec2: RequestLimitExceeded=9 ipamd: increaseIPPoolAllocIPAddressesFailed=5"
	tests := []struct {
		name string
		in   []byte
		want string // the figures, or the error's text
	}{
		{name: "ipamd's answer", in: ipamdAnswer(), want: base},
		{name: "labels in another order, escapes, timestamp, spaces",
			in:   ipamdAnswer("awscni_aws_api_error_count { error = \"Quoted\\\"\\\\\\n\" , api=\"X\", } 3 1700000000000\n"),
			want: "pool=true total=18 assigned=5 max=27 enis=2/3 noaddr=4 ec2: Quoted\"\\\n=3 RequestLimitExceeded=9 ipamd: increaseIPPoolAllocIPAddressesFailed=5"},
		// Item 5 of issue 31: identical series counted once (they were counted three times).
		{name: "a repeated series counts once",
			in: ipamdAnswer(
				`awscni_aws_api_error_count{api="CreateNetworkInterface",error="InsufficientFreeAddressesInSubnet"} 3`+"\n",
				`awscni_aws_api_error_count{error="InsufficientFreeAddressesInSubnet",api="CreateNetworkInterface"} 3`+"\n",
				`awscni_aws_api_error_count{api="CreateNetworkInterface",error="InsufficientFreeAddressesInSubnet"} 3`+"\n",
				"awscni_no_available_ip_addresses 4\n"),
			want: "pool=true total=18 assigned=5 max=27 enis=2/3 noaddr=4 ec2: InsufficientFreeAddressesInSubnet=3 RequestLimitExceeded=9 ipamd: increaseIPPoolAllocIPAddressesFailed=5"},
		{name: "starting: no pool gauges", in: []byte("awscni_no_available_ip_addresses 0\n"),
			want: "pool=false total=0 assigned=0 max=0 enis=0/0 noaddr=0 ec2: ipamd:"},
		{name: "a NaN among series not read is fine", in: ipamdAnswer("awscni_aws_api_latency_ms{quantile=\"0.9\"} NaN\n"), want: base},
		{name: "not ipamd's", in: []byte("<html><body>502 Bad Gateway</body></html>\n"), want: ErrNotIPAMD.Error()},
		{name: "other metrics only", in: []byte("# TYPE go_goroutines gauge\ngo_goroutines 12\n"), want: ErrNotIPAMD.Error()},
		{name: "malformed", in: []byte("awscni_ip_max{ 27\n"), want: "line 1: awscni_ip_max: malformed labels (a label name expected)"},
		{name: "no value", in: []byte("awscni_ip_max\n"), want: "line 1: awscni_ip_max: a malformed series (want name{labels} value)"},
		{name: "value not a number", in: []byte("awscni_ip_max 2x\n"), want: "line 1: awscni_ip_max: the value is not a number"},
		{name: "unterminated value", in: []byte(`awscni_ip_max{a="b} 1` + "\n"), want: "line 1: awscni_ip_max: malformed labels (an unterminated value)"},
		{name: "repeated label", in: []byte(`awscni_ip_max{a="b",a="c"} 1` + "\n"), want: "line 1: awscni_ip_max: malformed labels (label a repeated)"},
		// Item 5 of issue 31: hostile values are refused, not summed as int(value).
		{name: "NaN", in: ipamdAnswer("awscni_total_ip_addresses NaN\n"), want: "line 34: awscni_total_ip_addresses is NaN: not a count"},
		{name: "+Inf", in: ipamdAnswer("awscni_ip_max +Inf\n"), want: "line 34: awscni_ip_max is +Inf: not a count"},
		{name: "negative", in: ipamdAnswer("awscni_no_available_ip_addresses -1\n"), want: "line 34: awscni_no_available_ip_addresses is negative (-1): not a count"},
		{name: "two 9e18 subnet errors", in: ipamdAnswer(
			`awscni_aws_api_error_count{api="CreateNetworkInterface",error="InsufficientFreeAddressesInSubnet"} 9e18`+"\n",
			`awscni_aws_api_error_count{api="AssignPrivateIpAddresses",error="InsufficientFreeAddressesInSubnet"} 9e18`+"\n"),
			want: "line 34: awscni_aws_api_error_count is 9e+18, beyond any count ipamd keeps (1e+12)"},
		// Item 1 of issue 31: the CPU bounds.
		{name: "a line too long", in: ipamdAnswer("# HELP x " + strings.Repeat("x", MaxLineBytes) + "\n"), want: "line 34 is longer than 4096 bytes"},
		{name: "too many labels", in: ipamdAnswer(manyLabels(MaxLabelsPerSeries+1) + " 1\n"), want: "line 34: awscni_x: more than 16 labels on one series"},
		{name: "as many labels as allowed", in: ipamdAnswer(manyLabels(MaxLabelsPerSeries) + " 1\n"), want: base},
		{name: "too many series", in: distinctSeries(MaxSeries + 1), want: "more than 4096 awscni_ series"},
		{name: "as many series as allowed", in: distinctSeries(MaxSeries), want: "pool=false total=0 assigned=0 max=0 enis=0/0 noaddr=0 ec2: ipamd:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse(context.Background(), tc.in)
			got := ""
			if err != nil {
				got = err.Error()
			} else {
				got = text(f)
			}
			if got != tc.want {
				t.Fatalf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// manyLabels is one awscni_x series with n labels.
func manyLabels(n int) string {
	var b strings.Builder
	b.WriteString("awscni_x{")
	for i := range n {
		fmt.Fprintf(&b, "l%d=\"v\",", i)
	}
	b.WriteString("}")
	return b.String()
}

// distinctSeries is n distinct awscni_ series of a metric not read.
func distinctSeries(n int) []byte {
	var b bytes.Buffer
	for i := range n {
		fmt.Fprintf(&b, "awscni_assigned_ip_per_cidr{cidr=\"10.%d.%d.0/28\"} 1\n", i/256, i%256)
	}
	return b.Bytes()
}

func TestParseKeepsMaxKeys(t *testing.T) {
	var extra []string
	for i := range 3 * MaxKeys {
		extra = append(extra, fmt.Sprintf("awscni_ipamd_error_count{fn=\"f%d\"} 1\n", i))
	}
	f, err := Parse(context.Background(), ipamdAnswer(extra...))
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, v := range f.IPAMDErrors {
		total += v
	}
	if len(f.IPAMDErrors) != MaxKeys+1 || total != 3*MaxKeys+5 || f.IPAMDErrors[Other] == 0 {
		t.Fatalf("kept %d functions (sum %d, other %d), want %d plus other and every count", len(f.IPAMDErrors), total, f.IPAMDErrors[Other], MaxKeys)
	}
}

func TestParseStopsOnTheContext(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	stop := errors.New("interrupt")
	cancel(stop)
	_, err := Parse(ctx, distinctSeries(MaxSeries))
	if !errors.Is(err, stop) || !strings.Contains(err.Error(), "stopped at line 256") {
		t.Fatalf("err = %v, want the context's cause at line 256", err)
	}
	if _, err := Parse(ctx, ipamdAnswer()); err != nil {
		t.Fatalf("a short answer is read before the first look at the context: %v", err)
	}
}

func TestSaturatingAdd(t *testing.T) {
	for _, tc := range []struct{ a, b, want int }{
		{1, 2, 3}, {math.MaxInt, 1, math.MaxInt}, {math.MaxInt - 1, 1, math.MaxInt}, {math.MaxInt / 2, math.MaxInt/2 + 5, math.MaxInt},
	} {
		if got := SaturatingAdd(tc.a, tc.b); got != tc.want {
			t.Errorf("SaturatingAdd(%d, %d) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

// hostileAnswers are the inputs of issue 31's item 1: one series with 20,000 labels (151 s of CPU
// in prometheus/common's parser) and 2 MiB of distinct series (298 MB over 4 nodes).
func hostileAnswers() map[string][]byte {
	var labels strings.Builder
	labels.WriteString("awscni_aws_api_error_count{")
	for i := range 20000 {
		fmt.Fprintf(&labels, "l%d=\"v\",", i)
	}
	labels.WriteString("} 1\n")
	var series bytes.Buffer
	for i := 0; series.Len() < 2<<20; i++ {
		fmt.Fprintf(&series, "awscni_aws_api_error_count{api=\"A\",error=\"E%d\"} 1\n", i)
	}
	return map[string][]byte{"20k labels": []byte(labels.String()), "2 MiB distinct series": series.Bytes()}
}

func TestParseRefusesHostileAnswers(t *testing.T) {
	for name, in := range hostileAnswers() {
		if _, err := Parse(context.Background(), in); err == nil {
			t.Errorf("%s: accepted", name)
		} else {
			t.Logf("%s (%d bytes): %v", name, len(in), err)
		}
	}
}

// BenchmarkParseHostile times the refusal of the hostile answers (issue 31 item 1), and an
// ordinary answer for comparison.
func BenchmarkParseHostile(b *testing.B) {
	cases := hostileAnswers()
	cases["ipamd's answer"] = ipamdAnswer()
	for _, name := range []string{"20k labels", "2 MiB distinct series", "ipamd's answer"} {
		in := cases[name]
		b.Run(strings.ReplaceAll(name, " ", "_"), func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			for b.Loop() {
				_, _ = Parse(context.Background(), in)
			}
		})
	}
}

// FuzzParse: any answer is read within the bounds, without a panic, and figures read are counts.
func FuzzParse(f *testing.F) {
	f.Add(ipamdAnswer())
	f.Add([]byte("awscni_ip_max{ 27\n"))
	f.Add([]byte(`awscni_aws_api_error_count{error="a\"b\\c\nd",api="X"} 3 17` + "\n"))
	f.Add([]byte("awscni_total_ip_addresses NaN\nawscni_ip_max -Inf\n"))
	f.Add([]byte(manyLabels(MaxLabelsPerSeries+1) + " 1\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := Parse(context.Background(), in)
		if err != nil {
			return
		}
		for _, v := range []int{got.TotalIPs, got.AssignedIPs, got.MaxIPs, got.ENIs, got.MaxENIs, got.NoAddress} {
			if v < 0 || v > MaxValue {
				t.Fatalf("figure %d out of range in %+v", v, got)
			}
		}
		for _, m := range []map[string]int{got.EC2Errors, got.IPAMDErrors} {
			if len(m) > MaxKeys+1 {
				t.Fatalf("%d keys kept", len(m))
			}
			for k, v := range m {
				if v <= 0 || utf8.RuneCountInString(k) > maxKeyRunes && k != Other {
					t.Fatalf("kept %q=%d", k, v)
				}
			}
		}
	})
}
