package cwaudit

import (
	"encoding/json"
	"strings"
)

// The server-side filter keeps the events the audit analysis draws its findings from: everything
// about leases and Nodes (deletions, lease lifecycles, leaks), every request by a kubelet
// (zombies: a kubelet of 1.29 or later writes nothing, it only reads), and the answers that tell
// of trouble (401, 403, 429 throttling, 5xx). Top talkers and latency then rank only these
// events; the report's input line says the log was filtered.

// StreamPrefix is the prefix of the EKS control plane's audit log streams.
const StreamPrefix = "kube-apiserver-audit"

// InsightsFilter is the Logs Insights filter command (after "filter ").
const InsightsFilter = `objectRef.resource in ["leases", "nodes"] or user.username like /^system:node:/ or responseStatus.code in [401, 403, 429] or responseStatus.code >= 500`

// FilterPattern is the same selection as a CloudWatch Logs filter pattern, for FilterLogEvents.
const FilterPattern = `{ ($.objectRef.resource = "leases") || ($.objectRef.resource = "nodes") || ($.user.username = "system:node:*") || ($.responseStatus.code = 401) || ($.responseStatus.code = 403) || ($.responseStatus.code = 429) || ($.responseStatus.code >= 500) }`

// Matches is what InsightsFilter and FilterPattern select, in Go: the meaning the local fake of
// CloudWatch applies for them in tests.
func Matches(message string) bool {
	var ev struct {
		ObjectRef *struct {
			Resource string `json:"resource"`
		} `json:"objectRef"`
		User struct {
			Username string `json:"username"`
		} `json:"user"`
		ResponseStatus *struct {
			Code int `json:"code"`
		} `json:"responseStatus"`
	}
	if json.Unmarshal([]byte(message), &ev) != nil {
		return false
	}
	if ev.ObjectRef != nil && (ev.ObjectRef.Resource == "leases" || ev.ObjectRef.Resource == "nodes") {
		return true
	}
	if strings.HasPrefix(ev.User.Username, "system:node:") {
		return true
	}
	if ev.ResponseStatus != nil {
		switch c := ev.ResponseStatus.Code; {
		case c == 401, c == 403, c == 429, c >= 500:
			return true
		}
	}
	return false
}
