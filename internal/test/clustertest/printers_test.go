package clustertest

import (
	"bytes"
	"context"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodekeeper/nodekeeper/internal/kubeprint"
	"github.com/nodekeeper/nodekeeper/internal/lease"
	"github.com/nodekeeper/nodekeeper/internal/leasesview"
)

const nodegroupLabel = "eks.amazonaws.com/nodegroup"

// printerFleet creates Nodes in two node groups, each with its kubelet's lease (owned by its
// Node), and one ownerless lease whose Node is gone. It returns the lease names by group ("" for
// the one without a Node).
func printerFleet(t *testing.T) map[string][]string {
	t.Helper()
	ctx := context.Background()
	admin := env.AdminClient()
	groups := map[string][]string{
		"ng-a": {"ip-10-1-0-1.ec2.internal", "ip-10-1-0-2.ec2.internal"},
		"ng-b": {"ip-10-1-0-3.ec2.internal"},
		"":     {"ip-10-1-0-9.ec2.internal"},
	}
	now := metav1.NewMicroTime(time.Now())
	for group, names := range groups {
		for _, name := range names {
			l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: lease.NodeLeaseNamespace},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(name), LeaseDurationSeconds: ptr.To[int32](40), RenewTime: &now}}
			if group != "" {
				n, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name,
					Labels: map[string]string{nodegroupLabel: group}}}, metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = admin.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
				l.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: name, UID: n.UID}}
			}
			if _, err := admin.CoordinationV1().Leases(lease.NodeLeaseNamespace).Create(ctx, l, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = admin.CoordinationV1().Leases(lease.NodeLeaseNamespace).Delete(context.Background(), name, metav1.DeleteOptions{})
			})
		}
	}
	return groups
}

// runLeases runs `nodekeeper leases` with the given output flags, in process.
func runLeases(t *testing.T, f *leasesview.OutputFlags, opts leasesview.Options) string {
	t.Helper()
	if err := f.Validate(false); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	popts := f.PrintOptions()
	popts.AllNamespaces = opts.Namespace == ""
	if err := f.Run(context.Background(), &b, clientsFor(t, env.AdminConfig()), opts, popts, nil); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestObjectFormatsMatchKubectl: every kubectl object format prints, for the same template, what
// `kubectl get lease` prints on the same cluster. The two commands run one after the other while
// other leases of the cluster (the controller manager's lock) may renew, so the templates read
// fields that renewals do not change; a lease created or deleted in between by something else
// would show as a difference, so a mismatch is read again a few times before it fails.
func TestObjectFormatsMatchKubectl(t *testing.T) {
	printerFleet(t)
	kc := env.KubeconfigPath()
	for _, tc := range []struct {
		name       string
		output     string
		namespace  string
		sortBy     string
		noHeaders  bool
		tiesAsSets bool
	}{
		{name: "jsonpath names, all namespaces", output: "jsonpath={.items[*].metadata.name}"},
		// Holders, in a namespace where only kubelets write: kubectl prints control characters
		// raw, nodekeeper escapes them, so the namespace of the hostile-holder test is not compared.
		{name: "jsonpath range with holders", output: `jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name} {.spec.holderIdentity}{"\n"}{end}`, namespace: lease.NodeLeaseNamespace},
		{name: "name", output: "name", namespace: lease.NodeLeaseNamespace},
		{name: "go-template", output: `go-template={{range .items}}{{.kind}} {{.metadata.name}} {{.spec.leaseDurationSeconds}}{{"\n"}}{{end}}`},
		{name: "custom-columns", output: "custom-columns=NAME:.metadata.name,HOLDER:.spec.holderIdentity,OWNER:.metadata.ownerReferences[*].kind", namespace: lease.NodeLeaseNamespace},
		{name: "custom-columns --no-headers", output: "custom-columns=NAME:.metadata.name", namespace: lease.NodeLeaseNamespace, noHeaders: true},
		{name: "jsonpath-as-json uids", output: "jsonpath-as-json={.items[*].metadata.uid}", namespace: lease.NodeLeaseNamespace},
		// kubectl sorts with sort.Sort, which leaves leases created in the same second in an order
		// of its own (nodekeeper's sort is stable): each run of equal times is compared as a set.
		{name: "--sort-by creation, names", output: "custom-columns=CREATED:.metadata.creationTimestamp,NAME:.metadata.name", namespace: lease.NodeLeaseNamespace, sortBy: "{.metadata.creationTimestamp}", tiesAsSets: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"--kubeconfig", kc, "get", "lease", "-o", tc.output}
			if tc.namespace == "" {
				args = append(args, "-A")
			} else {
				args = append(args, "-n", tc.namespace)
			}
			if tc.sortBy != "" {
				args = append(args, "--sort-by", tc.sortBy)
			}
			if tc.noHeaders {
				args = append(args, "--no-headers")
			}
			var got, want string
			for attempt := 0; attempt < 5; attempt++ {
				f := leasesview.NewOutputFlags()
				f.Output, f.SortBy, f.NoHeaders = tc.output, tc.sortBy, tc.noHeaders
				got = runLeases(t, f, leasesview.Options{Namespace: tc.namespace})
				out, err := exec.Command("kubectl", args...).Output()
				if err != nil {
					t.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
				}
				want = string(out)
				if tc.tiesAsSets {
					got, want = sortTies(got), sortTies(want)
				}
				if got == want {
					break
				}
			}
			if got != want {
				t.Errorf("nodekeeper leases -o %s:\n%s\nkubectl get lease:\n%s", tc.output, got, want)
			}
			if strings.TrimSpace(got) == "" {
				t.Error("empty output: the comparison proves nothing")
			}
		})
	}
}

// TestSelectorOnNodeLabels: --node-selector selects the leases of one node group's Nodes, never another
// group's, never a lease whose Node is gone, and never a lease outside kube-node-lease; the
// table's summary counts the selection.
func TestSelectorOnNodeLabels(t *testing.T) {
	groups := printerFleet(t)
	names := func(out string) []string {
		var n []string
		for _, line := range strings.Fields(out) {
			n = append(n, strings.TrimPrefix(line, kubeprint.LeaseGroupResource+"/"))
		}
		sort.Strings(n)
		return n
	}
	for _, tc := range []struct {
		selector string
		classes  []lease.Class
		want     []string
	}{
		{selector: nodegroupLabel + "=ng-a", want: groups["ng-a"]},
		{selector: nodegroupLabel + "=ng-b", want: groups["ng-b"]},
		{selector: nodegroupLabel + " in (ng-a,ng-b)", want: append(append([]string{}, groups["ng-a"]...), groups["ng-b"]...)},
		{selector: nodegroupLabel + "=ng-a", classes: []lease.Class{lease.Zombie, lease.Leaked}, want: nil},
		{selector: nodegroupLabel + "=nope", want: nil},
		{selector: "!" + nodegroupLabel, want: nil}, // Nodes of other tests may lack it, but their leases are not ours
	} {
		t.Run(tc.selector, func(t *testing.T) {
			f := leasesview.NewOutputFlags()
			f.Output, f.NodeSelector = "name", tc.selector
			got := names(runLeases(t, f, leasesview.Options{Classes: tc.classes}))
			want := append([]string{}, tc.want...)
			sort.Strings(want)
			if tc.selector == "!"+nodegroupLabel {
				for _, n := range got {
					for _, ours := range append(append(append([]string{}, groups["ng-a"]...), groups["ng-b"]...), groups[""]...) {
						if n == ours {
							t.Errorf("lease %s selected by %s", n, tc.selector)
						}
					}
				}
				return
			}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("--node-selector %s: got %v, want %v", tc.selector, got, want)
			}
		})
	}
	t.Run("table summary counts the selection", func(t *testing.T) {
		f := leasesview.NewOutputFlags()
		f.NodeSelector, f.ShowKind = nodegroupLabel+"=ng-a", true
		out := runLeases(t, f, leasesview.Options{})
		for _, n := range groups["ng-a"] {
			if !strings.Contains(out, kubeprint.LeaseGroupResource+"/"+n) {
				t.Errorf("table lacks %s (with --show-kind):\n%s", n, out)
			}
		}
		for _, n := range append(append([]string{}, groups["ng-b"]...), groups[""]...) {
			if strings.Contains(out, n) {
				t.Errorf("table shows %s, not selected:\n%s", n, out)
			}
		}
		if !strings.Contains(out, "(2 leases)") || !strings.Contains(out, "2 healthy") {
			t.Errorf("summary does not count the 2 selected leases:\n%s", out)
		}
	})
}

// TestSelectorOnLeaseLabels: -l selects by the leases' own labels, as kubectl's -l does. Seed 001's
// command, `leases -n kube-system -l apiserver.kubernetes.io/identity=kube-apiserver`, lists the
// API server's identity lease (kube-apiserver labels it so) and nothing else, in the tables and
// in kubectl's object formats; a node-group label matches no lease (it is on Nodes, not leases).
func TestSelectorOnLeaseLabels(t *testing.T) {
	printerFleet(t)
	const identity = "apiserver.kubernetes.io/identity=kube-apiserver"
	want, err := env.AdminClient().CoordinationV1().Leases("kube-system").List(context.Background(), metav1.ListOptions{LabelSelector: identity})
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Items) == 0 {
		t.Fatal("the API server has no identity lease: the test proves nothing")
	}
	f := leasesview.NewOutputFlags()
	f.Output, f.Selector = "name", identity
	got := strings.Fields(runLeases(t, f, leasesview.Options{Namespace: "kube-system"}))
	if len(got) != len(want.Items) {
		t.Fatalf("-l %s: got %v, want the %d identity lease(s)", identity, got, len(want.Items))
	}
	for i, l := range want.Items {
		if got[i] != kubeprint.LeaseGroupResource+"/"+l.Name {
			t.Errorf("-l %s: got %v, want %s", identity, got, l.Name)
		}
	}

	table := leasesview.NewOutputFlags()
	table.Selector = identity
	out := runLeases(t, table, leasesview.Options{Namespace: "kube-system"})
	if !strings.Contains(out, want.Items[0].Name) || strings.Contains(out, "No leases") {
		t.Errorf("table of -l %s lacks the API server's lease %s:\n%s", identity, want.Items[0].Name, out)
	}
	if strings.Contains(out, "kube-controller-manager") {
		t.Errorf("table of -l %s shows the controller manager's lock, which has no such label:\n%s", identity, out)
	}

	byNodeLabel := leasesview.NewOutputFlags()
	byNodeLabel.Output, byNodeLabel.Selector = "name", nodegroupLabel+"=ng-a"
	if got := strings.TrimSpace(runLeases(t, byNodeLabel, leasesview.Options{})); got != "" {
		t.Errorf("-l %s=ng-a selected leases by their Nodes' labels: %s", nodegroupLabel, got)
	}
}

// sortTies sorts each run of lines that begin with the same first column (a time, in the
// --sort-by case), leaving the runs where they are: the order across runs is still compared.
func sortTies(out string) string {
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	first := func(l string) string { f, _, _ := strings.Cut(l, " "); return f }
	for i := 0; i < len(lines); {
		j := i + 1
		for j < len(lines) && first(lines[j]) == first(lines[i]) {
			j++
		}
		sort.Strings(lines[i:j])
		i = j
	}
	return strings.Join(lines, "\n") + "\n"
}
