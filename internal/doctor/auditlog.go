package doctor

import (
	"fmt"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/audit/analyze"
	"github.com/nodekeeper/nodekeeper/internal/audit/read"
)

// NodeDeletion is one DELETE of a Node seen in an audit log: who sent it, when, and where in
// the log (input:line). doctor --aws --audit-log names it beside the instance that kept running
// (NK801).
type NodeDeletion struct {
	Node      string
	Time      time.Time
	User      string
	UserAgent string
	SourceIP  string
	Where     string
}

// ReadNodeDeletions reads audit log files or directories (as `nodekeeper audit` takes them,
// plain or gzipped, kube-apiserver or CloudWatch export layouts) with the audit package's
// bounded reader and analysis, and returns the Node deletions they hold. An unreadable input,
// or inputs without a single audit event, fail, naming why; lines that are not audit events
// (cut, malformed) are told to warn with the first of them, as `audit` lists them, and the
// rest is used.
func ReadNodeDeletions(paths []string, warn func(string)) ([]NodeDeletion, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	inputs, err := read.ExpandInputs(paths, nil)
	if err != nil {
		return nil, fmt.Errorf("--audit-log: %w", err)
	}
	rep, err := analyze.Analyze(inputs, analyze.Options{})
	if err != nil {
		return nil, fmt.Errorf("--audit-log: %w", err)
	}
	first := ""
	for _, in := range rep.Inputs {
		for _, b := range in.Bad {
			for _, ex := range b.Examples {
				if first == "" {
					first = fmt.Sprintf("%s line %d: %s (%s)", in.Name, ex.Line, b.Kind, ex.Reason)
				}
			}
		}
	}
	if rep.Totals.Events == 0 {
		if first != "" {
			return nil, fmt.Errorf("--audit-log: no kube-apiserver audit event in %d lines; first unusable: %s", rep.Totals.Lines, first)
		}
		return nil, fmt.Errorf("--audit-log: no kube-apiserver audit event (ResponseComplete) in %d lines", rep.Totals.Lines)
	}
	if rep.Totals.Bad > 0 && warn != nil {
		warn(fmt.Sprintf("--audit-log: %d of %d lines are not audit events and were skipped; first: %s", rep.Totals.Bad, rep.Totals.Lines, first))
	}
	out := make([]NodeDeletion, 0, len(rep.NodeDeletions))
	for _, d := range rep.NodeDeletions {
		out = append(out, NodeDeletion{Node: d.Node, Time: d.Event.Time, User: d.Event.Actor.User, UserAgent: d.Event.Actor.UserAgent,
			SourceIP: d.Event.Actor.SourceIP, Where: d.Event.Where})
	}
	return out, nil
}
