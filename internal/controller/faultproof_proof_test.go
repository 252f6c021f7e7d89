package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/nodekeeper/nodekeeper/internal/kubeletsim"
	"github.com/nodekeeper/nodekeeper/internal/lease"
	"github.com/nodekeeper/nodekeeper/internal/test/testenv"
)

// errorRecorder is a testing.TB whose Errorf is recorded instead of failing the test, so that a
// test can show that a proof fails when it must.
type errorRecorder struct {
	testing.TB
	errs []string
}

func (r *errorRecorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *errorRecorder) Helper() {}

// TestFaultProofSurvivesLostAuditEvents runs the fault benchmark's proof on a small history: the
// replica's identity deletes one leaked lease and one zombie lease (which it must never do). With
// the audit events that a stopped API server can lose removed one by one — the write that
// produced the deleted version, or the DELETE itself — the proof still proves the leaked delete
// from etcd, and still fails the zombie delete; it never skips either.
func TestFaultProofSurvivesLostAuditEvents(t *testing.T) {
	ctx := context.Background()
	e, err := testenv.Start(ctx, testenv.Options{AuditPolicy: testenv.AuditNodeLeaseWrites, KeepHistory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	admin := e.AdminClient()
	const user = "nodekeeper-replica"
	replicaLeases := kubernetes.NewForConfigOrDie(e.UserConfig(user, "system:masters")).CoordinationV1().Leases(lease.NodeLeaseNamespace)
	const grace = 45 * time.Second
	const leaked, zombie = "ip-10-70-0-1.proof.internal", "ip-10-70-0-2.proof.internal"

	leakedVersion, err := kubeletsim.SeedOldLeakedLease(ctx, admin, e, leaked, time.Now().Add(-3*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	zombieVersion, err := admin.CoordinationV1().Leases(lease.NodeLeaseNamespace).Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: zombie},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To(zombie), LeaseDurationSeconds: ptr.To[int32](40),
			RenewTime: &metav1.MicroTime{Time: time.Now()},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []*coordinationv1.Lease{leakedVersion, zombieVersion} {
		if err := replicaLeases.Delete(ctx, l.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &l.UID, ResourceVersion: &l.ResourceVersion},
		}); err != nil {
			t.Fatal(err)
		}
	}
	e.StopAPIServer()
	events := readAuditFile(t, e.AuditLogPath())

	// without drops the audit events the benchmark would have lost.
	without := func(drop func(ev testenv.AuditEvent) bool) []testenv.AuditEvent {
		var out []testenv.AuditEvent
		for _, ev := range events {
			if !drop(ev) {
				out = append(out, ev)
			}
		}
		return out
	}
	wroteVersion := func(l *coordinationv1.Lease) func(testenv.AuditEvent) bool {
		return func(ev testenv.AuditEvent) bool {
			var got coordinationv1.Lease
			return ev.Verb != "delete" && json.Unmarshal(ev.ResponseObject, &got) == nil && got.UID == l.UID && got.ResourceVersion == l.ResourceVersion
		}
	}
	deleteOf := func(name string) func(testenv.AuditEvent) bool {
		return func(ev testenv.AuditEvent) bool { return ev.Verb == "delete" && ev.Name() == name }
	}
	for _, tc := range []struct {
		name                           string
		events                         []testenv.AuditEvent
		fromAudit, fromEtcd, unaudited int
	}{
		{"audit log complete", events, 2, 0, 0},
		{"write of the leaked version lost", without(wroteVersion(leakedVersion)), 1, 1, 0},
		{"DELETE of the leaked lease lost", without(deleteOf(leaked)), 1, 0, 1},
		{"write of the zombie version lost", without(wroteVersion(zombieVersion)), 1, 1, 0},
		{"DELETE of the zombie lease lost", without(deleteOf(zombie)), 1, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &errorRecorder{TB: t}
			p := proveDeletes(rec, e, tc.events, user, grace)
			if p.versionFromAudit != tc.fromAudit || p.versionFromEtcd != tc.fromEtcd || p.unaudited != tc.unaudited {
				t.Errorf("proof %s; want versions from the audit log %d, from etcd %d, unaudited %d", p, tc.fromAudit, tc.fromEtcd, tc.unaudited)
			}
			// The zombie delete fails the proof every time; the leaked one never does.
			var zombieErr bool
			for _, msg := range rec.errs {
				switch {
				case strings.Contains(msg, zombie) && strings.Contains(msg, "while it was zombie"):
					zombieErr = true
				default:
					t.Errorf("unexpected proof failure: %s", msg)
				}
			}
			if !zombieErr {
				t.Errorf("the DELETE of the zombie lease %s passed the proof; errors: %q", zombie, rec.errs)
			}
		})
	}
}
