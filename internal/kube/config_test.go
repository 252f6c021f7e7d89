package kube

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
)

func TestRateLimitZeroMeansNoLimit(t *testing.T) {
	tests := []struct {
		limit     RateLimit
		wantQPS   float32
		wantBurst int
	}{
		{RateLimit{}, -1, 0},
		{RateLimit{QPS: 0, Burst: 50}, -1, 0},
		{RateLimit{QPS: 100, Burst: 200}, 100, 200},
		{RateLimit{QPS: 5, Burst: 0}, 5, 1},
	}
	for _, tt := range tests {
		cfg := Configure(&rest.Config{Host: "https://127.0.0.1:1", QPS: 7, Burst: 9}, "gc", tt.limit)
		if cfg.QPS != tt.wantQPS || cfg.Burst != tt.wantBurst {
			t.Errorf("%+v: QPS %g burst %d, want %g and %d", tt.limit, cfg.QPS, cfg.Burst, tt.wantQPS, tt.wantBurst)
		}
		if !strings.HasPrefix(cfg.UserAgent, "nodekeeper/") || !strings.HasSuffix(cfg.UserAgent, " (gc)") {
			t.Errorf("user agent %q, want nodekeeper/<version> (gc)", cfg.UserAgent)
		}
		if IsProtobuf(cfg) || !IsProtobuf(Protobuf(cfg)) {
			t.Errorf("Configure must keep JSON and Protobuf must switch to protobuf")
		}
	}
}

func TestOptionsFlags(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
		want    RateLimit
	}{
		{args: nil, want: RateLimit{QPS: 100, Burst: 200}},
		{args: []string{"--qps", "0"}, want: RateLimit{QPS: 0, Burst: 200}},
		{args: []string{"--qps", "-1"}, wantErr: "must not be negative"},
		{args: []string{"--chunk-size", "0"}, wantErr: "--chunk-size must be positive"},
	}
	for _, tt := range tests {
		o := NewOptions(genericclioptions.NewConfigFlags(false), "gc", RateLimit{QPS: 100, Burst: 200})
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		o.AddFlags(fs)
		if err := fs.Parse(tt.args); err != nil {
			t.Fatal(err)
		}
		err := o.Validate()
		switch {
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%v: error %v, want %q", tt.args, err, tt.wantErr)
		case tt.wantErr == "" && err != nil:
			t.Errorf("%v: %v", tt.args, err)
		case tt.wantErr == "" && o.Limit != tt.want:
			t.Errorf("%v: limit %+v, want %+v", tt.args, o.Limit, tt.want)
		}
	}
}

// TestSideConfig: a side client keeps the command in its user agent, adds its role, and has its
// own limit, whatever the main client's; the main configuration is left as it was.
func TestSideConfig(t *testing.T) {
	base := &rest.Config{Host: "https://127.0.0.1:1"}
	tests := []struct {
		name   string
		cfg    *rest.Config
		wantUA string
	}{
		{"configured", Configure(base, "controller", RateLimit{}), strings.TrimSuffix(UserAgent("controller"), ")") + ", leader-election)"},
		{"bare", base, UserAgent("leader-election")},
		{"foreign agent", &rest.Config{Host: base.Host, UserAgent: "kubectl/v1.34 (linux)"}, UserAgent("leader-election")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := *tt.cfg
			side := SideConfig(tt.cfg, "leader-election", LeaderElection)
			if side.UserAgent != tt.wantUA || side.QPS != LeaderElection.QPS || side.Burst != LeaderElection.Burst {
				t.Errorf("user agent %q QPS %g burst %d, want %q %g %d", side.UserAgent, side.QPS, side.Burst, tt.wantUA, LeaderElection.QPS, LeaderElection.Burst)
			}
			if tt.cfg.QPS != before.QPS || tt.cfg.UserAgent != before.UserAgent {
				t.Errorf("the main config was changed")
			}
		})
	}
}
