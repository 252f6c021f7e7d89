package analyze

import (
	"sort"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/audit/read"
)

// Requests answered 401 (not authenticated) or 403 (not authorised) tell who lacks which
// permission: a kubelet whose RBAC or Node authorizer rules do not fit, a controller whose role
// misses a verb, a client with an expired token. They are counted by (code, user, groups,
// verb, resource, namespace, name), the first and last time and the latest user agent and
// source IP of each.

// MaxDeniedKeys bounds the distinct (who, what) pairs tracked. A pair is tracked from its first
// denial on, so every tracked count is exact; denials of pairs first seen once the table is
// full are counted in the totals and as untracked.
const MaxDeniedKeys = 10000

type deniedKey struct {
	user, res                  uint32
	verb                       read.Verb
	code                       int16
	groups, ns, name, realUser string
}

type deniedStat struct {
	count       int64
	first, last int64
	ua, ip      uint32 // of the latest denial
}

type deniedTable struct {
	rows         map[deniedKey]*deniedStat
	unauthorized int64 // 401, all of them
	forbidden    int64 // 403, all of them
	untracked    int64
	limit        int
}

func (d *deniedTable) add(r *read.Record) {
	if r.Code == 401 {
		d.unauthorized++
	} else {
		d.forbidden++
	}
	k := deniedKey{user: r.User, res: r.Res, verb: r.Verb, code: r.Code}
	if r.Aux != nil {
		k.groups, k.ns, k.name, k.realUser = r.Aux.Groups, r.Aux.DenyNS, r.Aux.DenyName, r.Aux.RealUser
	}
	st := d.rows[k]
	if st == nil {
		if d.rows == nil {
			d.rows = map[deniedKey]*deniedStat{}
		}
		if len(d.rows) >= d.limit {
			d.untracked++
			return
		}
		st = &deniedStat{first: r.Recv, last: r.Recv}
		d.rows[k] = st
	}
	st.count++
	st.first, st.last = min(st.first, r.Recv), max(st.last, r.Recv)
	st.ua, st.ip = r.UA, r.IP
}

// build lists the rows, most frequent first, at most max of them (max < 1: all).
func (d *deniedTable) build(s func(uint32) string, max int) AccessDenied {
	out := AccessDenied{Unauthorized: d.unauthorized, Forbidden: d.forbidden, Distinct: int64(len(d.rows)),
		Untracked: d.untracked, Rows: []Denial{}}
	for k, st := range d.rows {
		out.Rows = append(out.Rows, Denial{Code: int(k.code), User: s(k.user), ImpersonatedBy: k.realUser, Groups: k.groups,
			Verb: k.verb.String(), Resource: s(k.res), Namespace: k.ns, Name: k.name, Count: st.count,
			First: ts(st.first), Last: ts(st.last), UserAgent: s(st.ua), SourceIP: s(st.ip)})
	}
	sort.Slice(out.Rows, func(i, j int) bool {
		a, b := &out.Rows[i], &out.Rows[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		if !a.First.Equal(b.First) {
			return a.First.Before(b.First)
		}
		return deniedOrder(a) < deniedOrder(b)
	})
	if max > 0 && len(out.Rows) > max {
		out.Rows = out.Rows[:max]
	}
	return out
}

func deniedOrder(d *Denial) string {
	return d.User + "\x00" + d.Verb + "\x00" + d.Resource + "\x00" + d.Namespace + "\x00" + d.Name + "\x00" + d.Groups + "\x00" + d.ImpersonatedBy
}

// AccessDenied summarises requests answered 401 or 403.
type AccessDenied struct {
	Unauthorized int64 `json:"unauthorized"` // 401 responses, exact
	Forbidden    int64 `json:"forbidden"`    // 403 responses, exact
	// Distinct counts the (who, what) pairs tracked; Untracked the denials of pairs first seen
	// after MaxDeniedKeys were tracked (they are in the two totals, not in Rows).
	Distinct  int64 `json:"distinct"`
	Untracked int64 `json:"untracked,omitempty"`
	// Rows are the most frequent pairs, --top of them; each count is exact.
	Rows []Denial `json:"rows"`
}

// Denial is one (who, what) pair that was denied, and how often.
type Denial struct {
	Code           int    `json:"code"`
	User           string `json:"user"` // empty for 401: the request was not authenticated
	ImpersonatedBy string `json:"impersonatedBy,omitempty"`
	// Groups are the user's first three groups besides system:authenticated ("+N more").
	Groups    string    `json:"groups,omitempty"`
	Verb      string    `json:"verb"`
	Resource  string    `json:"resource"` // resource/subresource, or a non-resource path
	Namespace string    `json:"namespace,omitempty"`
	Name      string    `json:"name,omitempty"`
	Count     int64     `json:"count"`
	First     time.Time `json:"first"`
	Last      time.Time `json:"last"`
	UserAgent string    `json:"userAgent,omitempty"` // of the latest denial
	SourceIP  string    `json:"sourceIP,omitempty"`  // of the latest denial
}
