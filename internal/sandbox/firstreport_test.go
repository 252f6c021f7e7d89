package sandbox_test

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/nodekeeper/nodekeeper/internal/audit/analyze"
	"github.com/nodekeeper/nodekeeper/internal/doctor"
	"github.com/nodekeeper/nodekeeper/internal/kube"
	"github.com/nodekeeper/nodekeeper/internal/leasesview"
	"github.com/nodekeeper/nodekeeper/internal/sandbox"
)

// readmeTable is the README's list of what the first doctor, leases and audit show on the
// default sandbox: "command|finding" → count ("0 or 3" allows either).
func readmeTable(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	begin, end := strings.Index(text, "<!-- sandbox-first-reports: begin -->"), strings.Index(text, "<!-- sandbox-first-reports: end -->")
	if begin < 0 || end < begin {
		t.Fatal("README.md has no sandbox-first-reports table")
	}
	rows := map[string]string{}
	for _, line := range strings.Split(text[begin:end], "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 5 || strings.TrimSpace(cells[1]) == "command" || strings.HasPrefix(strings.TrimSpace(cells[1]), "---") {
			continue
		}
		rows[strings.TrimSpace(cells[1])+"|"+strings.TrimSpace(cells[2])] = strings.TrimSpace(cells[3])
	}
	return rows
}

// TestFirstReportsShowWhatWasPlanted starts the default sandbox mix through Start on the real
// control plane, runs doctor, leases and audit over it as a newcomer's first commands would, and
// compares what each shows with the README's table, both ways: nothing shown that the README
// does not list, nothing listed that is not shown, and the same counts.
func TestFirstReportsShowWhatWasPlanted(t *testing.T) {
	ctx := context.Background()
	sb, err := sandbox.Start(ctx, sandbox.DefaultMix(), sandbox.Options{Quiet: true, Progress: func(line string) { t.Log(line) }})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Stop()
	clients, err := kube.NewClients(kube.Configure(sb.Env.AdminConfig(), "sandbox-test", kube.RateLimit{}))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}

	rep, err := doctor.Run(ctx, doctor.DepsFrom(clients, nil), doctor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Findings() {
		got["doctor|"+f.Code+" "+f.Severity.String()]++
		t.Logf("doctor: %s %s %s: %s", f.Code, f.Severity, f.Resource, f.Message)
	}

	leases, err := leasesview.List(ctx, clients, leasesview.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range leases.Summary.Counts {
		if c.Count > 0 {
			got["leases|"+string(c.Class)] = c.Count
		}
	}

	// The audit log is read as the sandbox advertises it; the API server writes it as it goes.
	f, err := os.Open(sb.Env.AuditLogPath())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	audit, err := analyze.AnalyzeReader(sb.Env.AuditLogPath(), f, analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got["audit|node deletions"] = len(audit.NodeDeletions)
	got["audit|leaks"] = len(audit.Leaks)
	got["audit|zombie kubelets"] = len(audit.Zombies)

	want := readmeTable(t)
	var keys []string
	for k := range want {
		keys = append(keys, k)
	}
	for k := range got {
		if _, ok := want[k]; !ok && got[k] > 0 {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		w, listed := want[k]
		if !listed {
			t.Errorf("%s: shown %d times, not listed in the README", k, got[k])
			continue
		}
		ok := false
		for _, alt := range strings.Split(w, " or ") {
			if n, err := strconv.Atoi(alt); err == nil && n == got[k] {
				ok = true
			}
		}
		if !ok {
			t.Errorf("%s: shown %d times, the README lists %s", k, got[k], w)
		}
	}
}
