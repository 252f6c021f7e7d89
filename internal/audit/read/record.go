package read

import (
	"bytes"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Verb is the request verb of an audit event.
type Verb uint8

// Verbs the analysis distinguishes; everything else (proxy, connect, escalate...) is VerbOther.
const (
	VerbOther Verb = iota
	VerbGet
	VerbList
	VerbWatch
	VerbCreate
	VerbUpdate
	VerbPatch
	VerbDelete
	VerbDeleteCollection
	numVerbs
)

var verbNames = [numVerbs]string{"other", "get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}

func (v Verb) String() string {
	if v < numVerbs {
		return verbNames[v]
	}
	return "other"
}

func parseVerb(b []byte) Verb {
	switch string(b) {
	case "get":
		return VerbGet
	case "list":
		return VerbList
	case "watch":
		return VerbWatch
	case "create":
		return VerbCreate
	case "update":
		return VerbUpdate
	case "patch":
		return VerbPatch
	case "delete":
		return VerbDelete
	case "deletecollection":
		return VerbDeleteCollection
	}
	return VerbOther
}

// record flags.
const (
	FlagLease        = 1 << iota // objectRef is a coordination.k8s.io Lease (no subresource)
	FlagNode                     // objectRef is a core Node (no subresource)
	FlagOwnerNone                // the logged object shows no ownerReferences
	FlagOwnerPresent             // the logged object shows ownerReferences
	FlagSalvaged                 // rebuilt from a message cut by CloudWatch ("[Truncated...]")
	FlagPanic                    // stage Panic
	FlagImpersonated             // user is the impersonated identity
	FlagDenied                   // answered 401 or 403: Aux carries what was denied to whom
)

// record is the compact form of one counted audit event: strings are interned IDs.
type Record struct {
	Recv, Done int64      // requestReceivedTimestamp and stageTimestamp, Unix ns
	Seq        uint64     // source index << 48 | locator (line or element number): tie-breaker and "where"
	ID         uint64     // hash of auditID (0 when absent): drops the same event read twice
	Aux        *RecordAux // only for lifecycle events (creates, deletes of leases and nodes) and denials
	User       uint32     // effective user name (the impersonated one when impersonation was used)
	UA, IP     uint32
	Ident      uint32 // instance identity from user.extra
	Res        uint32 // "resource" or "resource/subresource", or a non-resource path
	NS, Name   uint32 // only for leases (NS, Name) and nodes (Name)
	NodeOf     uint32 // N when the user is system:node:N
	APFWaitUS  uint32 // apf-queue-wait annotation, microseconds
	Code       int16
	Verb       Verb
	Flags      uint8
}

// RecordAux carries the details a lifecycle event is reported with.
type RecordAux struct {
	AuditID    string
	RealUser   string // the authenticated user when it impersonated User
	OwnerNames string // ownerReferences as "Kind/name" list, when the level shows the object
	// For a denied request (FlagDenied): the user's groups, summarised, and the object asked
	// for (any kind, so not interned; clipped to MaxDeniedField bytes).
	Groups, DenyNS, DenyName string
}

// MaxDeniedField bounds the strings a denied request keeps: object names come from request
// URIs, which anyone may send.
const MaxDeniedField = 256

// IsLifecycleRecord reports whether r is a lifecycle event of a lease or node (see isLifecycle).
func IsLifecycleRecord(r *Record) bool {
	return r.Flags&(FlagLease|FlagNode) != 0 && r.Name != 0 && isLifecycle(r)
}

func (r *Record) source() int    { return int(r.Seq >> 48) }
func (r *Record) locator() int64 { return int64(r.Seq & (1<<48 - 1)) }

// badKind classifies lines that did not become records.
type badKind uint8

const (
	badMalformed badKind = iota // not valid JSON / not an object
	badNotAudit                 // valid JSON but not an audit.k8s.io Event
	badNoTime                   // an audit event without any usable timestamp
	badTooLong                  // longer than the line limit
	badTruncated                // CloudWatch cut the message and too little was left to use it
	numBadKinds
)

var badKindNames = [numBadKinds]string{"malformed", "not-audit", "no-timestamp", "too-long", "truncated"}

func (k badKind) String() string { return badKindNames[k] }

// NodeUserPrefix starts the user name of a kubelet: system:node:<node name>.
const NodeUserPrefix = "system:node:"

// truncatedSuffix is how CloudWatch Logs ends a message longer than its event size limit.
var truncatedSuffix = []byte("[Truncated...]")

// converter turns rawEvents into records; one per worker.
type converter struct {
	li      *localInterner
	ev      rawEvent
	scratch []byte
	since   int64 // events received before since or after until are dropped (0 = no bound)
	until   int64
	// Most events come from kubelets of one version about leases: one-entry caches for the
	// user agent and the resource skip most string hashing, and what else stays the same
	// from one request of a user to the next (its node name, source IP, instance identity and
	// the object it asks about) is remembered by the user's ID.
	uaCache, resCache, nsCache idCache
	users                      *[userMemoSlots]userMemo
}

// userMemo is what a user's last event carried. A kubelet sends the same source IP and
// instance identity on every request and mostly asks about its own Node and lease: comparing
// those bytes with the last ones replaces three lookups in the string table per event.
type userMemo struct {
	user            uint32
	set             bool
	nodeOf          uint32 // the node name's ID of a system:node: user
	ip, ident, name idCache
}

const (
	// userMemoSlots is the size of the direct-mapped user memo (by user ID): a user whose slot
	// another took is looked up again, so the memo stays one fixed array whatever the number
	// of users.
	userMemoSlots = 4096
	// maxCachedKey bounds the bytes an idCache keeps; longer values are looked up each time.
	maxCachedKey = 256
)

type idCache struct {
	key []byte
	id  uint32
	set bool
}

func (c *converter) cachedID(cache *idCache, b []byte) uint32 {
	if cache.set && string(cache.key) == string(b) {
		return cache.id
	}
	id := c.li.id(b)
	if len(b) <= maxCachedKey {
		cache.key, cache.id, cache.set = append(cache.key[:0], b...), id, true
	}
	return id
}

// userMemo returns the memo of the user whose name is username and ID is id, emptied when
// it was another user's.
func (c *converter) userMemo(id uint32, username []byte) *userMemo {
	if c.users == nil {
		c.users = new([userMemoSlots]userMemo)
	}
	m := &c.users[id%userMemoSlots]
	if m.set && m.user == id {
		return m
	}
	m.user, m.set, m.nodeOf = id, true, 0
	m.ip.set, m.ident.set, m.name.set = false, false, false
	if bytes.HasPrefix(username, []byte(NodeUserPrefix)) {
		m.nodeOf = c.li.id(username[len(NodeUserPrefix):])
	}
	return m
}

type convResult uint8

const (
	convOK convResult = iota
	convSkipStage
	convFiltered
	convBad
)

// convert parses one audit event line. exportTime (Unix ns, 0 if unknown) is the time the
// log pipeline stamped the message with; it stands in for a lost timestamp in a salvaged
// truncated message.
func (c *converter) convert(line []byte, exportTime int64, rec *Record) (convResult, badKind, error) {
	ev := &c.ev
	truncated := false
	if exportTime != 0 && bytes.HasSuffix(line, truncatedSuffix) {
		truncated = true
		line = line[:len(line)-len(truncatedSuffix)]
	}
	err := parseEvent(line, ev)
	if err == errSkipStage {
		return convSkipStage, 0, nil
	}
	if err != nil {
		if !truncated {
			return convBad, badMalformed, err
		}
		if ev.Verb == nil || !isAuditKind(ev) || ev.Stage == nil {
			return convBad, badTruncated, err
		}
	} else if truncated {
		truncated = false // a message that merely ends with the marker text parsed whole
	}
	if !isAuditKind(ev) {
		return convBad, badNotAudit, nil
	}
	*rec = Record{}
	var ok bool
	switch {
	case ev.Received != nil:
		rec.Recv, ok = parseTime(ev.Received)
	case ev.Timestamp != nil:
		rec.Recv, ok = parseTime(ev.Timestamp)
	case ev.StageTime != nil:
		rec.Recv, ok = parseTime(ev.StageTime)
	}
	if !ok {
		if !truncated || exportTime == 0 {
			return convBad, badNoTime, nil
		}
		rec.Recv = exportTime
	}
	rec.Done = rec.Recv
	if ev.StageTime != nil {
		if t, ok := parseTime(ev.StageTime); ok && t >= rec.Recv {
			rec.Done = t
		}
	}
	if (c.since != 0 && rec.Recv < c.since) || (c.until != 0 && rec.Recv > c.until) {
		return convFiltered, 0, nil
	}
	if truncated {
		rec.Flags |= FlagSalvaged
	}
	if string(ev.Stage) == "Panic" {
		rec.Flags |= FlagPanic
	}
	rec.Verb = parseVerb(ev.Verb)
	rec.Code = int16(ev.Code)
	if ev.Code > 32767 || ev.Code < -32768 {
		rec.Code = -1
	}

	user := &ev.User
	if ev.ImpersonatedUser.Username != nil {
		user = &ev.ImpersonatedUser
		rec.Flags |= FlagImpersonated
	}
	rec.User = c.li.id(user.Username)
	um := c.userMemo(rec.User, user.Username)
	rec.NodeOf = um.nodeOf
	switch {
	case len(user.SessionName) > 0:
		rec.Ident = c.cachedID(&um.ident, user.SessionName)
	case len(user.ARN) > 0:
		rec.Ident = c.cachedID(&um.ident, user.ARN)
	case len(user.CredentialID) > 0:
		rec.Ident = c.cachedID(&um.ident, user.CredentialID)
	}
	rec.UA = c.cachedID(&c.uaCache, ev.UserAgent)
	rec.IP = c.cachedID(&um.ip, ev.SourceIP)

	o := &ev.ObjectRef
	if ev.HasObjectRef && len(o.Resource) > 0 {
		if len(o.Subresource) > 0 {
			c.scratch = append(append(append(c.scratch[:0], o.Resource...), '/'), o.Subresource...)
			rec.Res = c.li.id(c.scratch)
		} else {
			rec.Res = c.cachedID(&c.resCache, o.Resource)
			switch {
			case string(o.Resource) == "leases" && string(o.APIGroup) == "coordination.k8s.io":
				rec.Flags |= FlagLease
				rec.NS = c.cachedID(&c.nsCache, o.Namespace)
				rec.Name = c.cachedID(&um.name, o.Name)
			case string(o.Resource) == "nodes" && len(o.APIGroup) == 0:
				rec.Flags |= FlagNode
				rec.Name = c.cachedID(&um.name, o.Name)
			}
		}
	} else {
		rec.Res = c.li.id(nonResourcePath(ev.RequestURI))
	}
	if ev.APFQueueWait != nil {
		if d, err := time.ParseDuration(string(ev.APFQueueWait)); err == nil && d > 0 {
			us := d / time.Microsecond
			if us > 1<<32-1 {
				us = 1<<32 - 1
			}
			rec.APFWaitUS = uint32(us)
		}
	}
	if rec.Code == 401 || rec.Code == 403 {
		rec.Flags |= FlagDenied
		rec.Aux = &RecordAux{AuditID: string(ev.AuditID), Groups: summariseGroups(user.Groups)}
		if ev.HasObjectRef {
			rec.Aux.DenyNS = clipField(o.Namespace)
			rec.Aux.DenyName = clipField(o.Name)
		}
		if rec.Flags&FlagImpersonated != 0 {
			rec.Aux.RealUser = fixUTF8(ev.User.Username)
		}
	}
	if IsLifecycleRecord(rec) {
		aux := rec.Aux
		if aux == nil {
			aux = &RecordAux{AuditID: string(ev.AuditID)}
		}
		if rec.Flags&FlagImpersonated != 0 {
			aux.RealUser = fixUTF8(ev.User.Username)
		}
		if rec.Flags&FlagLease != 0 {
			if owners, known := ownerReferences(ev, rec.Verb); known {
				if owners == "" {
					rec.Flags |= FlagOwnerNone
				} else {
					rec.Flags |= FlagOwnerPresent
					aux.OwnerNames = owners
				}
			}
		}
		rec.Aux = aux
	} else if rec.Flags&FlagLease != 0 && (rec.Verb == VerbUpdate || rec.Verb == VerbPatch) && rec.Code == 200 && (ev.ResponseObject != nil || ev.RequestObject != nil) {
		// A renewal whose response shows the owner tells the analysis that an ownerless
		// lease was adopted; only the flag is kept, no aux.
		if owners, known := ownerReferences(ev, rec.Verb); known && owners != "" {
			rec.Flags |= FlagOwnerPresent
		}
	}
	return convOK, 0, nil
}

// clipField turns an attacker-chosen byte string into a bounded, valid UTF-8 string.
func clipField(b []byte) string {
	if len(b) > MaxDeniedField {
		b = b[:MaxDeniedField]
		for len(b) > 0 && !utf8.RuneStart(b[len(b)-1]) {
			b = b[:len(b)-1]
		}
		if len(b) > 0 {
			b = b[:len(b)-1] // the last rune may be cut; drop it whole
		}
		return fixUTF8(b) + "…"
	}
	return fixUTF8(b)
}

// summariseGroups reads a user's groups (a JSON array of strings) as "a,b,c +N more": the
// first three besides system:authenticated, which every authenticated user has.
func summariseGroups(raw []byte) string {
	const show = 3
	var names []string
	more := 0
	var arena []byte
	i := skipWS(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		return ""
	}
	i = skipWS(raw, i+1)
	for i < len(raw) && raw[i] != ']' {
		v, j, err := readString(raw, i, &arena)
		if err != nil {
			return strings.Join(names, ",")
		}
		if g := string(v); g != "system:authenticated" && g != "" {
			if len(names) < show {
				names = append(names, clipField(v))
			} else {
				more++
			}
		}
		i = skipWS(raw, j)
		if i < len(raw) && raw[i] == ',' {
			i = skipWS(raw, i+1)
		}
	}
	s := strings.Join(names, ",")
	if more > 0 {
		s += fmt.Sprintf(" +%d more", more)
	}
	return s
}

// isLifecycle reports whether a lease or node record is one the lifecycle reports list:
// creates and deletes of any outcome, and updates or patches that created the object (201).
func isLifecycle(r *Record) bool {
	switch r.Verb {
	case VerbCreate, VerbDelete:
		return true
	case VerbUpdate, VerbPatch:
		return r.Code == 201
	}
	return false
}

func isAuditKind(ev *rawEvent) bool {
	return string(ev.Kind) == "Event" && bytes.HasPrefix(ev.APIVersion, []byte("audit.k8s.io/"))
}

// nonResourcePath reduces a non-resource request URI to at most three path segments without
// the query, so that the set of distinct values stays small.
func nonResourcePath(uri []byte) []byte {
	if q := bytes.IndexByte(uri, '?'); q >= 0 {
		uri = uri[:q]
	}
	n := 0
	for i, c := range uri {
		if c == '/' {
			n++
			if n == 4 {
				return uri[:i]
			}
		}
	}
	if len(uri) > 80 {
		uri = uri[:80]
	}
	return uri
}

// ownerReferences looks for metadata.ownerReferences in the object the event logged: the
// response object when there is one (what was stored), else the request body for create and
// update (a patch body says nothing about fields it leaves alone). known is false when the
// level does not show an object.
func ownerReferences(ev *rawEvent, verb Verb) (owners string, known bool) {
	obj := ev.ResponseObject
	if obj == nil || ev.Code >= 300 {
		if verb == VerbPatch {
			return "", false
		}
		obj = ev.RequestObject
	}
	if obj == nil {
		return "", false
	}
	refs, ok := findOwnerRefs(obj)
	if !ok {
		return "", false
	}
	return refs, true
}

// findOwnerRefs returns "Kind/name,..." for metadata.ownerReferences of the JSON object obj
// ("" when it has none); ok is false when obj is not an object with metadata (a Status, a
// DeleteOptions).
func findOwnerRefs(obj []byte) (string, bool) {
	var w objectWalker
	var err error
	i := 0
	var meta []byte
	kindLease := false
	for i, err = w.open(obj, i); err == nil && w.more; i, err = w.next(obj, i) {
		switch string(w.key) {
		case "metadata":
			meta, i, err = rawValue(obj, i)
		case "kind":
			var k []byte
			k, i, err = readString(obj, i, new([]byte))
			kindLease = string(k) == "Lease"
		default:
			i, err = skipValue(obj, i)
		}
		if err != nil {
			return "", false
		}
	}
	if err != nil || meta == nil || !kindLease {
		return "", false
	}
	var refs []string
	for i, err = w.open(meta, 0); err == nil && w.more; i, err = w.next(meta, i) {
		if !keyIs(w.key, "ownerReferences") {
			if i, err = skipValue(meta, i); err != nil {
				return "", false
			}
			continue
		}
		if i >= len(meta) || meta[i] != '[' {
			if i, err = skipValue(meta, i); err != nil {
				return "", false
			}
			continue
		}
		i = skipWS(meta, i+1)
		for i < len(meta) && meta[i] != ']' {
			var kind, name []byte
			var ow objectWalker
			for i, err = ow.open(meta, i); err == nil && ow.more; i, err = ow.next(meta, i) {
				switch string(ow.key) {
				case "kind":
					kind, i, err = readString(meta, i, new([]byte))
				case "name":
					name, i, err = readString(meta, i, new([]byte))
				default:
					i, err = skipValue(meta, i)
				}
				if err != nil {
					return "", false
				}
			}
			if err != nil {
				return "", false
			}
			refs = append(refs, fixUTF8(kind)+"/"+fixUTF8(name))
			i = skipWS(meta, i)
			if i < len(meta) && meta[i] == ',' {
				i = skipWS(meta, i+1)
			}
		}
		if i < len(meta) {
			i++
		}
	}
	return strings.Join(refs, ","), true
}
