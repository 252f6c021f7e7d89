package checks

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"

	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// Reasons of the loop's Warning Events.
const (
	// ReasonPodsStuck is the reason of the Event on a Node whose pods are stuck, with the cause
	// measured on it.
	ReasonPodsStuck = "PodsStuck"
	// ReasonAWSNodeFinding is the reason of the Event on the aws-node DaemonSet for a warning
	// or error doctor found about it.
	ReasonAWSNodeFinding = "AWSNodeFinding"
)

// reporter records the loop's Warning Events: once per cause per object while it lasts (a cause
// that goes away is forgotten, so that it is reported again if it comes back), at most
// MaxEventsPerRun per run, the rest on later runs. The controller's events client is rate
// limited besides (kube.Events).
type reporter struct {
	recorder events.EventRecorder

	mu       sync.Mutex
	reported map[string]bool // "node/NAME\x00cause", "daemonset\x00CODE"
}

func newReporter(r events.EventRecorder) *reporter {
	return &reporter{recorder: r, reported: map[string]bool{}}
}

// forget drops what was reported: a replica that stops leading reports afresh when it leads again.
func (r *reporter) forget() {
	r.mu.Lock()
	r.reported = map[string]bool{}
	r.mu.Unlock()
}

// report records the Events of one run and returns how many.
func (r *reporter) report(ctx context.Context, nodes map[string]NodeCause, awsNode []findings.Finding) int {
	logger := klog.FromContext(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	current := map[string]bool{}
	n := 0
	emit := func(key string, record func()) {
		current[key] = r.reported[key]
		if r.reported[key] || r.recorder == nil || n >= MaxEventsPerRun {
			return
		}
		current[key] = true
		n++
		record()
	}
	for _, name := range sortedNames(nodes) {
		c := nodes[name]
		if c.Cause == CauseUnmeasured {
			continue // no cause to name: doctor's pod-networking findings and the gauge say it
		}
		emit(nodeResourcePrefix+name+"\x00"+c.Cause, func() {
			note := nodeNote(c)
			logger.Info("Pods stuck on a node", "node", name, "cause", c.Cause, "pods", c.Pods)
			ref := &corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: name}
			r.recorder.Eventf(ref, nil, corev1.EventTypeWarning, ReasonPodsStuck, "Check", "%s", note)
		})
	}
	for i := range awsNode {
		f := &awsNode[i]
		ns, name := awsNodeRef(f.Resource)
		emit("daemonset\x00"+f.Resource+"\x00"+f.Code, func() {
			logger.Info("Finding about the aws-node DaemonSet", "code", f.Code, "severity", f.Severity.String())
			ref := &corev1.ObjectReference{APIVersion: "apps/v1", Kind: "DaemonSet", Namespace: ns, Name: name}
			r.recorder.Eventf(ref, nil, corev1.EventTypeWarning, ReasonAWSNodeFinding, "Check", "%s", findingNote(f))
		})
	}
	r.reported = current
	return n
}

// nodeNote is the Event's note: the cause doctor measured, with its first figures, escaped and
// clipped to what the API accepts.
func nodeNote(c NodeCause) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Cause %s", c.Cause)
	if f := c.Finding; f != nil {
		// doctor's message counts the pods and names the oldest.
		fmt.Fprintf(&b, " (%s): %s", f.Code, textsafe.Escape(f.Message))
		for i, e := range f.Evidence {
			if i == 2 {
				break
			}
			fmt.Fprintf(&b, "; %s", textsafe.Escape(e))
		}
		if f.Remediation != "" {
			fmt.Fprintf(&b, ". Fix: %s", textsafe.Escape(f.Remediation))
		}
	}
	return textsafe.ClipBytes(b.String(), 1000)
}

func findingNote(f *findings.Finding) string {
	note := fmt.Sprintf("%s %s: %s", f.Code, f.Severity, textsafe.Escape(f.Message))
	if f.Remediation != "" {
		note += ". Fix: " + textsafe.Escape(f.Remediation)
	}
	return textsafe.ClipBytes(note, 1000)
}

// awsNodeRef splits doctor's "daemonset/NAMESPACE/NAME".
func awsNodeRef(resource string) (namespace, name string) {
	rest := strings.TrimPrefix(resource, "daemonset/")
	namespace, name, _ = strings.Cut(rest, "/")
	return namespace, name
}

func sortedNames(m map[string]NodeCause) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
