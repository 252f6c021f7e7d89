package testenv

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"
)

// The audit policies the control-plane tests use (Options.AuditPolicy). Each records only what
// its tests read, so that the log stays small enough to re-read while a test polls it.
const (
	// AuditLeasesAndNodes records every lease and Node request at Metadata level (who, what,
	// when, result), like the EKS audit events of the seeds, and nothing else.
	AuditLeasesAndNodes = auditPolicyHead + auditLeasesAndNodesMetadata + auditNothingElse
	// AuditNodeLeaseWrites adds the request and response bodies of every write to a node lease,
	// so that the exact lease version a DELETE's preconditions named can be found in the log.
	AuditNodeLeaseWrites = auditPolicyHead + auditNodeLeaseWriteBodies + auditLeasesAndNodesMetadata + auditNothingElse
	// AuditLikeEKS records node-lease writes with their bodies (so ownerReferences are visible),
	// Node creates and deletes with their requests, and every other request at Metadata, as EKS
	// does.
	AuditLikeEKS = auditPolicyHead + auditNodeLeaseWriteBodies + `- level: Request
  verbs: ["create", "delete"]
  resources: [{group: "", resources: ["nodes"]}]
- level: Metadata
`
)

// The parts the policies are built from; the first rule that matches a request decides its level.
const (
	auditPolicyHead = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
`
	auditNodeLeaseWriteBodies = `- level: RequestResponse
  verbs: ["create", "update", "patch", "delete"]
  namespaces: ["kube-node-lease"]
  resources: [{group: "coordination.k8s.io", resources: ["leases"]}]
`
	auditLeasesAndNodesMetadata = `- level: Metadata
  resources: [{group: "coordination.k8s.io", resources: ["leases"]}, {group: "", resources: ["nodes"]}]
`
	auditNothingElse = "- level: None\n"
)

// AuditEvent is the part of an audit.k8s.io/v1 Event the tests read. It is decoded here rather
// than with the API types so that the tests depend only on the log's documented fields.
type AuditEvent struct {
	Stage      string `json:"stage"`
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	UserAgent string `json:"userAgent"`
	ObjectRef *struct {
		Resource  string `json:"resource"`
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
		APIGroup  string `json:"apiGroup"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestObject  json.RawMessage `json:"requestObject"`
	ResponseObject json.RawMessage `json:"responseObject"`
	Received       time.Time       `json:"requestReceivedTimestamp"`
	Completed      time.Time       `json:"stageTimestamp"`
}

// Code is the response's HTTP status, 0 when the event has none.
func (e AuditEvent) Code() int {
	if e.ResponseStatus == nil {
		return 0
	}
	return e.ResponseStatus.Code
}

// Resource is the resource the request was about ("leases"), "" for a non-resource request.
func (e AuditEvent) Resource() string {
	if e.ObjectRef == nil {
		return ""
	}
	return e.ObjectRef.Resource
}

// Name is the name of the object the request was about, "" for a collection.
func (e AuditEvent) Name() string {
	if e.ObjectRef == nil {
		return ""
	}
	return e.ObjectRef.Name
}

// Done reports whether the event is the last of its request: the response was sent, or the
// handler panicked.
func (e AuditEvent) Done() bool { return e.Stage == "ResponseComplete" || e.Stage == "Panic" }

func (e AuditEvent) String() string {
	return fmt.Sprintf("%s %s %s/%s %d by %s", e.Received.Format("15:04:05.000"), e.Verb, e.Resource(), e.Name(), e.Code(), e.User.Username)
}

// AuditEvents returns the completed requests (Done) of the API server's audit log that keep
// accepts (nil keeps all); see ReadAudit.
func (e *Env) AuditEvents(t testing.TB, mentions string, keep func(AuditEvent) bool) []AuditEvent {
	t.Helper()
	if e.AuditLogPath() == "" {
		t.Fatal("testenv: the control plane has no audit log: set Options.AuditPolicy")
	}
	return ReadAudit(t, e.AuditLogPath(), mentions, func(ev AuditEvent) bool { return ev.Done() && (keep == nil || keep(ev)) })
}

// maxAuditLine bounds the memory one audit event may take; the API server's own limit on a
// request body (3 MiB) keeps real events well below it.
const maxAuditLine = 16 << 20

// ReadAudit returns the events of the JSON-lines audit log at path that keep accepts (nil keeps
// all). Only lines that contain mentions are decoded ("" decodes every line), which keeps polling
// a long log cheap. The last line may be one the API server is still writing: if it does not
// decode it is left for the next read. Any other line that does not decode, or is longer than
// maxAuditLine, fails the test with its number.
func ReadAudit(t testing.TB, path, mentions string, keep func(AuditEvent) bool) []AuditEvent {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, maxAuditLine)
	var out []AuditEvent
	var undecoded error // the line before did not decode: fatal unless it was the last
	for n := 1; sc.Scan(); n++ {
		if undecoded != nil {
			t.Fatal(undecoded)
		}
		line := sc.Bytes()
		if mentions != "" && !bytes.Contains(line, []byte(mentions)) {
			continue
		}
		var e AuditEvent
		if err := json.Unmarshal(line, &e); err != nil {
			undecoded = fmt.Errorf("audit log %s line %d: %w", path, n, err)
			continue
		}
		if keep == nil || keep(e) {
			out = append(out, e)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("audit log %s: %v", path, err)
	}
	return out
}
