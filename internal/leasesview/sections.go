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

// section is one table: its columns and each row's cells, with the columns and cells -o wide
// adds after them.
type section struct {
	kind                 kind
	columns, wideColumns []string
	// cells are a row's cells (wide: the values in full); wideCells the cells -o wide adds.
	cells     func(it *Item, now time.Time, wide bool) []string
	wideCells func(it *Item, now time.Time) []string
}

// header is a new slice each time: callers append their own columns.
func (s *section) header(wide bool) []string {
	h := append(make([]string, 0, len(s.columns)+len(s.wideColumns)), s.columns...)
	if wide {
		h = append(h, s.wideColumns...)
	}
	return h
}

func (s *section) row(it *Item, now time.Time, wide bool) []string {
	r := s.cells(it, now, wide)
	if wide {
		r = append(r, s.wideCells(it, now)...)
	}
	return r
}

// sections are in class order: node classes (leaked, zombie, ... healthy ...) rank before leader,
// apiserver-identity and other.
var sections = []section{
	{
		kind:        kindNode,
		columns:     []string{"NODE LEASE", "CLASS", "NODE", "OWNER", "RENEWED", "MEANING"},
		wideColumns: []string{"HOLDER", "DURATION", "AGE", "CHANGES", "REASON"},
		cells: func(it *Item, now time.Time, wide bool) []string {
			node := none
			if it.Node != nil {
				node = "uid " + shortUID(it.Node.UID, wide)
			}
			return []string{it.Name, string(it.Class), node, owners(it.Owners, wide), ago(it.RenewTime, now), it.Class.Describe().Meaning}
		},
		wideCells: func(it *Item, now time.Time) []string {
			return []string{it.holder(), seconds(it.DurationSeconds), age(it.CreationTimestamp.Time, now), changesIn(it, now), it.Reason}
		},
	},
	{
		kind:        kindLeader,
		columns:     []string{"LEADER LEASE", "CLASS", "HOLDER", "RENEWED", "EXPIRED", "TRANSITIONS", "ACQUIRED"},
		wideColumns: []string{"DURATION", "AGE", "STRATEGY", "PREFERRED", "REASON"},
		cells: func(it *Item, now time.Time, _ bool) []string {
			acquired := none
			if it.AcquireTime != nil {
				acquired = age(it.AcquireTime.Time, now)
			}
			return []string{it.Name, string(it.Class), it.holder(), ago(it.RenewTime, now), yesNo(it.Expired), count(it.Transitions), acquired}
		},
		wideCells: func(it *Item, now time.Time) []string {
			return []string{seconds(it.DurationSeconds), age(it.CreationTimestamp.Time, now), orNone(it.Strategy), orNone(it.PreferredHolder), it.Reason}
		},
	},
	{
		kind:        kindAPIServer,
		columns:     []string{"APISERVER LEASE", "CLASS", "HOST", "RENEWED", "STATE"},
		wideColumns: []string{"HOLDER", "DURATION", "AGE", "REASON"},
		cells: func(it *Item, now time.Time, _ bool) []string {
			state := "live"
			if it.Expired {
				state = "stale"
			}
			return []string{it.Name, string(it.Class), orNone(it.Hostname), ago(it.RenewTime, now), state}
		},
		wideCells: func(it *Item, now time.Time) []string {
			return []string{it.holder(), seconds(it.DurationSeconds), age(it.CreationTimestamp.Time, now), it.Reason}
		},
	},
	{
		kind:        kindOther,
		columns:     []string{"OTHER LEASE", "CLASS", "HOLDER", "RENEWED", "EXPIRED", "REASON"},
		wideColumns: []string{"OWNER", "DURATION", "AGE"},
		cells: func(it *Item, now time.Time, _ bool) []string {
			return []string{it.Name, string(it.Class), it.holder(), ago(it.RenewTime, now), yesNo(it.Expired), it.Reason}
		},
		wideCells: func(it *Item, now time.Time) []string {
			return []string{owners(it.Owners, true), seconds(it.DurationSeconds), age(it.CreationTimestamp.Time, now)}
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
