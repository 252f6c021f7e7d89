// Package explain tells one node's whole story on one timeline (`nodekeeper explain TARGET`):
// the Node, its lease, the Events on it and its pods, its stuck pods with the cause ipamd's
// figures show, its kubelet's configuration, what the audit log says happened to it (who
// created and deleted it, what its kubelet did after), what EC2 says of its instance (state,
// Auto Scaling group, launch-template version and that version's user data) and what its
// logs-collector bundle says of its boot; then the findings that concern it, with the codes
// doctor and bundle give them, and the fix commands, each once.
//
// Every read is read-only and cheap: a GET of the Node and of its lease, field-selected LISTs
// of its pods and its Events, one configz and one ipamd /metrics request through the API
// server's proxies; a cluster-wide LIST only to find the Node of an instance ID or IP without
// --aws, or to name the nearest matches of an unknown target. A read that is refused or fails
// is a named gap on the timeline (its verb and resource), and the rest goes on.
//
// The judging is not written again here: the lease class is internal/lease's, the node checks
// are doctor's (doctor.NodeFacts, doctor.NodeChecks, doctor.RunChecks), the instance's are
// doctor.CheckEC2 and doctor.CheckTemplateVersion, the audit log is read by audit's bounded
// readers (audit/read, audit/analyze) and the bundle by internal/bundle.
package explain

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/client-go/rest"

	"github.com/nodekeeper/nodekeeper/internal/audit/read"
	nkaws "github.com/nodekeeper/nodekeeper/internal/aws"
	"github.com/nodekeeper/nodekeeper/internal/bundle"
	"github.com/nodekeeper/nodekeeper/internal/doctor"
	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/kube"
	"github.com/nodekeeper/nodekeeper/internal/lease"
	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// Kind is the kind of explain's JSON and YAML document.
const Kind = "NodeStory"

// Sources of the timeline's lines.
const (
	SourceNode       = "Node"
	SourceLease      = "lease"
	SourceEvent      = "Event"
	SourcePod        = "pod"
	SourceIPAMD      = "ipamd"
	SourceConfigz    = "configz"
	SourceAudit      = "audit"
	SourceCloudWatch = "CloudWatch"
	SourceEC2        = "EC2"
	SourceBundle     = "bundle"
)

// Options say what to explain and where to look.
type Options struct {
	// Target is what the user named: a Node name, an instance ID, a providerID, a lease name,
	// a private DNS name or a node IP.
	Target string
	// Now is the time the story is told at (default time.Now).
	Now func() time.Time
	// Lease tunes the lease classification.
	Lease lease.Options
	// Doctor holds the settings of doctor's node checks (aws-node's place, stuck-after,
	// configz timeout).
	Doctor doctor.Options
	// ChunkSize is the page size of the LISTs (default 500).
	ChunkSize int64
	// Audit are audit log inputs (--audit-log files, or --cloudwatch's), read with audit's
	// bounded readers; AuditSource labels their lines (SourceAudit or SourceCloudWatch).
	Audit       []read.Input
	AuditSource string
	// AWS, when set, reads the instance from EC2 (--aws).
	AWS *AWSOptions
	// Bundles are logs-collector bundles (--bundle); each must be this node's.
	Bundles []string
}

// AWSOptions are the AWS clients and names explain --aws reads with.
type AWSOptions struct {
	EC2             nkaws.EC2API
	LaunchTemplates nkaws.LaunchTemplatesAPI
	AutoScaling     nkaws.AutoScalingAPI
	// Metrics, when set, reads the boot volume's IO from CloudWatch (AWS/EBS) over the
	// BootWindow after the launch (default doctor.DefaultBootWindow).
	Metrics         nkaws.CloudWatchAPI
	BootWindow      time.Duration
	Cluster, Region string
	// Calls, when set, returns how many AWS calls were made.
	Calls func() int64
}

// Deps are the clients explain reads the cluster with (doctor's, see doctor.Deps).
type Deps struct {
	Client, Bulk kube.Interface
	// REST reads the kubelet's /configz through the node proxy, Proxy ipamd's /metrics through
	// the pod proxy (nil: REST).
	REST, Proxy rest.Interface
	// Requests returns how many requests the clients have sent.
	Requests func() int64
}

// Story is one node's story: the document `-o json|yaml` prints (kind NodeStory).
type Story struct {
	Generated time.Time `json:"generated"`
	Target    Target    `json:"target"`
	// Timeline is oldest first; lines without a time (gaps) come last.
	Timeline []Line `json:"timeline"`
	// Gaps are the reads that were refused or failed.
	Gaps []Gap `json:"gaps"`
	// Findings concern this node, with the codes doctor and bundle give them.
	Findings []findings.Finding `json:"findings"`
	// Fixes are the findings' remediations, each once, most severe first. Commands in them
	// (a zombie's terminate command) are printed, never run.
	Fixes    []string `json:"fixes"`
	Requests Requests `json:"requests"`
}

// Target is what the target resolved to.
type Target struct {
	Given string `json:"given"`
	// As is how the target was read: node, lease, instance, providerID, dns, ip.
	As         string `json:"as"`
	Node       string `json:"node"`
	NodeExists bool   `json:"nodeExists"`
	Lease      string `json:"lease,omitempty"`
	LeaseClass string `json:"leaseClass,omitempty"`
	InstanceID string `json:"instanceID,omitempty"`
	ProviderID string `json:"providerID,omitempty"`
	InternalIP string `json:"internalIP,omitempty"`
}

// Line is one line of the timeline.
type Line struct {
	Time time.Time `json:"time,omitzero"`
	// Source is where it was read: Node, lease, Event, pod, ipamd, configz, audit, CloudWatch,
	// EC2, bundle; Where the file:line for audit, CloudWatch and bundle lines.
	Source string `json:"source"`
	Where  string `json:"where,omitempty"`
	What   string `json:"what"`
	// Gap marks a read that was refused or failed.
	Gap bool `json:"gap,omitempty"`
}

// Gap is a read that was refused or failed: its source, verb and resource, and why.
type Gap struct {
	Source   string `json:"source"`
	Verb     string `json:"verb"`
	Resource string `json:"resource"`
	Reason   string `json:"reason"`
}

// Requests counts what the story cost.
type Requests struct {
	Kubernetes int64 `json:"kubernetes"`
	AWS        int64 `json:"aws"`
}

// TargetError is a target that names no node, or more than one: the CLI exits 2 with it.
type TargetError struct {
	Target string
	// Ambiguous: it matches several nodes (Nearest lists them).
	Ambiguous bool
	Nearest   []string
}

func (e *TargetError) Error() string {
	if e.Ambiguous {
		return fmt.Sprintf("%q matches %d nodes: %s; name one of them", e.Target, len(e.Nearest), strings.Join(e.Nearest, ", "))
	}
	msg := fmt.Sprintf("%q names no Node, node lease, instance or audit-log node", e.Target)
	if len(e.Nearest) > 0 {
		msg += "; nearest: " + strings.Join(e.Nearest, ", ")
	}
	return msg
}

// ErrBundle is wrapped by the error for a bundle of another node, or of no node it can tell.
var ErrBundle = errors.New("bundle of another node")

// teller holds one run.
type teller struct {
	d   Deps
	o   Options
	now time.Time
	s   *Story

	// what was read
	node  *nodeRead
	lease *leaseRead
	inst  *instanceRead
	cl    *cluster
	// deletions are the Node's deletions in the audit log (for NK801's evidence).
	deletions []doctor.NodeDeletion
	deletedAt time.Time
	fs        []findings.Finding
	templates []doctor.TemplateVersion
	// boot is the instance's boot volume and its metrics over the boot window (NK805).
	boot    *doctor.BootVolume
	stories []*bundle.Story
}

// Tell resolves the target, reads every source and tells the story. A *TargetError means the
// target named no node or several; other errors mean the API server could not be used at all.
func Tell(ctx context.Context, d Deps, o Options) (*Story, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ChunkSize <= 0 {
		o.ChunkSize = 500
	}
	o.AWS = counted(o.AWS)
	if o.AuditSource == "" {
		o.AuditSource = SourceAudit
	}
	if err := o.Lease.Validate(); err != nil {
		return nil, err
	}
	if d.Client == nil || d.Bulk == nil {
		return nil, errors.New("explain: no API client")
	}
	t := &teller{d: d, o: o, now: o.Now().UTC()}
	t.s = &Story{Generated: t.now, Target: Target{Given: o.Target}, Timeline: []Line{}, Gaps: []Gap{}, Findings: []findings.Finding{}, Fixes: []string{}}
	if err := t.resolve(ctx); err != nil {
		return nil, err
	}
	if err := t.readCluster(ctx); err != nil {
		return nil, err
	}
	if err := t.readAudit(); err != nil {
		return nil, err
	}
	if err := t.readAWS(ctx); err != nil {
		return nil, err
	}
	if err := t.readBundles(); err != nil {
		return nil, err
	}
	t.judge()
	t.finish()
	return t.s, nil
}

// add puts one line on the timeline.
func (t *teller) add(at time.Time, source, where, format string, args ...any) {
	t.s.Timeline = append(t.s.Timeline, Line{Time: at.UTC(), Source: source, Where: where, What: fmt.Sprintf(format, args...)})
}

// gap records a read that was refused or failed, on the timeline and in Gaps.
func (t *teller) gap(source, verb, resource string, err error) {
	reason := "failed"
	if err != nil {
		reason = textsafe.ClipRaw(err.Error(), 300)
	}
	t.s.Gaps = append(t.s.Gaps, Gap{Source: source, Verb: verb, Resource: resource, Reason: reason})
	t.s.Timeline = append(t.s.Timeline, Line{Source: source, What: fmt.Sprintf("not read: %s %s (%s)", verb, resource, reason), Gap: true})
}

// finish orders the timeline, the findings and the fixes, and counts the requests.
func (t *teller) finish() {
	sort.SliceStable(t.s.Timeline, func(i, j int) bool {
		a, b := t.s.Timeline[i], t.s.Timeline[j]
		if a.Time.IsZero() != b.Time.IsZero() {
			return !a.Time.IsZero()
		}
		return a.Time.Before(b.Time)
	})
	sort.SliceStable(t.fs, func(i, j int) bool {
		if t.fs[i].Severity != t.fs[j].Severity {
			return t.fs[i].Severity > t.fs[j].Severity
		}
		if t.fs[i].Code != t.fs[j].Code {
			return t.fs[i].Code < t.fs[j].Code
		}
		return t.fs[i].Resource < t.fs[j].Resource
	})
	seenF := map[string]bool{}
	seenFix := map[string]bool{}
	for _, f := range t.fs {
		k := f.Code + "\x00" + f.Resource + "\x00" + f.Message
		if seenF[k] {
			continue
		}
		seenF[k] = true
		t.s.Findings = append(t.s.Findings, f)
		if f.Severity > findings.Skipped && f.Remediation != "" && !seenFix[f.Remediation] {
			seenFix[f.Remediation] = true
			t.s.Fixes = append(t.s.Fixes, f.Remediation)
		}
	}
	if t.d.Requests != nil {
		t.s.Requests.Kubernetes = t.d.Requests()
	}
	if t.o.AWS != nil && t.o.AWS.Calls != nil {
		t.s.Requests.AWS = t.o.AWS.Calls()
	}
}
