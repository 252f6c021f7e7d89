package controller

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nodekeeper/nodekeeper/internal/buildinfo"
)

// TestBuildInfoMetric: the controller's registry serves nodekeeper_build_info = 1 with the same
// version, commit, Go version and platform that `nodekeeper version` prints.
func TestBuildInfoMetric(t *testing.T) {
	reg := prometheus.NewRegistry()
	newMetrics(reg, &Controller{})
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	bi := buildinfo.Get()
	want := map[string]string{"version": bi.Version, "commit": bi.Commit, "goversion": bi.GoVersion, "platform": bi.Platform}
	for _, mf := range families {
		if mf.GetName() != "nodekeeper_build_info" {
			continue
		}
		if len(mf.GetMetric()) != 1 {
			t.Fatalf("%d series, want 1", len(mf.GetMetric()))
		}
		m := mf.GetMetric()[0]
		if m.GetGauge().GetValue() != 1 {
			t.Errorf("value %v, want 1", m.GetGauge().GetValue())
		}
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("label %s = %q, want %q", k, got[k], v)
			}
		}
		return
	}
	t.Fatal("nodekeeper_build_info is not in the controller's registry")
}
