package archtest

import "slices"

// The import rules of docs/architecture.md, as data. Package paths are relative to the module
// ("internal/lease"); "P/..." stands for P and every package below it. Other imports are path
// prefixes ("k8s.io/client-go" covers its packages); the standard library is always allowed.

// harness are the packages that exist only for tests, all under one folder as Karpenter keeps
// its pkg/test: no product package imports one.
var harness = []string{
	"internal/test/...",
}

// nobodyImports are imported by no package of the module, in its tests either, except by the
// packages listed.
var nobodyImports = []struct {
	path        string
	except      []string // importers allowed
	exceptTests []string // importers whose tests alone are allowed
	doc         string
}{
	{path: "cmd/...", except: []string{"cmd/..."},
		// gc's cli_test.go runs `nodekeeper gc` in-process on gc's seeded control plane.
		exceptTests: []string{"internal/gc"},
		doc:         "cmd is wiring only: nothing outside cmd imports it"},
	{path: "k8s.io/kubernetes/...",
		doc: "k8s.io/kubernetes never enters the product's go.mod: tools/controlplane builds the control plane"},
}

// clientLibs are the libraries of a controller talking to the API server.
var clientLibs = []string{
	"k8s.io/client-go", "k8s.io/apimachinery", "k8s.io/api", "k8s.io/klog/v2", "k8s.io/utils",
	"github.com/prometheus/client_golang", "github.com/spf13/cobra", "github.com/spf13/pflag",
}

// ec2SDK are the AWS SDK parts of the controller's EC2 loop: the default credential chain
// (config, which brings sts, sso and the instance metadata client), and the EC2 client with its
// retry and error types; internal/instances uses all but config.
var ec2SDK = []string{
	"github.com/aws/aws-sdk-go-v2/config",
	"github.com/aws/aws-sdk-go-v2/service/ec2", "github.com/aws/aws-sdk-go-v2/aws/retry", "github.com/aws/smithy-go",
}

// none is an empty list that is checked: no import of that sort at all.
var none = []string{}

// rule constrains what the non-test files of the packages pkgs import. Several rules can apply
// to one package; every one of them holds.
type rule struct {
	pkgs string
	// may, when not nil, is the complete list of nodekeeper packages they may import.
	may []string
	// external, when not nil, is the complete list of other non-standard imports they may make.
	external []string
	// never are imports they never make.
	never []string
	doc   string // what docs/architecture.md says
}

var rules = []rule{
	{pkgs: "...", never: []string{"k8s.io/client-go/tools/pager"},
		doc: "the one LIST pagination loop is kube.Pages: nobody writes a client-go pager"},

	{pkgs: "cmd/nodekeeper", may: []string{"cmd/nodekeeper/app", "internal/cli"},
		doc: "cmd/nodekeeper is main.go only: the streams, the signal context, the exit code"},
	{pkgs: "cmd/nodekeeper-controller", may: []string{"internal/cli", "internal/controller/command"},
		doc: "the controller's binary runs the controller's command and nothing of the CLI"},

	{pkgs: "internal/lease", may: none, external: []string{"k8s.io/api", "k8s.io/apimachinery"},
		doc: "lease stays pure: no client code, no internal/kube"},
	{pkgs: "internal/kube", may: []string{"internal/buildinfo"},
		external: []string{"k8s.io/client-go", "k8s.io/apimachinery", "k8s.io/api", "github.com/spf13/pflag"},
		doc:      "kube imports client-go, apimachinery, the API types, pflag and buildinfo only"},
	{pkgs: "internal/deleter", may: []string{"internal/kube", "internal/lease"},
		doc: "the deleter takes its clients from kube and classifies with lease"},
	{pkgs: "internal/controller", external: clientLibs,
		may: []string{"internal/lease", "internal/deleter", "internal/kube", "internal/textsafe", "internal/buildinfo"},
		doc: "the controller imports lease, deleter, kube, textsafe, buildinfo and client libraries, never cmd or another command's package"},
	{pkgs: "internal/controller/command", external: clientLibs,
		may: []string{"internal/controller", "internal/controller/ec2loop", "internal/controller/checks", "internal/doctor", "internal/aws", "internal/kube", "internal/lease", "internal/cli"},
		doc: "the controller's command line wires the controller, its EC2 and check loops (doctor's EC2 options, internal/aws's EC2 interface), kube, cli and client libraries"},
	// The check loop runs doctor's and plan's reads and checks; never their printers or another
	// command's package.
	{pkgs: "internal/controller/checks", external: clientLibs,
		may: []string{"internal/clusterread", "internal/doctor", "internal/plan", "internal/plan/gather", "internal/findings", "internal/rules", "internal/aws", "internal/kube", "internal/textsafe"},
		doc: "the controller's check loop imports clusterread, doctor, plan and its gather, findings, rules, internal/aws's EC2 interface, kube, textsafe and client libraries"},
	// The EC2 loop is the one part of the controller that talks to AWS: the EC2 client and the
	// SDK's default credential chain, nothing of internal/aws (CloudWatch Logs, EKS, the
	// instance-type table) and no other command's package.
	{pkgs: "internal/controller/ec2loop", external: append(slices.Clone(clientLibs), ec2SDK...),
		may: []string{"internal/instances", "internal/kube", "internal/lease", "internal/textsafe"},
		doc: "the controller's EC2 loop imports instances, kube, lease, textsafe, client libraries and the SDK's EC2 client and credential chain"},
	{pkgs: "internal/instances", may: none, external: ec2SDK[1:],
		doc: "instances is the EC2 listing and the pure comparison, over the SDK's EC2 client alone"},
	{pkgs: "internal/gc", may: []string{"internal/deleter", "internal/kube", "internal/kubeprint", "internal/lease", "internal/textsafe", "internal/typemeta"},
		doc: "gc is bulk collection on top of the deleter"},
	{pkgs: "internal/leasesview", may: []string{"internal/aws", "internal/kube", "internal/kubeprint", "internal/lease", "internal/textsafe", "internal/typemeta"},
		doc: "leases lists through kube and classifies with lease"},
	{pkgs: "internal/kubeprint", may: []string{"internal/textsafe"},
		doc: "kubectl's object output, shared by leases and gc"},

	{pkgs: "internal/audit", may: none,
		doc: "audit holds the end-to-end tests; callers import read, analyze and render"},
	{pkgs: "internal/audit/read", may: none, external: none,
		doc: "read needs the standard library only"},
	{pkgs: "internal/audit/analyze", may: []string{"internal/audit/read"}, external: none,
		doc: "analyze imports read"},
	{pkgs: "internal/audit/render", may: []string{"internal/audit/analyze", "internal/textsafe", "internal/reportpage"},
		external: []string{"k8s.io/cli-runtime/pkg/printers", "github.com/liggitt/tabwriter"},
		doc:      "render imports analyze, textsafe, the reports' shared page style and kubectl's table layout, never read"},
	{pkgs: "internal/aws/cwaudit", may: []string{"internal/aws", "internal/aws/allclients", "internal/audit/read"},
		doc: "cwaudit hands an audit log to audit as one read.Input"},

	// The controller links internal/aws through doctor: the services only the CLI calls
	// (CloudWatch Logs, EKS) are named in allclients alone, so that its binary links neither.
	{pkgs: "internal/aws", may: []string{"internal/eni"},
		never: []string{"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs", "github.com/aws/aws-sdk-go-v2/service/eks"},
		doc:   "aws is the narrow interfaces over the SDK, and the instance catalog; CloudWatch Logs and EKS are allclients'"},
	{pkgs: "internal/aws/allclients", may: []string{"internal/aws"},
		doc: "allclients builds every client the CLI calls over internal/aws"},
	{pkgs: "internal/eni", may: []string{"internal/typemeta"}, never: []string{"github.com/aws/aws-sdk-go-v2"},
		doc: "eni imports no AWS SDK"},
	{pkgs: "internal/maxpods", may: []string{"internal/aws", "internal/eni", "internal/textsafe"},
		doc: "maxpods looks types up in eni's table, or EC2 through aws"},
	{pkgs: "internal/clusterread", may: []string{"internal/eni", "internal/kube", "internal/rules", "internal/textsafe"},
		external: append(slices.Clone(clientLibs), "github.com/prometheus/common"),
		doc:      "clusterread is the one reader of the cluster state doctor, plan and the controller judge: eni, kube, rules, textsafe and client libraries only"},
	{pkgs: "internal/doctor", never: []string{"internal/bundle"},
		doc: "doctor never imports bundle"},
	{pkgs: "internal/ipamdmetrics", may: []string{"internal/textsafe"}, external: none,
		doc: "ipamdmetrics is a pure, bounded reader of ipamd's /metrics: the standard library and textsafe only"},
	{pkgs: "internal/plan/...", never: []string{"internal/doctor"},
		doc: "plan never imports doctor: what both read of a cluster is clusterread"},
	{pkgs: "internal/plan", may: []string{"internal/eni", "internal/rules"},
		doc: "plan's model is pure functions over its Input: eni and rules only"},
	{pkgs: "internal/plan/gather", may: []string{"internal/aws", "internal/clusterread", "internal/eni", "internal/instances", "internal/kube", "internal/plan", "internal/rules", "internal/textsafe"},
		doc: "plan's gather reads through clusterread, kube, instances and aws into plan's Input"},
	{pkgs: "internal/plan/render", may: []string{"internal/plan", "internal/reportpage", "internal/textsafe", "internal/typemeta"},
		doc: "plan's printers import the model, the reports' page style, textsafe and typemeta"},
	{pkgs: "internal/plan/scenario", may: []string{"internal/plan", "internal/plan/gather", "internal/typemeta"},
		doc: "a scenario file becomes gather's requests"},
	{pkgs: "internal/test/planreplay", may: []string{"internal/eni", "internal/kubeletsim", "internal/plan"},
		doc: "replay runs a plan with simulated kubelets"},
	{pkgs: "internal/bundle", never: []string{"internal/doctor"},
		doc: "bundle never imports doctor: the rules both use are internal/rules"},
	{pkgs: "internal/explain", may: []string{"internal/aws", "internal/audit/analyze", "internal/audit/read", "internal/bundle", "internal/clusterread", "internal/doctor",
		"internal/findings", "internal/instances", "internal/kube", "internal/lease", "internal/reportpage", "internal/textsafe", "internal/typemeta"},
		doc: "explain joins one node's sources and judges them with doctor, bundle, lease and audit's readers; it re-implements none of them"},
	{pkgs: "internal/bootstrap", may: []string{"internal/eni", "internal/findings", "internal/rules", "internal/textsafe"},
		doc: "bootstrap reads user data, pure, for bundle and doctor: eni, findings, rules and textsafe only"},
	{pkgs: "internal/rules", may: []string{"internal/eni", "internal/findings", "internal/textsafe"},
		doc: "rules are pure functions over what was read: eni, findings and textsafe only"},

	{pkgs: "internal/buildinfo", may: []string{"internal/typemeta", "internal/textsafe"}, doc: "buildinfo is a leaf but for its document's apiVersion and the JSON escaping rule"},
	{pkgs: "internal/cli", may: []string{"internal/textsafe"}, doc: "cli escapes errors with textsafe and imports nothing else of nodekeeper's"},
	{pkgs: "internal/progress", may: none, doc: "progress is a leaf"},
	{pkgs: "internal/reportpage", may: none, external: none, doc: "the HTML reports' shared page style is a leaf of the standard library"},
	{pkgs: "internal/textsafe", may: none, doc: "textsafe is a leaf"},
	{pkgs: "internal/typemeta", may: none, doc: "typemeta is a leaf"},
	{pkgs: "internal/controlplane", may: none, doc: "controlplane is a leaf"},
	{pkgs: "internal/kubeletsim", may: none, doc: "the simulated kubelets are a leaf"},
	{pkgs: "internal/sandbox", may: []string{"internal/controlplane", "internal/kubeletsim"},
		doc: "the sandbox is a control plane and simulated kubelets"},
	{pkgs: "internal/test/testenv", may: []string{"internal/controlplane", "internal/kubeletsim"},
		doc: "testenv is the control plane and the simulated kubelets, for tests"},
}
