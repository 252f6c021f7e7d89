package doctor

import (
	"slices"
	"testing"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/test/findingstest"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/lease"
	"github.com/nodekeeper/nodekeeper/internal/rules"
)

func TestCheckVersionSkew(t *testing.T) {
	tests := []struct {
		kubelet, server string
		want            []string
	}{
		{"v1.33.1-eks-1", "v1.33.0", nil},
		{"v1.30.4-eks-1", "v1.33.0", []string{"NK301:warning"}},
		{"v1.29.0", "v1.33.0", []string{"NK301:error"}},
		{"v1.28.5-eks-5e0fdde", "v1.30.0", []string{"NK302:warning"}},
		{"v1.25.0", "v1.28.0", []string{"NK301:warning", "NK302:warning"}},
		{"v1.25.0", "v1.27.0", []string{"NK301:warning", "NK302:warning"}},
		{"v1.24.0", "v1.27.0", []string{"NK301:error", "NK302:warning"}},
		{"v1.34.0", "v1.33.2", []string{"NK301:error"}},
	}
	for _, tc := range tests {
		fs, err := CheckVersionSkew("node/x", tc.kubelet, tc.server)
		if err != nil {
			t.Fatal(err)
		}
		if got := findingstest.Codes(fs); !slices.Equal(got, tc.want) {
			t.Errorf("%s vs %s: got %v, want %v", tc.kubelet, tc.server, got, tc.want)
		}
	}
	if _, err := CheckVersionSkew("node/x", "garbage", "v1.33.0"); err == nil {
		t.Error("bad version accepted")
	}
}

func TestCheckHeartbeats(t *testing.T) {
	now := time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC)
	mk := func(name string, renewedAgo time.Duration, owner types.UID) coordinationv1.Lease {
		l := coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: lease.NodeLeaseNamespace, CreationTimestamp: metav1.NewTime(now.Add(-48 * time.Hour))},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(name), LeaseDurationSeconds: ptr.To[int32](40),
				RenewTime: &metav1.MicroTime{Time: now.Add(-renewedAgo)}},
		}
		if owner != "" {
			l.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: name, UID: owner}}
		}
		return l
	}
	leases := []coordinationv1.Lease{
		mk("healthy", 5*time.Second, "u1"),
		mk("stale", 10*time.Minute, "u2"),
		mk("zombie", 5*time.Second, ""),
		mk("leaked", 3*time.Hour, ""),
		mk("unowned", 5*time.Second, ""),
		mk("gone", 5*time.Second, "u-old"),
	}
	nodes := map[string]lease.NodeRef{
		"healthy": {Name: "healthy", UID: "u1"}, "stale": {Name: "stale", UID: "u2"},
		"unowned": {Name: "unowned", UID: "u3"}, "nolease": {Name: "nolease", UID: "u4"},
	}
	got := findingstest.Codes(CheckHeartbeats(leases, nodes, now, lease.Options{}))
	want := []string{"NK311:warning", "NK312:error", "NK313:warning", "NK314:info", "NK315:info", "NK316:warning"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// catalog is what the CLI looks doctor's rules up in: the shared node rules and doctor's own.
// Building it checks that every rule is complete and that no code or name is used twice.
var catalog = findings.MustCatalog(rules.Rules, Rules)

// TestDocsListEveryRule keeps docs/doctor.md in step with the rule catalog.
func TestDocsListEveryRule(t *testing.T) {
	if n := len(catalog.Rules()); n < 30 {
		t.Errorf("only %d rules in the catalog", n)
	}
	findingstest.DocListsRules(t, "../../docs/doctor.md", catalog.Rules(), func(r findings.Rule) string {
		return "| " + r.Code + " | `" + r.Name + "` | " + r.Section + " | " + r.Severity.String() + " |"
	})
}
