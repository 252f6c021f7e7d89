package doctor

import (
	"context"
	"testing"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/kube"
	"github.com/nodekeeper/nodekeeper/internal/kubeletsim"
)

// TestDoctorSkipConfigz: with SkipConfigz (the controller's check loop) no kubelet is read through
// the node proxy even by credentials that may, and the configz fact is missing with the reason;
// the same run without it reads the kubelet once, so the kubelet was there to be read.
func TestDoctorSkipConfigz(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name := "ip-10-63-0-9.ec2.internal"
	_, srv := startKubelet(ctx, t, kubeletsim.Config{Name: name}, kubeletDefaults(29))

	clients, err := kube.NewClients(kube.Configure(env.AdminConfig(), "doctor", kube.RateLimit{}))
	if err != nil {
		t.Fatal(err)
	}
	d := DepsFrom(clients, nil)
	f, err := Gather(ctx, d, Options{AWSNodeName: "aws-node-none", SkipConfigz: true}.WithDefaults())
	if err != nil {
		t.Fatal(err)
	}
	if hits := srv.Endpoints()[0].Hits(); hits != 0 {
		t.Errorf("SkipConfigz: %d configz requests through the node proxy, want 0", hits)
	}
	if m, ok := f.Missing[FactConfigz]; !ok || m.Reason != SkippedConfigz || m.Resource != "nodes/proxy" {
		t.Errorf("SkipConfigz: configz fact missing = %+v, %v; want nodes/proxy %q", m, ok, SkippedConfigz)
	}

	if _, err := Gather(ctx, d, Options{AWSNodeName: "aws-node-none"}.WithDefaults()); err != nil {
		t.Fatal(err)
	}
	if hits := srv.Endpoints()[0].Hits(); hits != 1 {
		t.Errorf("without SkipConfigz: %d configz requests, want 1", hits)
	}
}
