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

	arena   []byte
	guesses *eventGuesses
}

// eventGuesses are the key orders the last events showed, one per kind of object walked; a
// rawEvent keeps them from one line to the next.
type eventGuesses struct {
	top, user, extra, objectRef, status, annotations keyGuess
}

// The keys of each object the parser walks, by index (see keySet).
const (
	keyKind = iota
	keyAPIVersion
	keyLevel
	keyAuditID
	keyStage
	keyRequestURI
	keyVerb
	keyUser
	keyImpersonatedUser
	keySourceIPs
	keyUserAgent
	keyObjectRef
	keyResponseStatus
	keyRequestObject
	keyResponseObject
	keyReceived
	keyStageTimestamp
	keyTimestamp
	keyAnnotations
)

var eventKeys = newKeySet("kind", "apiVersion", "level", "auditID", "stage", "requestURI", "verb", "user",
	"impersonatedUser", "sourceIPs", "userAgent", "objectRef", "responseStatus", "requestObject",
	"responseObject", "requestReceivedTimestamp", "stageTimestamp",
	"timestamp", // audit.k8s.io/v1beta1
	"annotations")

const (
	keyUsername = iota
	keyUID
	keyGroups
	keyExtra
)

var userKeys = newKeySet("username", "uid", "groups", "extra")

const (
	keySessionName = iota
	keyARN
	keyCredentialID
)

var extraKeys = newKeySet("sessionName", "arn", "authentication.kubernetes.io/credential-id")

const (
	keyResource = iota
	keyNamespace
	keyName
	keyObjUID
	keyAPIGroup
	keyObjAPIVersion
	keySubresource
)

var objectRefKeys = newKeySet("resource", "namespace", "name", "uid", "apiGroup", "apiVersion", "subresource")

var statusKeys = newKeySet("code")

const (
	keyAPFQueueWait = iota
	keyTotalLatency
)

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
	arena, g := ev.arena[:0], ev.guesses
	if g == nil {
		g = new(eventGuesses)
	}
	*ev = rawEvent{}
	defer func() { ev.arena, ev.guesses = arena, g }()

	i := skipWS(line, 0)
	if i >= len(line) {
		return errNotObject
	}
	if line[i] != '{' {
		return errNotObject
	}
	var w objectWalker
	var err error
	for i, err = w.openKeys(line, i, eventKeys, &g.top); err == nil && w.more; i, err = w.nextKeys(line, i, eventKeys, &g.top) {
		switch w.id {
		case keyKind:
			ev.Kind, i, err = g.top.readStringMemo(&w, line, i, &arena)
		case keyAPIVersion:
			ev.APIVersion, i, err = g.top.readStringMemo(&w, line, i, &arena)
		case keyLevel:
			ev.Level, i, err = g.top.readStringMemo(&w, line, i, &arena)
		case keyAuditID:
			ev.AuditID, i, err = readString(line, i, &arena)
		case keyStage:
			ev.Stage, i, err = g.top.readStringMemo(&w, line, i, &arena)
			if err == nil && ev.Stage != nil && !countedStage(ev.Stage) {
				return errSkipStage
			}
		case keyRequestURI:
			ev.RequestURI, i, err = readString(line, i, &arena)
		case keyVerb:
			ev.Verb, i, err = g.top.readStringMemo(&w, line, i, &arena)
		case keyUser:
			ev.User = userInfo{}
			i, err = parseUser(line, i, &ev.User, &arena, g)
		case keyImpersonatedUser:
			ev.ImpersonatedUser = userInfo{}
			i, err = parseUser(line, i, &ev.ImpersonatedUser, &arena, g)
		case keySourceIPs:
			ev.SourceIP, i, err = readFirstString(line, i, &arena)
		case keyUserAgent:
			ev.UserAgent, i, err = g.top.readStringMemo(&w, line, i, &arena)
		case keyObjectRef:
			ev.ObjectRef = objectRef{}
			ev.HasObjectRef = i < len(line) && line[i] != 'n'
			i, err = parseObjectRef(line, i, &ev.ObjectRef, &arena, g)
		case keyResponseStatus:
			ev.Code = 0
			i, err = parseStatus(line, i, &ev.Code, g)
		case keyRequestObject:
			ev.RequestObject, i, err = rawValue(line, i)
		case keyResponseObject:
			ev.ResponseObject, i, err = rawValue(line, i)
		case keyReceived:
			ev.Received, i, err = readString(line, i, &arena)
		case keyStageTimestamp:
			ev.StageTime, i, err = readString(line, i, &arena)
		case keyTimestamp:
			ev.Timestamp, i, err = readString(line, i, &arena)
		case keyAnnotations:
			ev.APFQueueWait, ev.TotalLatency = nil, nil
			i, err = parseAnnotations(line, i, ev, &arena, g)
		default:
			i, err = g.top.skipValueMemo(&w, line, i)
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

func parseUser(b []byte, i int, u *userInfo, arena *[]byte, g *eventGuesses) (int, error) {
	var w objectWalker
	var err error
	for i, err = w.openKeys(b, i, userKeys, &g.user); err == nil && w.more; i, err = w.nextKeys(b, i, userKeys, &g.user) {
		switch w.id {
		case keyUsername:
			u.Username, i, err = readString(b, i, arena)
		case keyUID:
			u.UID, i, err = readString(b, i, arena)
		case keyGroups:
			j := i
			if i, err = g.user.skipValueMemo(&w, b, i); err == nil && b[j] != 'n' {
				u.Groups = b[j:i]
			}
		case keyExtra:
			u.SessionName, u.ARN, u.CredentialID = nil, nil, nil
			i, err = parseExtra(b, i, u, arena, g)
		default:
			i, err = g.user.skipValueMemo(&w, b, i)
		}
		if err != nil {
			return i, err
		}
	}
	return i, err
}

func parseExtra(b []byte, i int, u *userInfo, arena *[]byte, g *eventGuesses) (int, error) {
	var w objectWalker
	var err error
	for i, err = w.openKeys(b, i, extraKeys, &g.extra); err == nil && w.more; i, err = w.nextKeys(b, i, extraKeys, &g.extra) {
		switch w.id {
		case keySessionName:
			u.SessionName, i, err = readFirstString(b, i, arena)
		case keyARN:
			u.ARN, i, err = readFirstString(b, i, arena)
		case keyCredentialID:
			u.CredentialID, i, err = readFirstString(b, i, arena)
		default:
			i, err = g.extra.skipValueMemo(&w, b, i)
		}
		if err != nil {
			return i, err
		}
	}
	return i, err
}

func parseObjectRef(b []byte, i int, o *objectRef, arena *[]byte, g *eventGuesses) (int, error) {
	var w objectWalker
	var err error
	for i, err = w.openKeys(b, i, objectRefKeys, &g.objectRef); err == nil && w.more; i, err = w.nextKeys(b, i, objectRefKeys, &g.objectRef) {
		switch w.id {
		case keyResource:
			o.Resource, i, err = g.objectRef.readStringMemo(&w, b, i, arena)
		case keyNamespace:
			o.Namespace, i, err = g.objectRef.readStringMemo(&w, b, i, arena)
		case keyName:
			o.Name, i, err = readString(b, i, arena)
		case keyObjUID:
			o.UID, i, err = readString(b, i, arena)
		case keyAPIGroup:
			o.APIGroup, i, err = g.objectRef.readStringMemo(&w, b, i, arena)
		case keyObjAPIVersion:
			o.APIVersion, i, err = g.objectRef.readStringMemo(&w, b, i, arena)
		case keySubresource:
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

func parseStatus(b []byte, i int, code *int64, g *eventGuesses) (int, error) {
	var w objectWalker
	var err error
	for i, err = w.openKeys(b, i, statusKeys, &g.status); err == nil && w.more; i, err = w.nextKeys(b, i, statusKeys, &g.status) {
		if w.id == 0 {
			var v int64
			v, i, err = readInt(b, i)
			if err == nil && (v > 1<<31-1 || v < -1<<31) {
				err = errType // metav1.Status.Code is an int32
			}
			*code = v
		} else {
			i, err = g.status.skipValueMemo(&w, b, i)
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

var annotationKeys = newKeySet(annAPFQueueWait, annTotalLatency)

func parseAnnotations(b []byte, i int, ev *rawEvent, arena *[]byte, g *eventGuesses) (int, error) {
	var w objectWalker
	var err error
	for i, err = w.openKeys(b, i, annotationKeys, &g.annotations); err == nil && w.more; i, err = w.nextKeys(b, i, annotationKeys, &g.annotations) {
		switch w.id {
		case keyAPFQueueWait:
			ev.APFQueueWait, i, err = readString(b, i, arena)
		case keyTotalLatency:
			ev.TotalLatency, i, err = readString(b, i, arena)
		default:
			if i < len(b) && b[i] != '"' && b[i] != 'n' {
				return i, errType // annotations are map[string]string
			}
			i, err = g.annotations.skipValueMemo(&w, b, i)
		}
		if err != nil {
			return i, err
		}
	}
	return i, err
}
