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
// bounded reader and analysis, and returns the Node deletions they hold. An unreadable input
// fails, naming it.
func ReadNodeDeletions(paths []string) ([]NodeDeletion, error) {
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
	out := make([]NodeDeletion, 0, len(rep.NodeDeletions))
	for _, d := range rep.NodeDeletions {
		out = append(out, NodeDeletion{Node: d.Node, Time: d.Event.Time, User: d.Event.Actor.User, UserAgent: d.Event.Actor.UserAgent,
			SourceIP: d.Event.Actor.SourceIP, Where: d.Event.Where})
	}
	return out, nil
}
