//go:build linux

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/nodekeeper/nodekeeper/internal/test/gzipped"
	"github.com/nodekeeper/nodekeeper/internal/test/testenv"
)

// auditReport is the part of `audit -o json` (AuditReport) a reader looks at first.
type auditReport struct {
	Kind   string `json:"kind"`
	Inputs []struct {
		Name   string `json:"name"`
		Format string `json:"format"`
		Events int    `json:"events"`
	} `json:"inputs"`
	NodeDeletions []struct {
		Node  string `json:"node"`
		Event struct {
			Actor struct {
				User string `json:"user"`
			} `json:"actor"`
		} `json:"event"`
	} `json:"nodeDeletions"`
	Zombies []struct {
		Node     string `json:"node"`
		Requests int    `json:"requests"`
	} `json:"zombies"`
}

// TestAuditFixtures runs audit on the fixtures of internal/audit from that directory, as its
// golden tests do in-process: the binary must print the same report, byte for byte.
func TestAuditFixtures(t *testing.T) {
	u := newUser(t)
	u.dir = filepath.Join(repoRoot, "internal", "audit")
	r := u.expect(exitOK, "audit", "testdata/seed001/events.jsonl")
	want := string(readAll(t, filepath.Join(u.dir, "testdata", "golden", "seed001.txt")))
	if r.stdout != want {
		t.Errorf("the binary's report differs from internal/audit/testdata/golden/seed001.txt:\n%s", r)
	}
	// The same events pretty-printed, and on standard input: the same findings.
	r = u.expect(exitOK, "audit", "-o", "json", "testdata/seed001/events-pretty.json")
	rep := decode[auditReport](t, r, "AuditReport")
	if len(rep.Zombies) != 1 || rep.Zombies[0].Node != "ip-10-29-79-205.ap-northeast-2.compute.internal" {
		t.Errorf("zombies %+v:\n%s", rep.Zombies, r)
	}
	// An export of CloudWatch Logs (filter-log-events): read, and gated on with --fail-on.
	u.expect(exitFindings, "audit", "--fail-on", "error", "testdata/eks/filter-log-events.json")
	// Not an audit log at all: the run fails and says why.
	r = u.expect(exitFailed, "audit", "audit.go")
	mustContain(t, r, r.stderr, "error: ")
}

// TestAuditLiveLog reads the shared control plane's own audit log, plain and gzip-compressed,
// after a zombie kubelet episode played against it: a Node deleted while its kubelet goes on
// renewing its lease.
func TestAuditLiveLog(t *testing.T) {
	ctx := context.Background()
	node := nodeName()
	env.CreateNode(t, node)
	kubelet := kubernetes.NewForConfigOrDie(env.NodeConfig(node))
	leases := kubelet.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	l, err := leases.Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: node},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(node),
			LeaseDurationSeconds: ptr.To[int32](40),
			RenewTime:            ptr.To(metav1.NewMicroTime(time.Now())),
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	admin := kubernetes.NewForConfigOrDie(adminUser())
	if err := admin.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	// The kubelet goes on renewing for more than --zombie-min-duration after the deletion.
	const zombieMin = 2 * time.Second
	renewals := 0
	for time.Since(deleted) < zombieMin+time.Second || renewals < 3 {
		time.Sleep(300 * time.Millisecond)
		if l, err = leases.Get(ctx, node, metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
		l.Spec.RenewTime = ptr.To(metav1.NewMicroTime(time.Now()))
		if l, err = leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		renewals++
	}
	// The API server writes an event once the response is sent: wait until the last renewal's
	// is in the file.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		evs := env.AuditEvents(t, node, func(ev testenv.AuditEvent) bool {
			return ev.Verb == "update" && ev.Resource() == "leases" && ev.User.Username == "system:node:"+node
		})
		if len(evs) >= renewals {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the audit log holds %d of the kubelet's %d renewals", len(evs), renewals)
		}
		time.Sleep(200 * time.Millisecond)
	}

	u := newUser(t)
	logPath := filepath.Join(u.dir, "audit.log")
	data := readAll(t, env.AuditLogPath())
	if err := os.WriteFile(logPath, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(logPath+".gz", gzipped.Bytes(t, data), 0o600); err != nil {
		t.Fatal(err)
	}

	for _, input := range []string{env.AuditLogPath(), "audit.log.gz"} {
		t.Run(filepath.Base(input), func(t *testing.T) {
			args := []string{"audit", input, "--node", node, "--zombie-min-duration", zombieMin.String()}
			r := u.expect(exitOK, append(args, "-o", "json")...)
			rep := decode[auditReport](t, r, "AuditReport")
			if len(rep.NodeDeletions) != 1 || rep.NodeDeletions[0].Node != node || rep.NodeDeletions[0].Event.Actor.User != "e2e-admin" {
				t.Errorf("node deletions %+v, want %s by e2e-admin:\n%s", rep.NodeDeletions, node, r)
			}
			if len(rep.Zombies) != 1 || rep.Zombies[0].Node != node || rep.Zombies[0].Requests < renewals {
				t.Errorf("zombies %+v, want %s with at least %d requests:\n%s", rep.Zombies, node, renewals, r)
			}
			if len(rep.Inputs) != 1 || rep.Inputs[0].Events == 0 {
				t.Errorf("inputs %+v:\n%s", rep.Inputs, r)
			}
			// The text report, and the gate a CI job would use.
			r = u.expect(exitFindings, append(args, "--fail-on", "error")...)
			mustContain(t, r, r.stdout, "ZOMBIE KUBELETS (1)", node, "e2e-admin")
			if !strings.HasPrefix(r.stderr, "error: ") {
				t.Errorf("exit 3 without saying why on stderr:\n%s", r)
			}
		})
	}
}
