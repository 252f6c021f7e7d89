//go:build linux

package e2e

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekeeper/nodekeeper/internal/test/testenv"
)

// TestLeasesWatch follows kube-node-lease with `leases --watch` as a person at a terminal
// would: the listing, then a line for a new lease and one for its deletion, then Ctrl-C.
func TestLeasesWatch(t *testing.T) {
	c := seedCluster(t, 0)
	u, _ := eksUser(t)
	d := u.start(binary("nodekeeper"), "leases", "--watch", "-n", "kube-node-lease")
	const timeout = 3 * time.Minute // only catches a hang
	d.waitFor(timeout, "the listing to show the zombie lease", func() bool {
		return strings.Contains(d.stdout.String(), c.zombie)
	})
	leaked := env.SeedLeakedLeases(t, testenv.UniqueNodeName(44, "watch"), 1, time.Now().Add(-3*time.Hour))[0]
	d.waitFor(timeout, "a line for the new leaked lease", func() bool {
		return strings.Contains(d.stdout.String(), leaked)
	})
	if err := env.AdminClient().CoordinationV1().Leases(corev1.NamespaceNodeLease).Delete(context.Background(), leaked, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	d.waitFor(timeout, "a DELETED line for the deleted lease", func() bool {
		for _, line := range strings.Split(d.stdout.String(), "\n") {
			if f := strings.Fields(line); len(f) >= 3 && f[1] == "DELETED" && f[2] == leaked {
				return true
			}
		}
		return false
	})
	if code := d.signal(syscall.SIGINT, timeout); code != exitOK {
		t.Errorf("exit code %d after Ctrl-C, want 0:\n%s", code, d)
	}
	if d.stderr.String() != "" {
		t.Errorf("Ctrl-C on a watch printed on stderr:\n%s", d)
	}
}
