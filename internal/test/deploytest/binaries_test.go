package deploytest

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/nodekeeper/nodekeeper/internal/controller/command"
)

// What ships is what is tested: the shipped binaries link no test harness, and the controller's
// image links the controller and nothing of the CLI's weight.

// shippedMains are the binaries users install, with the platforms they are released for
// (.goreleaser.yaml): build tags can change a package's imports from one platform to another.
var shippedMains = []struct {
	main string
	goos []string
}{
	{"./cmd/nodekeeper", []string{"linux", "darwin", "windows"}},
	{"./cmd/nodekeeper-controller", []string{"linux"}},
}

// harness are the packages that exist only to test: none may reach a shipped binary. A path
// ending in "/" stands for the package and everything under it.
var harness = []string{
	"testing", "testing/", "net/http/httptest",
	modulePath + "/internal/test/",
}

// notInController are what the CLI links and the controller's image must not: the AWS SDK's
// services but those the controller's loops use (controllerAWSServices), the readers and
// checks of the other commands, their printers, the sandbox and its control plane, and
// cli-runtime (its printers are the CLI's; both binaries take kubectl's flags from client-go's
// clientcmd). The check loop (--checks, internal/controller/checks) runs doctor's gather and
// checks and plan's gather and model, so the image links doctor, plan's gather and their imports
// (findings, rules, eni, bootstrap, instances, internal/aws's client interfaces, audit's reader
// and analysis for doctor's --audit-log): never bundle, gc, leases, maxpods, plan's render
// and scenario, audit's render or the CloudWatch audit reader.
var notInController = []string{
	"k8s.io/cli-runtime/",
	modulePath + "/internal/aws/cwaudit",
	modulePath + "/internal/audit/render",
	modulePath + "/internal/bundle",
	modulePath + "/internal/gc",
	modulePath + "/internal/leasesview",
	modulePath + "/internal/kubeprint",
	modulePath + "/internal/maxpods",
	modulePath + "/internal/plan/render",
	modulePath + "/internal/plan/scenario",
	modulePath + "/internal/reportpage",
	modulePath + "/internal/sandbox",
	modulePath + "/internal/controlplane",
	modulePath + "/internal/kubeletsim",
	modulePath + "/cmd/nodekeeper/",
}

// awsServices is where the AWS SDK keeps its service clients; controllerAWSServices are the
// ones the controller links: EC2 (the EC2 loop, --aws), the default credential chain's STS
// (IRSA's web identity), SSO, SSO OIDC and sign-in, and through doctor's EC2 checks and
// internal/aws's interfaces (--checks) Auto Scaling and CloudWatch. Never CloudWatch Logs or
// EKS: only the CLI calls them (internal/aws/allclients), and doctor reads the managed node
// groups through an interface without EKS's types. "internal" is the services' shared code.
const awsServices = "github.com/aws/aws-sdk-go-v2/service/"

var controllerAWSServices = []string{"ec2", "sts", "sso", "ssooidc", "signin", "internal", "autoscaling", "cloudwatch"}

// refusedInController names the rule of the controller's image pkg breaks, or "".
func refusedInController(pkg string) string {
	if rest, ok := strings.CutPrefix(pkg, awsServices); ok {
		service, _, _ := strings.Cut(rest, "/")
		if !slices.Contains(controllerAWSServices, service) {
			return awsServices + service + " (not a service of the controller's loops)"
		}
		return ""
	}
	return matches(pkg, notInController)
}

// matches reports whether pkg is one of patterns: an exact path, or under a path ending in "/"
// (for a pattern without "/" at the end, its subpackages match too).
func matches(pkg string, patterns []string) string {
	for _, p := range patterns {
		if pkg == strings.TrimSuffix(p, "/") || strings.HasPrefix(pkg, strings.TrimSuffix(p, "/")+"/") {
			return p
		}
	}
	return ""
}

func deps(t *testing.T, main, goos string) []string {
	t.Helper()
	trackInputs(t, "cmd", "internal", "go.mod")
	cmd := exec.Command("go", "list", "-deps", main)
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH=amd64", "CGO_ENABLED=0")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s (%s): %v", main, goos, err)
	}
	pkgs := strings.Fields(string(out))
	if len(pkgs) < 50 {
		t.Fatalf("go list -deps %s listed %d packages; expected the whole import graph", main, len(pkgs))
	}
	return pkgs
}

func TestShippedBinariesLinkNoHarness(t *testing.T) {
	for _, m := range shippedMains {
		for _, goos := range m.goos {
			t.Run(strings.TrimPrefix(m.main, "./cmd/")+"/"+goos, func(t *testing.T) {
				for _, pkg := range deps(t, m.main, goos) {
					if p := matches(pkg, harness); p != "" {
						t.Errorf("%s (%s) links %s, a test-only package (%s)", m.main, goos, pkg, p)
					}
				}
			})
		}
	}
}

func TestControllerBinaryIsLean(t *testing.T) {
	pkgs := deps(t, "./cmd/nodekeeper-controller", "linux")
	for _, pkg := range pkgs {
		if p := refusedInController(pkg); p != "" {
			t.Errorf("nodekeeper-controller links %s (%s): the image must carry the controller alone", pkg, p)
		}
	}
	// The filter must be able to fail: the same rules catch the CLI, which links all of them.
	cli := deps(t, "./cmd/nodekeeper", "linux")
	for _, want := range []string{modulePath + "/internal/bundle", modulePath + "/internal/plan/render",
		modulePath + "/internal/aws/cwaudit", "k8s.io/cli-runtime/pkg/printers", modulePath + "/internal/sandbox"} {
		if !slices.Contains(cli, want) || refusedInController(want) == "" {
			t.Errorf("the CLI should link %s and the controller's rules should refuse it", want)
		}
	}
	for _, want := range []string{modulePath + "/internal/controller", modulePath + "/internal/deleter", "k8s.io/client-go/tools/leaderelection",
		modulePath + "/internal/controller/ec2loop", "github.com/aws/aws-sdk-go-v2/service/ec2", "github.com/aws/aws-sdk-go-v2/service/sts",
		modulePath + "/internal/controller/checks", modulePath + "/internal/doctor", modulePath + "/internal/plan/gather"} {
		if !slices.Contains(pkgs, want) {
			t.Errorf("nodekeeper-controller does not link %s", want)
		}
	}
}

// Every flag the manifests may pass exists on the controller's binary, the image's entrypoint.
func TestControllerFlagsExist(t *testing.T) {
	root := command.NewRoot(strings.NewReader(""), &strings.Builder{}, &strings.Builder{})
	for name := range controllerFlags {
		if root.Flags().Lookup(name) == nil && root.PersistentFlags().Lookup(name) == nil {
			t.Errorf("the manifests' contract names --%s, which nodekeeper-controller does not have", name)
		}
	}
	for _, name := range []string{"kubeconfig", "context", "cluster", "server", "namespace"} {
		if root.Flags().Lookup(name) == nil {
			t.Errorf("nodekeeper-controller has no kubectl connection flag --%s", name)
		}
	}
}

// notInCLI are what neither binary links: cli-runtime's genericclioptions (its ConfigFlags and
// PrintFlags) and resource builder, which bring kustomize's 74 packages. The CLI takes kubectl's
// connection flags from kube.ConnectionFlags and its printers from cli-runtime's printers.
var notInCLI = []string{
	"k8s.io/cli-runtime/pkg/genericclioptions",
	"k8s.io/cli-runtime/pkg/resource",
	"sigs.k8s.io/kustomize/",
}

func TestCLILinksNoKustomize(t *testing.T) {
	for _, m := range shippedMains {
		for _, pkg := range deps(t, m.main, "linux") {
			if p := matches(pkg, notInCLI); p != "" {
				t.Errorf("%s links %s (%s): take kubectl's flags from kube.ConnectionFlags and the printers from cli-runtime's printers", m.main, pkg, p)
			}
		}
	}
}
