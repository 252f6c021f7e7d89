// Package doctor checks a live cluster for the node, kubelet and VPC CNI settings that break
// large EKS clusters, and for the node heartbeat problems of the lease taxonomy.
// Each check is a rule with a stable code (rules.go) and a pure function from inputs to findings
// (capacity.go, kubelet.go, cni.go, versions.go, heartbeats.go, apf.go), so that `nodekeeper
// bundle` can run the same checks on files; Run gathers the inputs from the API server: Nodes,
// node leases, the aws-node DaemonSet, each kubelet's configuration through the API server's node
// proxy (/api/v1/nodes/NAME/proxy/configz, at most one request per node, bounded concurrency) and
// the API server's /metrics. A missing permission turns the checks that need it into "skipped"
// findings; the run itself fails only when the API server cannot be used at all.
package doctor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/nodekeeper/nodekeeper/internal/eni"
	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/kube"
	"github.com/nodekeeper/nodekeeper/internal/lease"
	"github.com/nodekeeper/nodekeeper/internal/rules"
	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// Options tune a doctor run.
type Options struct {
	// Workers bounds the configz requests in flight (default DefaultWorkers).
	Workers int
	// ConfigzTimeout bounds one configz request (default 10 s).
	ConfigzTimeout time.Duration
	// ConfigzProgress, when set, is told how many of the Ready nodes' configz requests are
	// done (answered or failed) out of how many: once with 0 before the first, then after each
	// one, in order, never two at once; the last call has the final count. It must return
	// quickly: the workers wait for it.
	ConfigzProgress func(done, total int)
	// Limit is the client-side rate limit; QPS 0 means no client-side limit, as everywhere in
	// nodekeeper (the CLI's default is DefaultRateLimit).
	Limit kube.RateLimit
	// ChunkSize is the LIST page size (default kube.DefaultChunkSize).
	ChunkSize int64

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
	if o.ConfigzTimeout <= 0 {
		o.ConfigzTimeout = 10 * time.Second
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

// DefaultWorkers is how many configz requests doctor keeps in flight.
const DefaultWorkers = 16

// DefaultRateLimit is the CLI's client-side limit: one configz request per node must not take
// minutes on a large cluster, and API priority and fairness protects the server.
var DefaultRateLimit = kube.RateLimit{QPS: 100, Burst: 300}

// Validate reports options that cannot be used.
func (o Options) Validate() error {
	if err := o.Limit.Validate(); err != nil {
		return err
	}
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

// countingTransport counts every request the client sends.
type countingTransport struct {
	rt http.RoundTripper
	n  *atomic.Int64
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.rt.RoundTrip(r)
}

// Stat names in the report.
const (
	StatAPIRequests     = "apiRequests"
	StatConfigzRequests = "configzRequests"
	StatConfigzErrors   = "configzErrors"
	StatNodes           = "nodes"
	StatLeases          = "nodeLeases"
)

type runner struct {
	o       Options
	client  kubernetes.Interface
	dynamic dynamic.Interface
	// bulk reads the large lists (pods, events) as protobuf: a fraction of JSON's decoding cost
	// on tens of thousands of objects. The other requests (configz, /metrics) stay JSON/text.
	bulk kubernetes.Interface
	rest rest.Interface
	// mode and awsNodeEnv are what checkAWSNode read; capacity the per-node capacity results.
	mode       rules.CNIMode
	awsNodeEnv map[string]string
	capacity   map[string]NodeAddressInfo
	// types is the instance table, completed by EC2 with --aws (see ec2InstanceTypes).
	types *eni.Catalog
	// karpenterENIs is Karpenter's reservedENIs when found (karpenterSource says where).
	karpenterENIs   int
	karpenterSource string
	rep             *findings.Report
	server          string
	apiReqs         atomic.Int64
	configz         atomic.Int64
}

// Run checks the cluster that cfg points at.
func Run(ctx context.Context, cfg *rest.Config, o Options) (*findings.Report, error) {
	o.defaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	start := time.Now()
	r := &runner{o: o}
	cfg = kube.Configure(cfg, "doctor", o.Limit)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{rt: rt, n: &r.apiReqs} })
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	r.client, r.rest = client, client.CoreV1().RESTClient()
	if r.dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if r.bulk, err = kubernetes.NewForConfig(kube.Protobuf(cfg)); err != nil {
		return nil, err
	}
	sections := Sections
	if o.EC2 != nil {
		sections = append(append([][2]string(nil), Sections...), sectionEC2)
	}
	r.rep = findings.NewReport("doctor", cfg.Host, o.Now(), sections...)

	sv, err := client.Discovery().ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("reading the API server version: %w", err)
	}
	r.server = sv.GitVersion

	nodes, nodesErr := r.listNodes(ctx)
	if nodesErr != nil {
		return nil, nodesErr
	}
	r.rep.AddStat(StatNodes, int64(len(nodes)))

	mode, modeKnown, err := r.checkAWSNode(ctx)
	if err != nil {
		return nil, err
	}
	r.mode = mode
	if err := r.checkKarpenter(ctx); err != nil {
		return nil, err
	}
	configs := r.fetchConfigz(ctx, nodes)
	if o.EC2 != nil {
		if r.types, err = r.ec2InstanceTypes(ctx, nodes); err != nil {
			return nil, err
		}
	}
	r.checkNodes(nodes, mode, modeKnown, configs)
	if err := r.checkLeases(ctx, nodes); err != nil {
		return nil, err
	}
	if err := r.checkAPF(ctx); err != nil {
		return nil, err
	}
	if !o.SkipPodNetworking {
		if err := r.checkPodNetworking(ctx, nodes, r.capacity); err != nil {
			return nil, err
		}
	}
	if o.EC2 != nil {
		if err := r.checkEC2(ctx, nodes, mode.Settings); err != nil {
			return nil, err
		}
	}
	r.rep.AddStat(StatAPIRequests, r.apiReqs.Load())
	r.rep.AddStat(StatConfigzRequests, r.configz.Load())
	r.rep.Duration = time.Since(start)
	return r.rep, nil
}

// listNodes returns nil nodes (and a skipped finding) when listing is forbidden.
func (r *runner) listNodes(ctx context.Context) ([]corev1.Node, error) {
	var out []corev1.Node
	_, err := kube.Pages(ctx, "nodes", metav1.ListOptions{Limit: r.o.ChunkSize}, func(ctx context.Context, o metav1.ListOptions) (string, error) {
		l, err := r.bulk.CoreV1().Nodes().List(ctx, o)
		if err != nil {
			return "", err
		}
		out = append(out, l.Items...)
		return l.Continue, nil
	})
	if apierrors.IsForbidden(err) {
		for _, rule := range []findings.Rule{rules.RuleInstanceUnknown, RuleConfigz, RuleVersionSkew} {
			r.rep.Add(rule.Skip("nodes", "needs list on nodes"))
		}
		return nil, nil
	}
	return out, err
}

// checkAWSNode reads the VPC CNI DaemonSet, checks its settings and returns the address mode.
func (r *runner) checkAWSNode(ctx context.Context) (rules.CNIMode, bool, error) {
	res := "daemonset/" + r.o.AWSNodeNamespace + "/" + r.o.AWSNodeName
	mode := rules.CNIMode{ReservedENIs: r.o.ReservedENIs, Version: r.o.CNIVersion}
	override := func(m *rules.CNIMode) bool {
		if r.o.CustomNetworking != nil {
			m.Settings.CustomNetworking = *r.o.CustomNetworking
		}
		if r.o.PrefixDelegation != nil {
			m.Settings.PrefixDelegation = *r.o.PrefixDelegation
		}
		return r.o.CustomNetworking != nil || r.o.PrefixDelegation != nil
	}
	ds, err := r.client.AppsV1().DaemonSets(r.o.AWSNodeNamespace).Get(ctx, r.o.AWSNodeName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		r.rep.Add(RuleAWSNodeMissing.New(res, "not found"))
		known := override(&mode)
		return mode, known, nil
	case apierrors.IsForbidden(err):
		r.rep.Add(rules.RuleClusterEndpoint.Skip(res, "needs get on daemonsets in "+r.o.AWSNodeNamespace))
		known := override(&mode)
		return mode, known, nil
	case err != nil:
		return mode, false, fmt.Errorf("reading %s: %w", res, err)
	}
	r.rep.Checked(SectionAWSNode, 1)
	c := awsNodeContainer(ds)
	if c == nil {
		r.rep.Add(RuleAWSNodeMissing.New(res, "the DaemonSet has no aws-node container"))
		known := override(&mode)
		return mode, known, nil
	}
	env := map[string]string{}
	var unread []string
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			unread = append(unread, e.Name)
			continue
		}
		env[e.Name] = e.Value
	}
	in := rules.CNIInput{Resource: res, Env: env, Unread: unread, MinVersion: r.o.MinCNIVersion}
	if v, err := eni.VersionFromImage(c.Image); err == nil {
		in.Version = &v
		if mode.Version == "" {
			mode.Version = v.String()
		}
	}
	r.rep.Add(rules.CheckCNISettings(in)...)
	r.awsNodeEnv = env
	mode.Settings = eni.ParseSettings(env)
	override(&mode)
	return mode, true, nil
}

func awsNodeContainer(ds *appsv1.DaemonSet) *corev1.Container {
	cs := ds.Spec.Template.Spec.Containers
	for i := range cs {
		if cs[i].Name == "aws-node" {
			return &cs[i]
		}
	}
	for i := range cs {
		if strings.Contains(cs[i].Image, "amazon-k8s-cni:") {
			return &cs[i]
		}
	}
	return nil
}

type configzResult struct {
	cfg *rules.KubeletConfig
	err string // why it could not be read; "" when cfg is set
}

// fetchConfigz reads every Ready node's kubelet configuration through the API server's node
// proxy: one request per node, no retries, at most Workers in flight.
func (r *runner) fetchConfigz(ctx context.Context, nodes []corev1.Node) map[string]configzResult {
	out := make(map[string]configzResult, len(nodes))
	if len(nodes) == 0 {
		return out
	}
	allowed, reason, err := r.canGetNodesProxy(ctx)
	if err != nil {
		klog.ErrorS(err, "SelfSubjectAccessReview for nodes/proxy failed; trying the requests")
		allowed = true
	}
	if !allowed {
		r.rep.Add(RuleConfigz.Skip("nodes/proxy", "needs get on nodes/proxy ("+reason+")"))
		return out
	}
	var mu sync.Mutex // guards out, done and the progress calls
	work := make(chan string)
	var wg sync.WaitGroup
	var errs atomic.Int64
	done, total := 0, 0
	for i := range nodes {
		if nodeReady(&nodes[i]) {
			total++
		}
	}
	progress := func() {}
	if r.o.ConfigzProgress != nil {
		progress = func() { r.o.ConfigzProgress(done, total) }
	}
	progress()
	for i := 0; i < r.o.Workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range work {
				res := r.getConfigz(ctx, name)
				if res.err != "" {
					errs.Add(1)
				}
				mu.Lock()
				out[name] = res
				done++
				progress()
				mu.Unlock()
			}
		}()
	}
	for i := range nodes {
		n := &nodes[i]
		if !nodeReady(n) {
			out[n.Name] = configzResult{err: "node not Ready"}
			continue
		}
		select {
		case work <- n.Name:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
	r.rep.AddStat(StatConfigzErrors, errs.Load())
	return out
}

func (r *runner) getConfigz(ctx context.Context, node string) configzResult {
	if ctx.Err() != nil {
		return configzResult{err: ctx.Err().Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, r.o.ConfigzTimeout)
	defer cancel()
	r.configz.Add(1)
	raw, err := readConfigz(ctx, r.rest.Get().AbsPath("/api/v1/nodes", node, "proxy", "configz").MaxRetries(0))
	switch {
	case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "nodes/proxy"):
		// RBAC's denial names the resource; other 403s come from the path to the kubelet.
		return configzResult{err: "forbidden: needs get on nodes/proxy"}
	case err != nil:
		return configzResult{err: configzFailure(err)}
	}
	c, err := rules.ParseConfigz(raw)
	if err != nil {
		return configzResult{err: err.Error()}
	}
	return configzResult{cfg: &c}
}

// maxConfigzBytes bounds one /configz answer. A kubelet's is a few KiB; whatever answers on the
// node-proxy path in its place is not trusted to stay small, and thousands are read at once.
const maxConfigzBytes = 1 << 20

// readConfigz reads at most maxConfigzBytes of the answer and refuses a larger one, where DoRaw
// would hold all of it in memory. Non-2xx answers become errors as with DoRaw.
func readConfigz(ctx context.Context, req *rest.Request) ([]byte, error) {
	body, err := req.Stream(ctx)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	raw, err := io.ReadAll(io.LimitReader(body, maxConfigzBytes+1))
	if err != nil {
		return nil, err
	}
	if len(raw) > maxConfigzBytes {
		return nil, fmt.Errorf("the /configz answer is larger than %d bytes; a kubelet's is a few KiB", maxConfigzBytes)
	}
	return raw, nil
}

func (r *runner) canGetNodesProxy(ctx context.Context) (bool, string, error) {
	ssar := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "nodes", Subresource: "proxy"},
	}}
	res, err := r.client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, ssar, metav1.CreateOptions{})
	if err != nil {
		return false, "", err
	}
	reason := res.Status.Reason
	if reason == "" {
		reason = "denied"
	}
	return res.Status.Allowed, reason, nil
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// notVPCCNI reports nodes whose pod addresses do not come from the VPC CNI on ENIs.
func notVPCCNI(n *corev1.Node) string {
	switch n.Labels["eks.amazonaws.com/compute-type"] {
	case "fargate", "hybrid":
		return n.Labels["eks.amazonaws.com/compute-type"]
	}
	if n.Labels["kubernetes.io/os"] == "windows" {
		return "windows"
	}
	return ""
}

func instanceType(n *corev1.Node) string {
	if t := n.Labels[corev1.LabelInstanceTypeStable]; t != "" {
		return t
	}
	return n.Labels[corev1.LabelInstanceType]
}

func (r *runner) checkNodes(nodes []corev1.Node, mode rules.CNIMode, modeKnown bool, configs map[string]configzResult) {
	var cnTotal, cnStuck int
	var cnExample string
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	for i := range nodes {
		n := &nodes[i]
		res := "node/" + n.Name
		pods := int(n.Status.Capacity.Pods().Value())

		if v := n.Status.NodeInfo.KubeletVersion; v != "" {
			fs, err := CheckVersionSkew(res, v, r.server)
			if err != nil {
				r.rep.Add(RuleVersionSkew.Skip(res, err.Error()))
			} else {
				r.rep.Checked(SectionVersions, 1)
				r.rep.Add(fs...)
			}
		}

		if c, ok := configs[n.Name]; ok {
			if c.cfg != nil {
				r.rep.Checked(SectionKubelet, 1)
				r.rep.Add(rules.CheckKubeletConfig(res, "configz", *c.cfg, pods)...)
				r.rep.Add(rules.CheckMaxPodsAgreement(res, *c.cfg, pods)...)
			} else {
				r.rep.Add(RuleConfigz.Skip(res, c.err))
			}
		}

		if !modeKnown || notVPCCNI(n) != "" {
			continue
		}
		nc := rules.NodeCapacity{Resource: res, InstanceType: instanceType(n), CapacityPods: pods, Types: r.types}
		if cpu := n.Status.Capacity.Cpu(); cpu != nil && cpu.Value() > 0 {
			nc.VCPUs, nc.VCPUSource = int(cpu.Value()), "node capacity"
		}
		nodeMode := r.nodeMode(n, mode)
		cr := rules.CheckPodCapacity(nc, nodeMode)
		if r.capacity == nil {
			r.capacity = map[string]NodeAddressInfo{}
		}
		r.capacity[n.Name] = NodeAddressInfo{Node: n, Capacity: cr, CustomNetworking: nodeMode.Settings.CustomNetworking, ModeText: modeText(nodeMode)}
		if cr.Evaluated {
			r.rep.Checked(SectionNodes, 1)
		}
		for j := range cr.Findings {
			if cr.Findings[j].Code != rules.RuleMaxPodsAboveIPs.Code {
				continue
			}
			if c, ok := configs[n.Name]; ok && c.cfg != nil && c.cfg.MaxPods != nil {
				cr.Findings[j] = cr.Findings[j].WithEvidence(fmt.Sprintf("kubelet configuration (configz): maxPods %d", *c.cfg.MaxPods))
			}
			cr.Findings[j] = cr.Findings[j].WithEvidence(nodeMaxPodsFix(n, cr.IPLimit, mode.Settings.CustomNetworking))
		}
		r.rep.Add(cr.Findings...)
		if mode.Settings.CustomNetworking && cr.Evaluated {
			cnTotal++
			if pods > cr.IPLimit {
				cnStuck++
				if cnExample == "" {
					how := "a value of its own"
					switch {
					case pods == rules.DefaultMaxPods:
						how = "the kubelet default"
					case pods == cr.WithoutCustomNetworking:
						how = "the value without custom networking"
					}
					cnExample = fmt.Sprintf("%s (%s): max pods %d (%s), %d addresses with custom networking", n.Name, nc.InstanceType, pods, how, cr.IPLimit)
				}
			}
		}
	}
	if cnStuck > 0 {
		r.rep.Add(RuleCustomNoMaxPods.New("daemonset/"+r.o.AWSNodeNamespace+"/"+r.o.AWSNodeName,
			"AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG=true but %d of %d nodes allow more pods than custom networking leaves addresses for, e.g. %s", cnStuck, cnTotal, cnExample))
	}
}

func (r *runner) checkLeases(ctx context.Context, nodes []corev1.Node) error {
	var leases []coordinationv1.Lease
	err := kube.ListLeases(ctx, r.bulk.CoordinationV1(), corev1.NamespaceNodeLease, r.o.ChunkSize, func(l *coordinationv1.LeaseList) error {
		leases = append(leases, l.Items...)
		return nil
	})
	if apierrors.IsForbidden(err) {
		r.rep.Add(RuleStaleHeartbeat.Skip("leases", "needs list on leases in "+corev1.NamespaceNodeLease))
		return nil
	}
	if err != nil {
		return err
	}
	r.rep.AddStat(StatLeases, int64(len(leases)))
	refs := make(map[string]lease.NodeRef, len(nodes))
	for i := range nodes {
		refs[nodes[i].Name] = lease.NodeRef{Name: nodes[i].Name, UID: nodes[i].UID}
	}
	names := map[string]bool{}
	for _, l := range leases {
		names[l.Name] = true
	}
	for n := range refs {
		names[n] = true
	}
	r.rep.Checked(SectionHeartbeats, len(names))
	r.rep.Add(CheckHeartbeats(leases, refs, r.o.Now(), r.o.Lease)...)
	return nil
}

func (r *runner) checkAPF(ctx context.Context) error {
	raw, err := r.rest.Get().AbsPath("/metrics").DoRaw(ctx)
	switch {
	case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
		r.rep.Add(RuleAPFUnavailable.Skip("apiserver", "needs get on the non-resource URL /metrics"))
		return nil
	case apierrors.IsNotFound(err):
		r.rep.Add(RuleAPFUnavailable.Skip("apiserver", "the API server serves no /metrics"))
		return nil
	case err != nil:
		r.rep.Add(RuleAPFUnavailable.Skip("apiserver", "reading /metrics: "+err.Error()))
		return nil
	}
	samples, err := ParseMetrics(raw, "apiserver_flowcontrol_")
	if err != nil {
		r.rep.Add(RuleAPFUnavailable.Skip("apiserver", err.Error()))
		return nil
	}
	fs, levels := CheckAPF(samples)
	r.rep.Checked(SectionAPF, levels)
	r.rep.Add(fs...)
	return nil
}

// configzFailure is the one-line reason a configz request failed, with the HTTP status when there
// is one. The error can quote whatever answered on the path to the kubelet (a proxy's HTML page, a
// kubelet's message in any language), so it is clipped to 200 characters on a character boundary
// and escaped.
func configzFailure(err error) string {
	msg := err.Error()
	var st apierrors.APIStatus
	if errors.As(err, &st) && st.Status().Code != 0 {
		msg = fmt.Sprintf("HTTP %d: %s", st.Status().Code, msg)
	}
	return textsafe.Clip(msg, 200)
}

// nodeMaxPodsFix is the evidence line with the max-pods fix for one node's OS and provisioner.
func nodeMaxPodsFix(n *corev1.Node, maxPods int, customNetworking bool) string {
	os, prov := rules.DetectNodeOS(n.Status.NodeInfo.OSImage), rules.DetectProvisioner(n.Labels)
	return fmt.Sprintf("fix for this node (%s, %s): %s", os, prov, rules.MaxPodsFix(os, prov, maxPods, customNetworking))
}
