package leasesview

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/nodekeeper/nodekeeper/internal/lease"
)

// The tables of `nodekeeper leases`: one per kind of lease, each with its own columns, and the
// cell formats they share.

// kind groups classes into the tables they are printed in.
type kind int

const (
	kindNode kind = iota
	kindLeader
	kindAPIServer
	kindOther
)

func sectionOf(c lease.Class) kind {
	switch c {
	case lease.Leader:
		return kindLeader
	case lease.APIServerIdentity:
		return kindAPIServer
	case lease.Other:
		return kindOther
	}
	// Every node class, and any class this package does not know yet (shown rather than lost).
	return kindNode
}

type section struct {
	kind   kind
	header func(wide bool) []string
	row    func(it *Item, now time.Time, wide bool) []string
}

// sections are in class order: node classes (leaked, zombie, ... healthy ...) rank before leader,
// apiserver-identity and other.
var sections = []section{
	{
		kind: kindNode,
		header: func(wide bool) []string {
			h := []string{"NODE LEASE", "CLASS", "NODE", "OWNER", "RENEWED", "MEANING"}
			if wide {
				h = append(h, "HOLDER", "DURATION", "AGE", "CHANGES", "REASON")
			}
			return h
		},
		row: func(it *Item, now time.Time, wide bool) []string {
			node := none
			if it.Node != nil {
				node = "uid " + shortUID(it.Node.UID, wide)
			}
			r := []string{it.Name, string(it.Class), node, owners(it.Owners, wide), ago(it.RenewTime, now), it.Class.Describe().Meaning}
			if wide {
				r = append(r, it.holder(), seconds(it.DurationSeconds), age(it.CreationTimestamp.Time, now), changesIn(it, now), it.Reason)
			}
			return r
		},
	},
	{
		kind: kindLeader,
		header: func(wide bool) []string {
			h := []string{"LEADER LEASE", "CLASS", "HOLDER", "RENEWED", "EXPIRED", "TRANSITIONS", "ACQUIRED"}
			if wide {
				h = append(h, "DURATION", "AGE", "STRATEGY", "PREFERRED", "REASON")
			}
			return h
		},
		row: func(it *Item, now time.Time, wide bool) []string {
			acquired := none
			if it.AcquireTime != nil {
				acquired = age(it.AcquireTime.Time, now)
			}
			r := []string{it.Name, string(it.Class), it.holder(), ago(it.RenewTime, now), yesNo(it.Expired), count(it.Transitions), acquired}
			if wide {
				r = append(r, seconds(it.DurationSeconds), age(it.CreationTimestamp.Time, now), orNone(it.Strategy), orNone(it.PreferredHolder), it.Reason)
			}
			return r
		},
	},
	{
		kind: kindAPIServer,
		header: func(wide bool) []string {
			h := []string{"APISERVER LEASE", "CLASS", "HOST", "RENEWED", "STATE"}
			if wide {
				h = append(h, "HOLDER", "DURATION", "AGE", "REASON")
			}
			return h
		},
		row: func(it *Item, now time.Time, wide bool) []string {
			state := "live"
			if it.Expired {
				state = "stale"
			}
			r := []string{it.Name, string(it.Class), orNone(it.Hostname), ago(it.RenewTime, now), state}
			if wide {
				r = append(r, it.holder(), seconds(it.DurationSeconds), age(it.CreationTimestamp.Time, now), it.Reason)
			}
			return r
		},
	},
	{
		kind: kindOther,
		header: func(wide bool) []string {
			h := []string{"OTHER LEASE", "CLASS", "HOLDER", "RENEWED", "EXPIRED", "REASON"}
			if wide {
				h = append(h, "OWNER", "DURATION", "AGE")
			}
			return h
		},
		row: func(it *Item, now time.Time, wide bool) []string {
			r := []string{it.Name, string(it.Class), it.holder(), ago(it.RenewTime, now), yesNo(it.Expired), it.Reason}
			if wide {
				r = append(r, owners(it.Owners, wide), seconds(it.DurationSeconds), age(it.CreationTimestamp.Time, now))
			}
			return r
		},
	},
}

// shortUID abbreviates a UID to its first 8 characters (enough to tell a re-created Node apart)
// except in wide output.
func shortUID(u types.UID, wide bool) string {
	s := string(u)
	if s == "" {
		return none
	}
	if wide {
		return s
	}
	// An ownerReference's UID is written by whoever wrote the Lease: cut on a character boundary.
	n := 0
	for i := range s {
		if n == 8 {
			return s[:i]
		}
		n++
	}
	return s
}

func owners(os []Owner, wide bool) string {
	if len(os) == 0 {
		return none
	}
	parts := make([]string, len(os))
	for i, o := range os {
		if o.Kind == "Node" && o.APIVersion == "v1" {
			parts[i] = "Node uid " + shortUID(o.UID, wide)
		} else {
			parts[i] = o.Kind + "/" + o.Name
		}
	}
	return strings.Join(parts, ",")
}

// ago is the time since a renewal, kubectl-style ("5s", "3h2m"); "<never>" when never renewed and
// "in 10m" when the timestamp is in the future (clock skew).
func ago(t *metav1.MicroTime, now time.Time) string {
	if t == nil || t.IsZero() {
		return "<never>"
	}
	return humanAge(now.Sub(t.Time))
}

func age(t time.Time, now time.Time) string {
	if t.IsZero() {
		return none
	}
	return humanAge(now.Sub(t))
}

func humanAge(d time.Duration) string {
	if d < 0 {
		return "in " + duration.HumanDuration(-d)
	}
	return duration.HumanDuration(d)
}

// changesIn says when the class changes by the clock alone (healthy → stale, zombie → leaked).
func changesIn(it *Item, now time.Time) string {
	if it.RecheckAt == nil {
		return none
	}
	d := it.RecheckAt.Sub(now)
	if d <= 0 {
		return "now"
	}
	return "in " + duration.HumanDuration(d)
}

func seconds(p *int32) string {
	if p == nil {
		return none
	}
	return fmt.Sprintf("%ds", *p)
}

func count(p *int32) string {
	if p == nil {
		return "0"
	}
	return fmt.Sprint(*p)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func orNone(s string) string {
	if s == "" {
		return none
	}
	return s
}
