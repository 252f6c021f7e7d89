package headings

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestProblem(t *testing.T) {
	for _, h := range []string{
		"analyze.Timeline per node and lease", "analyze.Zombie kubelets", "Throttling over time read.X",
		"CLASS lease.ClassLeaked", "*analyze.Report", "ZOMBIE KUBELETS (%d)", "count %!d(string=x)",
		"owner <nil>", "node &{a b}", "{healthy 3}", "labels map[a:b]", "[]string", "at 0xc000123456",
		"nodekeeper audit <no value>", "{{.Title}}",
	} {
		if Problem(h) == "" {
			t.Errorf("%q passes", h)
		}
	}
	for _, h := range []string{
		"Timeline per node and lease", "Zombie kubelets", "ZOMBIE KUBELETS (2)", "NODE LEASE",
		"ip-10-0-1-1.ec2.internal: max pods 29", "m5.large: max pods 29", "CNINode (vpcresources.k8s.aws) whose Node is gone",
		"the CNI plugin could not reach ipamd (127.0.0.1:50051 / ipamd.sock): pods stay in ContainerCreating",
		"TOP TALKERS BY LATENCY (stageTimestamp − requestReceivedTimestamp, watches excluded)",
		"AUDIT LOG 2024-05-01T10:00:00Z → 2024-05-01T11:00:00Z (1h)", "100% of nodes", "kubelet/v1.29.3 (linux/amd64)",
		"nodekeeper doctor https://127.0.0.1:6443 2026-01-01T00:00:00Z", "<none>",
	} {
		if p := Problem(h); p != "" {
			t.Errorf("%q: %s", h, p)
		}
	}
}

func TestHTML(t *testing.T) {
	page := `<!doctype html><html><head><title>nodekeeper  audit</title><style>h2{color:red}</style></head><body>
<h1>nodekeeper audit</h1><p>text</p><h2>Access denied <span>(403: 1)</span></h2>
<table><caption>Top</caption><tr><th>user</th><th>verb</th></tr><tr><td>analyze.X</td></tr></table>
<details><summary>more</summary>body</details><svg><rect><title>tip</title></rect></svg><h6>six</h6></body></html>`
	got, err := HTML([]byte(page))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"nodekeeper audit", "nodekeeper audit", "Access denied (403: 1)", "Top", "user", "verb", "more", "tip", "six"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

func TestText(t *testing.T) {
	report := "AUDIT LOG  no events\ninput a (json): 1 lines\n\nNODE DELETIONS (0)\n  none\n\n" +
		"LEAKS (1)\n  LEASE\tCREATED\n  kube-node-lease/x\t10:00\n\n\x1b[1mKUBELET\x1b[0m  3 checked\n" +
		"  \x1b[31m✖\x1b[0m NK101 kubelet max pods\n      node-a: too many\n"
	want := []string{"AUDIT LOG  no events", "NODE DELETIONS (0)", "LEAKS (1)", "LEASE\tCREATED", "KUBELET  3 checked", "✖ NK101 kubelet max pods"}
	if got := Text(report); !reflect.DeepEqual(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// recorder is a testing.TB that keeps the failures it is given, so that the checks' own failures
// can be asserted.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper()                   {}
func (r *recorder) Error(args ...any)         { r.errs = append(r.errs, fmt.Sprint(args...)) }
func (r *recorder) Errorf(f string, a ...any) { r.errs = append(r.errs, fmt.Sprintf(f, a...)) }

func TestCheckTextFiles(t *testing.T) {
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good.txt"), filepath.Join(dir, "bad.txt")
	for name, body := range map[string]string{good: "AUDIT LOG\n\nLEAKS (1)\n", bad: "AUDIT LOG\n\nanalyze.Leaks (1)\n"} {
		if err := os.WriteFile(name, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name  string
		files []string
		want  []string // a part of each failure, in order
	}{
		{"good", []string{good}, nil},
		{"bad", []string{good, bad}, []string{`bad.txt: heading "analyze.Leaks (1)" carries a package-qualified Go identifier`}},
		{"none", nil, []string{"no text report files"}},
		{"missing", []string{filepath.Join(dir, "absent.txt")}, []string{"absent.txt"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{TB: t}
			CheckTextFiles(r, tc.files...)
			assertFailures(t, r.errs, tc.want)
		})
	}
}

func TestCheckSections(t *testing.T) {
	hs := []string{"nodekeeper doctor", "KUBELET  3 checked", "ENI AND PODS (2)"}
	for _, tc := range []struct {
		titles []string
		want   []string
	}{
		{[]string{"Kubelet", "ENI and pods"}, nil},
		{[]string{"Kubelet", "Control plane"}, []string{`doctor: no heading for section "Control plane"`}},
	} {
		r := &recorder{TB: t}
		CheckSections(r, "doctor", hs, tc.titles...)
		assertFailures(t, r.errs, tc.want)
	}
}

func assertFailures(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("failures %q, want %d like %q", got, len(want), want)
	}
	for i := range want {
		if !strings.Contains(got[i], want[i]) {
			t.Errorf("failure %q does not say %q", got[i], want[i])
		}
	}
}
