package deploytest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// sizesFile records the shipped binaries' sizes (its header says how to update it).
const sizesFile = "testdata/binary-sizes.txt"

// maxGrowth is how much a binary may grow over its recorded size before TestBinarySizes fails.
const maxGrowth = 0.10

// buildShipped builds main as the release does (static, trimmed, stripped) for linux/amd64,
// the platform the sizes are recorded for, into dir.
func buildShipped(t *testing.T, main, dir string) string {
	t.Helper()
	trackInputs(t, "cmd", "internal", "go.mod", "go.sum")
	bin := filepath.Join(dir, filepath.Base(main))
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, main)
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=amd64", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", main, err, out)
	}
	return bin
}

// readSizes reads the recorded sizes: the header's comment lines, and "name bytes" lines.
func readSizes(t *testing.T) (header string, sizes map[string]int64) {
	t.Helper()
	data, err := os.ReadFile(sizesFile)
	if err != nil {
		t.Fatal(err)
	}
	sizes = map[string]int64{}
	var h strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			h.WriteString(line + "\n")
			continue
		}
		name, value, ok := strings.Cut(line, " ")
		size, err := strconv.ParseInt(value, 10, 64)
		if !ok || err != nil || size <= 0 {
			t.Fatalf("%s:%d: want \"NAME BYTES\", got %q", sizesFile, n, line)
		}
		sizes[name] = size
	}
	return h.String(), sizes
}

// TestBinarySizes: neither shipped binary grows more than maxGrowth over its recorded size, so
// that weight (a dependency's whole module, an SDK client's every method) comes in only on
// purpose; and the CLI keeps none of the EC2 client's methods it never calls (the check
// reads the function names a stripped Go binary still carries for its stack traces).
func TestBinarySizes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds both binaries")
	}
	header, recorded := readSizes(t)
	dir := t.TempDir()
	got := map[string]int64{}
	var record strings.Builder
	record.WriteString(header)
	for _, m := range shippedMains {
		bin := buildShipped(t, m.main, dir)
		info, err := os.Stat(bin)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(m.main)
		got[name] = info.Size()
		fmt.Fprintf(&record, "%s %d\n", name, info.Size())
		want, ok := recorded[name]
		switch {
		case *update:
		case !ok:
			t.Errorf("%s records no size for %s: record it with -update", sizesFile, name)
		case float64(info.Size()) > float64(want)*(1+maxGrowth):
			t.Errorf("%s is %d bytes, %.1f%% over its recorded %d (at most %.0f%%): find what grew (go build -ldflags=-dumpdep shows why a symbol is kept), or record the new size on purpose with -update",
				name, info.Size(), 100*(float64(info.Size())/float64(want)-1), want, 100*maxGrowth)
		case float64(info.Size()) < float64(want)*(1-maxGrowth):
			t.Logf("%s is %d bytes, well under its recorded %d: record the new size with -update so that growth counts from it", name, info.Size(), want)
		}
		if name == "nodekeeper" {
			data, err := os.ReadFile(bin)
			if err != nil {
				t.Fatal(err)
			}
			checkEC2Methods(t, data)
			checkNoWholeClientset(t, data)
		}
	}
	if *update {
		if err := os.WriteFile(sizesFile, []byte(record.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("recorded %v in %s", got, sizesFile)
	}
}

// checkEC2Methods fails when the CLI's binary holds an EC2 method nodekeeper never calls. A
// reflective method lookup (text/template, behind -o go-template and jsonpath) makes the linker
// keep every exported method of a type stored in an interface value; an *ec2.Client so stored
// brings all its 800-odd methods (about 18 MiB). DescribeInstances, which the CLI calls, shows
// that the names are there to be found.
func checkEC2Methods(t *testing.T, binary []byte) {
	t.Helper()
	const client = "github.com/aws/aws-sdk-go-v2/service/ec2.(*Client)."
	if !bytes.Contains(binary, []byte(client+"DescribeInstances")) {
		t.Fatalf("the CLI's binary names no %sDescribeInstances: the check reads nothing", client)
	}
	for _, unused := range []string{"RunInstances", "TerminateInstances", "CreateVpc", "DeleteSubnet"} {
		if bytes.Contains(binary, []byte(client+unused)) {
			t.Errorf("the CLI's binary links %s%s, which it never calls: an *ec2.Client is held in an interface value (give the narrow interfaces method values, as internal/aws's methods.go does)", client, unused)
		}
	}
}

// checkNoWholeClientset fails when the CLI's binary holds client-go's whole typed clientset or a
// SharedInformerFactory. For the reason checkEC2Methods gives, a *kubernetes.Clientset held in an
// interface value keeps the typed client of every API group, with their apply configurations
// (about 9 MiB), and a factory's ForResource every group's informer and lister; the CLI builds
// its clients with kube.NewForConfig (kubeletsim.NewClient in the sandbox) and its informers one
// by one. The core group's Nodes shows that the names are there to be found.
func checkNoWholeClientset(t *testing.T, binary []byte) {
	t.Helper()
	const found = "k8s.io/client-go/kubernetes/typed/core/v1.(*CoreV1Client).Nodes"
	if !bytes.Contains(binary, []byte(found)) {
		t.Fatalf("the CLI's binary names no %s: the check reads nothing", found)
	}
	for _, unused := range []string{
		"k8s.io/client-go/kubernetes.NewForConfigAndClient",
		"k8s.io/client-go/kubernetes.(*Clientset).BatchV1",
		"k8s.io/client-go/kubernetes/typed/batch/v1.(*BatchV1Client).Jobs",
		"k8s.io/client-go/informers.(*sharedInformerFactory).ForResource",
	} {
		if bytes.Contains(binary, []byte(unused)) {
			t.Errorf("the CLI's binary links %s: a whole clientset or informer factory is built somewhere it runs (use kube.Interface and kube.NewForConfig, kube.LeaseInformer; go build -ldflags=-dumpdep shows the chain)", unused)
		}
	}
}
