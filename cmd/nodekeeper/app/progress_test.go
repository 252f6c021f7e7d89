package app

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekeeper/nodekeeper/internal/cli"
	"github.com/nodekeeper/nodekeeper/internal/test/testenv"
)

// progressLine is in the final progress line of every meter.
const progressLine = ", done in "

// checkProgressModes runs args with each --progress mode: always draws progress on stderr, never
// and auto (stderr is not a terminal here) draw none, and stdout is the same parseable JSON in
// every mode (normalize drops what differs from run to run whatever the mode).
func checkProgressModes(t *testing.T, wantCode int, wantProgress string, normalize func(map[string]any), args ...string) {
	t.Helper()
	outputs := map[string]string{}
	for _, mode := range []string{"always", "never", "auto"} {
		stdout, stderr, code := execute(t, false, append(args, "--progress="+mode)...)
		if code != wantCode {
			t.Fatalf("--progress=%s: exit %d, want %d; stderr:\n%s", mode, code, wantCode, stderr)
		}
		drawn := strings.Contains(stderr, progressLine) && strings.Contains(stderr, wantProgress)
		if drawn != (mode == "always") {
			t.Errorf("--progress=%s: progress drawn %v, want %v; stderr:\n%s", mode, drawn, mode == "always", stderr)
		}
		if strings.Contains(stdout, "\r") || strings.Contains(stdout, progressLine) {
			t.Errorf("--progress=%s: progress on stdout:\n%s", mode, stdout)
		}
		var doc map[string]any
		if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
			t.Fatalf("--progress=%s: stdout is not JSON: %v\n%s", mode, err, stdout)
		}
		if normalize != nil {
			normalize(doc)
		}
		b, _ := json.Marshal(doc)
		outputs[mode] = string(b)
	}
	if outputs["always"] != outputs["never"] || outputs["auto"] != outputs["never"] {
		t.Errorf("-o json differs with progress:\nalways: %s\nnever:  %s\nauto:   %s", outputs["always"], outputs["never"], outputs["auto"])
	}
}

func TestAuditProgress(t *testing.T) {
	log := filepath.Join("..", "..", "..", "internal", "audit", "testdata", "seed001", "events.jsonl")
	// The file's size is known: the bytes read are drawn against it.
	checkProgressModes(t, 0, "/", nil, "audit", log, "-o", "json")
}

func TestProgressFlagValue(t *testing.T) {
	for _, cmd := range []string{"audit", "doctor"} {
		t.Run(cmd, func(t *testing.T) {
			_, stderr, code := execute(t, false, cmd, "--progress", "sometimes")
			if code != cli.ExitUsage || !strings.Contains(stderr, "unknown --progress \"sometimes\" (want auto, always or never)") {
				t.Errorf("exit %d, stderr %q; want %d and the valid modes", code, stderr, cli.ExitUsage)
			}
		})
	}
}

// doctor draws the kubelet configz requests done against the Ready nodes, on a real API server
// (the requests fail: these nodes have no kubelet, which counts as done all the same).
func TestDoctorProgress(t *testing.T) {
	env, err := testenv.Start(t.Context(), testenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Stop)
	for _, name := range []string{"ip-10-64-0-1.ec2.internal", "ip-10-64-0-2.ec2.internal"} {
		env.CreateNode(t, name)
		markReady(t, env, name)
	}
	// The run's timings are its own; everything else must not move.
	dropTimings := func(doc map[string]any) {
		delete(doc, "durationSeconds")
		delete(doc, "generated")
	}
	checkProgressModes(t, cli.ExitFindings, "2/2 nodes", dropTimings, "doctor", "-o", "json", "--kubeconfig", env.KubeconfigPath())
}

// markReady gives a Node the Ready condition a kubelet posts, with an address the API server's
// proxy refuses (loopback): doctor requests its configz and counts the failure.
func markReady(t *testing.T, env *testenv.Env, name string) {
	t.Helper()
	nodes := env.AdminClient().CoreV1().Nodes()
	n, err := nodes.Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: now, LastTransitionTime: now, Reason: "KubeletReady"}}
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}
	if _, err := nodes.UpdateStatus(t.Context(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
