package app

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/test/auditgen"
)

// TestAuditChurnAndHeartbeatFlags: --churn-threshold decides which actors are named as lease
// churn, --node-monitor-grace-period and --lease-renew-interval which nodes are named near
// NotReady, --fail-on grades both; values that cannot work are usage errors naming the flag.
func TestAuditChurnAndHeartbeatFlags(t *testing.T) {
	var b bytes.Buffer
	truth, err := auditgen.Generate(&b, auditgen.Config{Nodes: 20, Duration: 4 * time.Minute, Seed: 5,
		CleanupCronJob: 30 * time.Second, ManualLeaseDelete: true, HeartbeatTrouble: true})
	if err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(log, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	cron := truth.Churns[auditgen.CleanupUser]
	if cron <= 5 || truth.Churns[auditgen.AdminUser] != 1 {
		t.Fatalf("the generator played %v churns: the cases below need the CronJob over 5 and one manual delete", truth.Churns)
	}
	over, near := truth.OverGrace[0], truth.NearGrace[0]
	gcUser := "system:serviceaccount:kube-system:generic-garbage-collector"
	for _, tc := range []struct {
		name     string
		args     []string
		code     int
		actors   []string          // named as lease churn, most churns first
		nodes    map[string]string // node → heartbeat status, for the nodes named near NotReady
		grace    time.Duration
		errWants string
	}{
		{name: "defaults name the CronJob, not the manual delete", actors: []string{auditgen.CleanupUser},
			nodes: map[string]string{over: "over-grace", near: "near-grace"}, grace: 50 * time.Second},
		{name: "a threshold over the CronJob's count names nobody", args: []string{"--churn-threshold", "1000"}, actors: []string{},
			nodes: map[string]string{over: "over-grace", near: "near-grace"}, grace: 50 * time.Second},
		{name: "threshold 1 names the CronJob and the garbage collector", args: []string{"--churn-threshold", "1"},
			actors: []string{auditgen.CleanupUser, gcUser}, nodes: map[string]string{over: "over-grace", near: "near-grace"}, grace: 50 * time.Second},
		{name: "a longer grace period: the over-grace node is near, the near one is fine", args: []string{"--node-monitor-grace-period", "70s", "--lease-renew-interval", "15s"},
			actors: []string{auditgen.CleanupUser}, nodes: map[string]string{over: "near-grace"}, grace: 70 * time.Second},
		{name: "fail-on error: a node over the grace period", args: []string{"--fail-on", "error"}, code: 3,
			errWants: "1 nodes over the grace period, 1 near it, 1 lease churn actors"},
		{name: "churn threshold 0", args: []string{"--churn-threshold", "0"}, code: 2, errWants: "--churn-threshold must be at least 1"},
		{name: "negative grace period", args: []string{"--node-monitor-grace-period", "-1s"}, code: 2, errWants: "--node-monitor-grace-period"},
		{name: "renew interval not under the grace period", args: []string{"--lease-renew-interval", "50s"}, code: 2,
			errWants: "--lease-renew-interval 50s must be shorter than --node-monitor-grace-period 50s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := execute(t, false, append([]string{"audit", log, "-o", "json"}, tc.args...)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstderr: %s", code, tc.code, stderr)
			}
			if tc.errWants != "" && !strings.Contains(stderr, tc.errWants) {
				t.Errorf("stderr lacks %q:\n%s", tc.errWants, stderr)
			}
			if tc.actors == nil {
				return
			}
			var rep struct {
				LeaseChurn struct {
					Actors []struct{ User string }
				}
				Heartbeats struct {
					GracePeriod time.Duration `json:"nodeMonitorGracePeriod"`
					Nodes       []struct{ Node, Status string }
				}
			}
			if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
				t.Fatal(err)
			}
			actors := []string{}
			for _, a := range rep.LeaseChurn.Actors {
				actors = append(actors, a.User)
			}
			if !slices.Equal(actors, tc.actors) {
				t.Errorf("lease churn names %q, want %q", actors, tc.actors)
			}
			nodes := map[string]string{}
			for _, n := range rep.Heartbeats.Nodes {
				if n.Status != "throttled" {
					nodes[n.Node] = n.Status
				}
			}
			if !maps.Equal(nodes, tc.nodes) || rep.Heartbeats.GracePeriod != tc.grace {
				t.Errorf("heartbeats name %v with grace period %s, want %v with %s", nodes, rep.Heartbeats.GracePeriod, tc.nodes, tc.grace)
			}
		})
	}
}
