package sandbox

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestStartArrangesTheMix starts a small sandbox and checks the cluster holds what the mix promises:
// Nodes for healthy and stopped machines only, ownerless re-created leases for legacy zombies, no
// lease for the modern zombie, and the seeded leaks with their old renew time.
func TestStartArrangesTheMix(t *testing.T) {
	ctx := context.Background()
	mix := Mix{Healthy: 3, Stopped: 1, LegacyZombies: 1, ModernZombies: 1, Leaked: 2, LeakedAge: time.Hour, LeaseDurationSeconds: 10}
	sb, err := Start(ctx, mix, Options{Quiet: true, Progress: func(line string) { t.Log(line) }})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Stop()
	admin := kubernetes.NewForConfigOrDie(sb.Env.AdminConfig())

	nodes, err := admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(nodes.Items), mix.Healthy+mix.Stopped; got != want {
		t.Fatalf("nodes: got %d, want %d", got, want)
	}
	leases, err := admin.CoordinationV1().Leases(corev1.NamespaceNodeLease).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nodeNames := map[string]bool{}
	for _, n := range nodes.Items {
		nodeNames[n.Name] = true
	}
	var owned, ownerlessNoNode, old int
	for _, l := range leases.Items {
		switch {
		case len(l.OwnerReferences) == 1 && nodeNames[l.Name]:
			owned++
		case len(l.OwnerReferences) == 0 && !nodeNames[l.Name]:
			ownerlessNoNode++
			if l.Spec.RenewTime != nil && time.Since(l.Spec.RenewTime.Time) > 30*time.Minute {
				old++
			}
		default:
			t.Errorf("unexpected lease %s: owners=%v node=%v", l.Name, l.OwnerReferences, nodeNames[l.Name])
		}
	}
	if owned != mix.Healthy+mix.Stopped {
		t.Errorf("owned leases: got %d, want %d", owned, mix.Healthy+mix.Stopped)
	}
	if ownerlessNoNode != mix.LegacyZombies+mix.Leaked {
		t.Errorf("ownerless leases without a Node: got %d, want %d (legacy zombies + leaked)", ownerlessNoNode, mix.LegacyZombies+mix.Leaked)
	}
	if old != mix.Leaked {
		t.Errorf("leases renewed long ago: got %d, want %d", old, mix.Leaked)
	}
}
