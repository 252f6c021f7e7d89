// Package doctor checks a live cluster for the node, kubelet and VPC CNI settings that break
// large EKS clusters, and for the node heartbeat problems of the lease taxonomy.
//
// A run has two phases. Gather (gather*.go) reads the cluster once into one typed value, Facts:
// Nodes, node leases, the aws-node DaemonSet, Karpenter's settings, each kubelet's configuration
// through the API server's node proxy (/api/v1/nodes/NAME/proxy/configz, at most one request per
// node, bounded concurrency), the API server's /metrics, stuck pods and their sandbox events,
// kubelet-serving CSRs, ENIConfigs, CSINodes and CNINodes, each aws-node pod's ipamd metrics
// through the API server's pod proxy (pods/NAME:61678/proxy/metrics, at most one request per
// node, bounded concurrency), the add-ons (aws-node, kube-proxy, CoreDNS) with their pods, the
// kubelets' "pull QPS exceeded" events, Karpenter's and nodekeeper's controller Deployments
// (gather_addons.go), and with --aws what EC2 says. A read
// that is forbidden (or otherwise cannot be made) leaves its fact missing, with the reason
// ("needs list on pods"). Then each check (check_*.go, one small type per file) runs over the
// facts: a check that needs a missing fact is reported as skipped with that reason under its
// rule, and no check reads anything another check wrote. The pure rules doctor shares with
// bundle are in internal/rules. The run itself fails only when the API server cannot be used at
// all.
//
// Run takes its clients injected (Deps); the CLI builds them through internal/kube.
package doctor

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	nkaws "github.com/nodekeeper/nodekeeper/internal/aws"
	"github.com/nodekeeper/nodekeeper/internal/eni"
	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/kube"
	"github.com/nodekeeper/nodekeeper/internal/lease"
)

// Options tune a doctor run.
type Options struct {
	// Target names the cluster in the report (the CLI gives the API server's URL).
	Target string
	// Workers bounds the configz requests in flight (default DefaultWorkers).
	Workers int
	// ConfigzTimeout bounds one configz request (default 10 s).
	ConfigzTimeout time.Duration
	// ConfigzProgress, when set, is told how many of the Ready nodes' configz requests are
	// done (answered or failed) out of how many: once with 0 before the first, then after each
	// one, in order, never two at once; the last call has the final count. It must return
	// quickly: the workers wait for it.
	ConfigzProgress func(done, total int)
	// CNIMetricsWorkers bounds the aws-node /metrics requests in flight (default DefaultWorkers);
	// ConfigzTimeout bounds each one too.
	CNIMetricsWorkers int
	// CNIMetricsProgress is told how many of the Ready aws-node pods' metrics requests are done,
	// as ConfigzProgress is for configz.
	CNIMetricsProgress func(done, total int)
	// SkipCNIMetrics leaves out the aws-node metrics reads and their checks (for comparisons).
	SkipCNIMetrics bool
	// SkipConfigz leaves out the read of the kubelets' configuration through the node proxy: the
	// fact is missing (SkippedConfigz says why) unless the caller fills it another way. The
	// controller's check loop sets it: it never reads nodes/proxy, whose get also authorizes exec
	// in every container, whatever its credentials allow (--checks-kubelet-config reads
	// nodes/configz from the kubelets themselves).
	SkipConfigz bool
	// ChunkSize is the LIST page size (default kube.DefaultChunkSize). Pods and Events are read
	// in pages of at most ChunkSize objects and at most MaxPageBytes (see pagebudget.go).
	ChunkSize int64
	// pageBytes is MaxPageBytes; tests lower it to see a page asked for again smaller.
	pageBytes int64

	// AWSNodeNamespace/AWSNodeName locate the VPC CNI DaemonSet (kube-system/aws-node).
	AWSNodeNamespace, AWSNodeName string
	// CustomNetworking and PrefixDelegation override what the aws-node environment says (nil: use it).
	CustomNetworking, PrefixDelegation *bool
	// CNIVersion overrides the version read from the aws-node image.
	CNIVersion string
	// ReservedENIs are ENIs kept from pods besides custom networking and the trunk ENI (for
	// example Karpenter's reservedENIs when used for another purpose).
	ReservedENIs int
	// MinCNIVersion is the VPC CNI version below which a warning is given (zero: default).
	MinCNIVersion eni.Version
	// Lease tunes the lease classification (grace period; zero: lease.DefaultGracePeriod).
	Lease lease.Options
	// Now returns the time used for lease classification (default time.Now).
	Now func() time.Time

	// StuckAfter is how long a pod may wait in ContainerCreating before it counts as stuck
	// (default 2m).
	StuckAfter time.Duration
	// CSRPendingAfter is how long a kubelet-serving CSR may stay without a certificate (default 5m).
	CSRPendingAfter time.Duration
	// SkipPodNetworking leaves out the "Pod networking" section (for comparisons; the CLI
	// always runs it).
	SkipPodNetworking bool
	// EC2, when set, adds the EC2 section (doctor --aws; ec2.go).
	EC2 *EC2Options
}

func (o *Options) defaults() {
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.CNIMetricsWorkers <= 0 {
		o.CNIMetricsWorkers = DefaultWorkers
	}
	if o.ConfigzTimeout <= 0 {
		o.ConfigzTimeout = 10 * time.Second
	}
	if o.pageBytes <= 0 {
		o.pageBytes = MaxPageBytes
	}
	if o.ChunkSize <= 0 {
		o.ChunkSize = kube.DefaultChunkSize
	}
	if o.AWSNodeNamespace == "" {
		o.AWSNodeNamespace = "kube-system"
	}
	if o.AWSNodeName == "" {
		o.AWSNodeName = "aws-node"
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.StuckAfter <= 0 {
		o.StuckAfter = DefaultStuckAfter
	}
	if o.CSRPendingAfter <= 0 {
		o.CSRPendingAfter = DefaultCSRPendingAfter
	}
}

// WithDefaults is o with its defaults applied, as Run applies them: what Gather and ChecksFor
// expect when called on their own.
func (o Options) WithDefaults() Options {
	o.defaults()
	return o
}

// DefaultWorkers is how many configz requests doctor keeps in flight.
const DefaultWorkers = 16

// DefaultRateLimit is the CLI's client-side limit: one configz request per node must not take
// minutes on a large cluster, and API priority and fairness protects the server.
var DefaultRateLimit = kube.RateLimit{QPS: 100, Burst: 300}

// Validate reports options that cannot be used.
func (o Options) Validate() error {
	if o.StuckAfter < 0 || o.CSRPendingAfter < 0 {
		return fmt.Errorf("stuck-after and csr-pending-after must not be negative")
	}
	if o.ReservedENIs < 0 {
		return fmt.Errorf("reserved ENIs must not be negative, got %d", o.ReservedENIs)
	}
	if o.CNIVersion != "" {
		if _, err := eni.ParseVersion(o.CNIVersion); err != nil {
			return err
		}
	}
	return o.Lease.Validate()
}

// Deps are the clients a doctor run reads with, injected as the controller's are, so that the
// gather phase runs against fake clientsets in unit tests and against a real API server in the
// control-plane tests. DepsFrom maps kube.Clients onto them.
type Deps struct {
	// Client reads what is small or has no protobuf: discovery, the aws-node DaemonSet,
	// Karpenter's Deployment and ConfigMap, SelfSubjectAccessReviews, CSRs and CSINodes.
	Client kube.Interface
	// Bulk reads the large lists (Nodes, leases, pods, events) as protobuf: a fraction of JSON's
	// decoding cost on tens of thousands of objects.
	Bulk kube.Interface
	// Dynamic reads the custom resources (ENIConfigs, CNINodes).
	Dynamic dynamic.Interface
	// REST sends the raw requests: each kubelet's /configz through the node proxy and /metrics
	// (nil: those facts are missing, for unit tests that do not need them).
	REST rest.Interface
	// Proxy sends the aws-node pods' ipamd /metrics requests through the pod proxy (nil: REST).
	// The API server treats proxy requests as long-running, outside API priority and fairness
	// and its in-flight limits (BasicLongRunningRequestCheck in kube-apiserver), so what bounds
	// them is CNIMetricsWorkers in flight; DepsFrom gives them a side client without the
	// command's rate limit, so that 2,000 of them do not queue behind it for 20 s.
	Proxy rest.Interface
	// Requests, when set, returns how many requests the clients have sent (StatAPIRequests).
	Requests func() int64

	// The AWS clients of the EC2 section (Options.EC2; doctor --aws), as the Kubernetes ones
	// are: EC2 reads instances, subnets, instance types and volumes; CloudWatch the root
	// volumes' metrics (nil: boot volumes are not checked); LaunchTemplates, when set, adds the
	// launch template checks (launchtemplates.go), with the managed node groups from Nodegroups (allclients.Nodegroups adapts the EKS client)
	// and the self-managed groups from AutoScaling when set.
	EC2             nkaws.EC2API
	CloudWatch      nkaws.CloudWatchAPI
	LaunchTemplates nkaws.LaunchTemplatesAPI
	Nodegroups      nkaws.NodegroupTemplatesAPI
	AutoScaling     nkaws.AutoScalingAPI
}

// DepsFrom maps clients built by kube.NewClients onto Deps: a protobuf clientset of the same
// configuration whose pod and event pages are bounded in bytes for the bulk lists, the JSON one
// for the rest, and its REST client for configz and /metrics; the aws-node
// metrics go through a side client of the same configuration without its rate limit (Proxy).
func DepsFrom(c *kube.Clients, requests func() int64) Deps {
	d := Deps{Client: c.JSON, Bulk: c.Kube, Dynamic: c.Dynamic, REST: c.JSON.CoreV1().RESTClient(), Requests: requests}
	if c.Config != nil {
		// The bulk client's answers to pod and event LISTs are read within MaxPageBytes
		// (pagebudget.go); its transport is the configuration's, wrapped.
		cfg := kube.Protobuf(c.Config)
		cfg.Wrap(budgetTransport)
		if bulk, err := kube.NewForConfig(cfg); err == nil {
			d.Bulk = bulk
		}
		// The side client counts in requests too: it copies the configuration's transport.
		if side, err := kube.NewForConfig(kube.SideConfig(c.Config, "cni-metrics", kube.RateLimit{})); err == nil {
			d.Proxy = side.CoreV1().RESTClient()
		}
	}
	return d
}

// Stat names in the report.
const (
	StatAPIRequests     = "API requests"
	StatConfigzRequests = "configz requests"
	StatConfigzErrors   = "configz errors"
	StatNodes           = "nodes"
	StatLeases          = "node leases"
)

// Run checks the cluster deps talk to: it gathers the facts, then runs every check over them.
func Run(ctx context.Context, deps Deps, o Options) (*findings.Report, error) {
	o.defaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if deps.Client == nil || deps.Bulk == nil {
		return nil, fmt.Errorf("doctor: no API client")
	}
	start := time.Now()
	f, err := Gather(ctx, deps, o)
	if err != nil {
		return nil, err
	}
	sections := Sections
	if o.EC2 != nil {
		sections = append(append([]findings.SectionSpec(nil), Sections...), sectionEC2)
		if deps.LaunchTemplates != nil {
			sections = append(sections, sectionBootstrap)
		}
	}
	rep := findings.NewReport("doctor", o.Target, o.Now(), sections...)
	RunChecks(rep, f, ChecksFor(o, deps))
	for name, v := range f.Stats {
		rep.AddStat(name, v)
	}
	if deps.Requests != nil {
		rep.AddStat(StatAPIRequests, deps.Requests())
	}
	rep.Duration = time.Since(start)
	return rep, nil
}
