package read

import "errors"

// rawEvent holds the fields of one audit.k8s.io Event that the analysis needs, as byte slices
// pointing into the line (or into arena when a value had escapes). Everything else in the
// event is skipped without being decoded.
//
// Semantics follow decoding into a map: when a key repeats, the last occurrence wins, and a
// JSON null reads as absent.
type rawEvent struct {
	Kind, APIVersion, Level, AuditID, Stage, RequestURI, Verb []byte
	User, ImpersonatedUser                                    userInfo
	SourceIP                                                  []byte // the first of sourceIPs
	UserAgent                                                 []byte
	ObjectRef                                                 objectRef
	HasObjectRef                                              bool
	Code                                                      int64  // responseStatus.code; 0 when absent
	RequestObject, ResponseObject                             []byte // raw JSON, nil when absent
	Received, StageTime, Timestamp                            []byte // raw RFC 3339 text
	APFQueueWait, TotalLatency                                []byte // annotations (durations)

	arena []byte
}

type userInfo struct {
	Username, UID []byte
	// Groups is the raw JSON array of the user's groups: only denied requests show it, so it
	// is decoded only for them.
	Groups []byte
	// Instance identity from user.extra: EKS puts the STS session name (the EC2 instance ID for
	// a node role) in sessionName and the assumed-role ARN in arn; clients authenticated by
	// certificate carry authentication.kubernetes.io/credential-id (X509SHA256=...) since 1.32.
	SessionName, ARN, CredentialID []byte
}

type objectRef struct {
	Resource, Namespace, Name, UID, APIGroup, APIVersion, Subresource []byte
}

var (
	// errSkipStage marks an event of a stage that is not counted (RequestReceived,
	// ResponseStarted): the rest of the line is not examined.
	errSkipStage = errors.New("stage not counted")
	errNotObject = errors.New("line is not a JSON object")
)

// parseEvent fills ev from one JSON line. It stops early, with errSkipStage, at a stage that
// the analysis does not count.
func parseEvent(line []byte, ev *rawEvent) error {
	arena := ev.arena[:0]
	*ev = rawEvent{}
	defer func() { ev.arena = arena }()

	i := skipWS(line, 0)
	if i >= len(line) {
		return errNotObject
	}
	if line[i] != '{' {
		return errNotObject
	}
	var w objectWalker
	var err error
	for i, err = w.open(line, i); err == nil && w.more; i, err = w.next(line, i) {
		switch string(w.key) {
		case "kind":
			ev.Kind, i, err = readString(line, i, &arena)
		case "apiVersion":
			ev.APIVersion, i, err = readString(line, i, &arena)
		case "level":
			ev.Level, i, err = readString(line, i, &arena)
		case "auditID":
			ev.AuditID, i, err = readString(line, i, &arena)
		case "stage":
			ev.Stage, i, err = readString(line, i, &arena)
			if err == nil && ev.Stage != nil && !countedStage(ev.Stage) {
				return errSkipStage
			}
		case "requestURI":
			ev.RequestURI, i, err = readString(line, i, &arena)
		case "verb":
			ev.Verb, i, err = readString(line, i, &arena)
		case "user":
			ev.User = userInfo{}
			i, err = parseUser(line, i, &ev.User, &arena)
		case "impersonatedUser":
			ev.ImpersonatedUser = userInfo{}
			i, err = parseUser(line, i, &ev.ImpersonatedUser, &arena)
		case "sourceIPs":
			ev.SourceIP, i, err = readFirstString(line, i, &arena)
		case "userAgent":
			ev.UserAgent, i, err = readString(line, i, &arena)
		case "objectRef":
			ev.ObjectRef = objectRef{}
			ev.HasObjectRef = i < len(line) && line[i] != 'n'
			i, err = parseObjectRef(line, i, &ev.ObjectRef, &arena)
		case "responseStatus":
			ev.Code = 0
			i, err = parseStatus(line, i, &ev.Code)
		case "requestObject":
			ev.RequestObject, i, err = rawValue(line, i)
		case "responseObject":
			ev.ResponseObject, i, err = rawValue(line, i)
		case "requestReceivedTimestamp":
			ev.Received, i, err = readString(line, i, &arena)
		case "stageTimestamp":
			ev.StageTime, i, err = readString(line, i, &arena)
		case "timestamp": // audit.k8s.io/v1beta1
			ev.Timestamp, i, err = readString(line, i, &arena)
		case "annotations":
			ev.APFQueueWait, ev.TotalLatency = nil, nil
			i, err = parseAnnotations(line, i, ev, &arena)
		default:
			i, err = skipValue(line, i)
		}
		if err != nil {
			return err
		}
	}
	if err != nil {
		return err
	}
	if i = skipWS(line, i); i != len(line) {
		return errSyntax
	}
	return nil
}

func countedStage(s []byte) bool {
	return string(s) == "ResponseComplete" || string(s) == "Panic"
}

// rawValue returns the JSON text of the value at b[i]; null is nil.
func rawValue(b []byte, i int) ([]byte, int, error) {
	j, err := skipValue(b, i)
	if err != nil {
		return nil, j, err
	}
	if b[i] == 'n' {
		return nil, j, nil
	}
	return b[i:j], j, nil
}

func parseUser(b []byte, i int, u *userInfo, arena *[]byte) (int, error) {
	var w objectWalker
	var err error
	for i, err = w.open(b, i); err == nil && w.more; i, err = w.next(b, i) {
		switch string(w.key) {
		case "username":
			u.Username, i, err = readString(b, i, arena)
		case "uid":
			u.UID, i, err = readString(b, i, arena)
		case "groups":
			u.Groups, i, err = rawValue(b, i)
		case "extra":
			u.SessionName, u.ARN, u.CredentialID = nil, nil, nil
			i, err = parseExtra(b, i, u, arena)
		default:
			i, err = skipValue(b, i)
		}
		if err != nil {
			return i, err
		}
	}
	return i, err
}

func parseExtra(b []byte, i int, u *userInfo, arena *[]byte) (int, error) {
	var w objectWalker
	var err error
	for i, err = w.open(b, i); err == nil && w.more; i, err = w.next(b, i) {
		switch string(w.key) {
		case "sessionName":
			u.SessionName, i, err = readFirstString(b, i, arena)
		case "arn":
			u.ARN, i, err = readFirstString(b, i, arena)
		case "authentication.kubernetes.io/credential-id":
			u.CredentialID, i, err = readFirstString(b, i, arena)
		default:
			i, err = skipValue(b, i)
		}
		if err != nil {
			return i, err
		}
	}
	return i, err
}

func parseObjectRef(b []byte, i int, o *objectRef, arena *[]byte) (int, error) {
	var w objectWalker
	var err error
	for i, err = w.open(b, i); err == nil && w.more; i, err = w.next(b, i) {
		switch string(w.key) {
		case "resource":
			o.Resource, i, err = readString(b, i, arena)
		case "namespace":
			o.Namespace, i, err = readString(b, i, arena)
		case "name":
			o.Name, i, err = readString(b, i, arena)
		case "uid":
			o.UID, i, err = readString(b, i, arena)
		case "apiGroup":
			o.APIGroup, i, err = readString(b, i, arena)
		case "apiVersion":
			o.APIVersion, i, err = readString(b, i, arena)
		case "subresource":
			o.Subresource, i, err = readString(b, i, arena)
		default:
			i, err = skipValue(b, i)
		}
		if err != nil {
			return i, err
		}
	}
	return i, err
}

func parseStatus(b []byte, i int, code *int64) (int, error) {
	var w objectWalker
	var err error
	for i, err = w.open(b, i); err == nil && w.more; i, err = w.next(b, i) {
		if keyIs(w.key, "code") {
			var v int64
			v, i, err = readInt(b, i)
			if err == nil && (v > 1<<31-1 || v < -1<<31) {
				err = errType // metav1.Status.Code is an int32
			}
			*code = v
		} else {
			i, err = skipValue(b, i)
		}
		if err != nil {
			return i, err
		}
	}
	return i, err
}

const (
	annAPFQueueWait = "apiserver.latency.k8s.io/apf-queue-wait"
	annTotalLatency = "apiserver.latency.k8s.io/total"
)

func parseAnnotations(b []byte, i int, ev *rawEvent, arena *[]byte) (int, error) {
	var w objectWalker
	var err error
	for i, err = w.open(b, i); err == nil && w.more; i, err = w.next(b, i) {
		switch string(w.key) {
		case annAPFQueueWait:
			ev.APFQueueWait, i, err = readString(b, i, arena)
		case annTotalLatency:
			ev.TotalLatency, i, err = readString(b, i, arena)
		default:
			if i < len(b) && b[i] != '"' && b[i] != 'n' {
				return i, errType // annotations are map[string]string
			}
			i, err = skipValue(b, i)
		}
		if err != nil {
			return i, err
		}
	}
	return i, err
}
