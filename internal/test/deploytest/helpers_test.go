package deploytest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

const modulePath = "github.com/nodekeeper/nodekeeper"

// findRepoRoot is the directory of nodekeeper's go.mod, found once, upwards from the test's
// directory.
var findRepoRoot = sync.OnceValues(func() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(data, []byte("module "+modulePath+"\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of module %s above the test directory", modulePath)
		}
		dir = parent
	}
})

// mustGet returns what get returns, or fails the test with its error: for the values the package
// computes once (sync.OnceValues) for every test that needs them.
func mustGet[T any](t testing.TB, get func() (T, error)) T {
	t.Helper()
	v, err := get()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// repoRoot is the directory of nodekeeper's go.mod.
func repoRoot(t testing.TB) string {
	t.Helper()
	return mustGet(t, findRepoRoot)
}

// repoPath joins a slash-separated path inside the repository.
func repoPath(t testing.TB, rel string) string {
	return filepath.Join(repoRoot(t), filepath.FromSlash(rel))
}

func readRepoFile(t testing.TB, rel string) []byte {
	t.Helper()
	data, err := os.ReadFile(repoPath(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// run executes a command and returns its stdout; a failure carries stderr so that a helm or
// kubectl error message reaches the test log whole.
func run(dir string, stdin io.Reader, name string, args ...string) ([]byte, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("%s %s: %w\n%s", filepath.Base(name), strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes(), nil
}

// buildHelm builds bin/helm once per test binary by hack/build-helm.sh from the Helm version
// pinned in tools/helm/go.mod (a warm run only checks the stamp).
var buildHelm = sync.OnceValues(buildTool("hack/build-helm.sh", "helm"))

// buildTool returns a build of bin/name by script (one of hack/build-*.sh, which skip a build
// that is up to date), answering the binary's path.
func buildTool(script, name string) func() (string, error) {
	return func() (string, error) {
		root, err := findRepoRoot()
		if err != nil {
			return "", err
		}
		if _, err := run(root, nil, "bash", script); err != nil {
			return "", fmt.Errorf("building %s: %w", name, err)
		}
		return filepath.Join(root, "bin", name), nil
	}
}

// helm returns bin/helm (buildHelm).
func helm(t testing.TB) string {
	t.Helper()
	trackInputs(t, "tools/helm", "hack/build-helm.sh", "hack/lib")
	return mustGet(t, buildHelm)
}

// kubectl returns the kubectl on PATH, else the one hack/build-controlplane.sh builds.
func kubectl(t testing.TB) string {
	t.Helper()
	if p, err := exec.LookPath("kubectl"); err == nil {
		return p
	}
	p := repoPath(t, "bin/controlplane/kubectl")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("no kubectl on PATH and none built in bin/controlplane (run hack/build-controlplane.sh): %v", err)
	}
	return p
}

const chartDir = "deploy/helm/nodekeeper"

// helmTemplate renders the chart as release in namespace with the given values (YAML, may be
// empty) and returns the objects.
func helmTemplate(t testing.TB, release, namespace, values string) []*unstructured.Unstructured {
	t.Helper()
	out, err := helmTemplateErr(t, release, namespace, values)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := parseManifests(out)
	if err != nil {
		t.Fatalf("helm template output: %v", err)
	}
	return objs
}

func helmTemplateErr(t testing.TB, release, namespace, values string) ([]byte, error) {
	t.Helper()
	trackInputs(t, chartDir)
	// Values go through stdin: helm splits --values on commas, which test names contain.
	return run(repoRoot(t), strings.NewReader(values), helm(t), "template", release, chartDir, "--namespace", namespace, "--values", "-")
}

// kustomize renders a kustomization directory (relative to the repository root).
func kustomize(t testing.TB, dir string) []*unstructured.Unstructured {
	t.Helper()
	trackInputs(t, "deploy/kustomize")
	out, err := run(repoRoot(t), nil, kubectl(t), "kustomize", dir)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := parseManifests(out)
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v", dir, err)
	}
	return objs
}

// parseManifests splits a multi-document YAML stream into objects. Duplicate keys, documents that
// are not objects and objects without apiVersion, kind or name are errors; empty documents (Helm
// leaves them for disabled templates) are skipped.
func parseManifests(data []byte) ([]*unstructured.Unstructured, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []*unstructured.Unstructured
	for i := 0; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		var m map[string]any
		if err := yaml.UnmarshalStrict(doc, &m); err != nil {
			return nil, fmt.Errorf("document %d: %w\n%s", i, err, doc)
		}
		if m == nil {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		if u.GetAPIVersion() == "" || u.GetKind() == "" || u.GetName() == "" {
			return nil, fmt.Errorf("document %d has no apiVersion, kind or metadata.name:\n%s", i, doc)
		}
		objs = append(objs, u)
	}
}

// strictCodec decodes built-in kinds and rejects unknown or duplicate fields.
var strictCodec = serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()

// typed converts a built-in object to its Go type, strictly.
func typed(u *unstructured.Unstructured) (runtime.Object, error) {
	data, err := u.MarshalJSON()
	if err != nil {
		return nil, err
	}
	obj, _, err := strictCodec.Decode(data, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return obj, nil
}

// builtIn reports whether the client-go scheme knows the object's kind (CRDs such as
// ServiceMonitor are validated by the API server instead).
func builtIn(u *unstructured.Unstructured) bool {
	return scheme.Scheme.Recognizes(u.GroupVersionKind())
}

func find(objs []*unstructured.Unstructured, kind, namespace, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetNamespace() == namespace && o.GetName() == name {
			return o
		}
	}
	return nil
}

func ofKind(objs []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// mustTyped converts an object to T or fails the test.
func mustTyped[T runtime.Object](t testing.TB, u *unstructured.Unstructured) T {
	t.Helper()
	if u == nil {
		var zero T
		t.Fatalf("missing object of type %T", zero)
	}
	obj, err := typed(u)
	if err != nil {
		t.Fatal(err)
	}
	v, ok := obj.(T)
	if !ok {
		t.Fatalf("%s %s decodes to %T", u.GetKind(), u.GetName(), obj)
	}
	return v
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

var tracked sync.Map // repository path → struct{}

// trackInputs opens every file under the given repository paths from the test process itself.
// helm, kubectl and go read the manifests and sources in child processes, which go test's result
// cache does not see; opening them here makes an edit to any of them invalidate a cached pass.
func trackInputs(t testing.TB, rels ...string) {
	t.Helper()
	for _, rel := range rels {
		if _, done := tracked.LoadOrStore(rel, struct{}{}); done {
			continue
		}
		err := filepath.WalkDir(repoPath(t, rel), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			f, err := os.Open(path)
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed since the directory was listed: nothing to track
			}
			if err != nil {
				return err
			}
			return f.Close()
		})
		if err != nil {
			t.Fatalf("tracking %s: %v", rel, err)
		}
	}
}
