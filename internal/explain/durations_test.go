package explain

import (
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDurationsReadAsKubectl: the story prints how long after the Node's deletion its lease was
// renewed as the rest of the CLI prints durations (kubectl's AGE, lease.Elapsed: "3h"), never
// Go's "3h0m0s".
func TestDurationsReadAsKubectl(t *testing.T) {
	deleted := time.Date(2026, 11, 28, 6, 0, 0, 0, time.UTC)
	renewed := metav1.NewMicroTime(deleted.Add(3 * time.Hour))
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "ip-10-0-0-1.ec2.internal", Namespace: "kube-node-lease"},
		Spec: coordinationv1.LeaseSpec{RenewTime: &renewed}}
	tl := &teller{now: renewed.Add(time.Minute), cl: &cluster{}, lease: &leaseRead{l: l}, deletedAt: deleted, s: &Story{}}
	tl.judge()
	want := "lease renewed 3h after the Node's deletion: its kubelet still runs"
	for _, line := range tl.s.Timeline {
		if line.What == want {
			return
		}
	}
	var got []string
	for _, line := range tl.s.Timeline {
		got = append(got, line.What)
	}
	t.Errorf("no line %q in the timeline:\n%s", want, strings.Join(got, "\n"))
}
