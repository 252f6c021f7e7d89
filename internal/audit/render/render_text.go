package render

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/liggitt/tabwriter"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/nodekeeper/nodekeeper/internal/audit/analyze"
	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// Every string in a report that came from the log (user names, user agents, source IPs,
// object names, file names, error texts quoting input) was written by someone else: a client
// chooses its user agent, a tenant names its objects. The text renderer passes each of them
// through esc or clip so that no control character reaches the terminal; -o json, -o yaml and
// --html escape by themselves.

const timeLayout = "2006-01-02T15:04:05.000Z"

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(timeLayout)
}

// fmtDur prints a duration compactly at a precision that suits its size.
func fmtDur(d time.Duration) string {
	switch {
	case d < 0:
		return "-" + fmtDur(-d)
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(10 * time.Millisecond).String()
	case d < time.Hour:
		return d.Round(time.Second).String()
	case d < 48*time.Hour:
		return strings.TrimSuffix(d.Round(time.Minute).String(), "0s")
	}
	days := d / (24 * time.Hour)
	return fmt.Sprintf("%dd%s", days, strings.TrimSuffix((d-days*24*time.Hour).Round(time.Minute).String(), "0s"))
}

// esc makes a string from the log safe to print.
func esc(s string) string { return textsafe.Escape(s) }

// clip escapes s and shortens it to n runes, never cutting a character in half.
func clip(s string, n int) string { return textsafe.Clip(s, n) }

// orDash escapes s, or stands "-" in for an empty one.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return esc(s)
}

// textWriter lays the report's tables out as kubectl lays out its own (cli-runtime's
// printers.GetNewTabWriter: columns at least 6 wide, 3 spaces between them), as every command's
// text output does. kubectl's writer remembers the widest cell of each column across flushes, for
// tables printed in pieces; table starts a new table so that unrelated ones never share widths.
type textWriter struct {
	tw  *tabwriter.Writer
	err error // the first error of a flush
}

func newTextWriter(w io.Writer) *textWriter { return &textWriter{tw: printers.GetNewTabWriter(w)} }

func (t *textWriter) p(format string, args ...any) { fmt.Fprintf(t.tw, format, args...) }

// table lays out what was written so far and forgets its column widths.
func (t *textWriter) table() {
	t.flush()
	t.tw.SetRememberedWidths(nil)
}

func (t *textWriter) flush() error {
	if err := t.tw.Flush(); err != nil && t.err == nil {
		t.err = err
	}
	return t.err
}

// section starts a new table with the section's title and its number of rows, then prints
// "none" when there are none or the table header, if any, when there are; it reports whether
// rows follow.
func section(t *textWriter, title string, rows int, header string) bool {
	t.table()
	p := t.p
	p("\n%s (%d)\n", title, rows)
	if rows == 0 {
		p("  none\n")
		return false
	}
	if header != "" {
		p("  %s\n", header)
	}
	return true
}

// counted is a count and how to print it (one %d) when it is not zero.
type counted struct {
	n      int64
	format string
}

// printNonZero prints the counts that are not zero, in order.
func printNonZero(p func(string, ...any), cs []counted) {
	for _, c := range cs {
		if c.n > 0 {
			p(c.format, c.n)
		}
	}
}

// WriteText writes the report for people.
func WriteText(w io.Writer, r *analyze.Report) error {
	// The table writer writes every cell on its own: unbuffered, a report of 7,500 leaks was a
	// quarter of a million write system calls.
	bw := bufio.NewWriterSize(w, 64<<10)
	if err := writeText(bw, r); err != nil {
		return err
	}
	return bw.Flush()
}

func writeText(w io.Writer, r *analyze.Report) error {
	t := newTextWriter(w)
	p := t.p

	if r.From.IsZero() {
		p("AUDIT LOG  no events\n")
	} else {
		p("AUDIT LOG  %s → %s  (%s)\n", fmtTime(r.From), fmtTime(r.To), fmtDur(r.To.Sub(r.From)))
	}
	if f := r.Filters; f.Node != "" || f.Lease != "" || f.User != "" || !f.Since.IsZero() || !f.Until.IsZero() {
		var parts []string
		for _, kv := range [][2]string{{"node", f.Node}, {"lease", f.Lease}, {"user", f.User}} {
			if kv[1] != "" {
				parts = append(parts, kv[0]+"="+esc(kv[1]))
			}
		}
		if !f.Since.IsZero() {
			parts = append(parts, "since="+fmtTime(f.Since))
		}
		if !f.Until.IsZero() {
			parts = append(parts, "until="+fmtTime(f.Until))
		}
		p("filters: %s\n", strings.Join(parts, " "))
	}
	for _, in := range r.Inputs {
		gz := ""
		if in.Gzip {
			gz = ", gzip"
		}
		unit := in.Unit()
		p("input %s (%s%s): %d %s, %d events, %d skipped stages", esc(in.Name), orDash(in.Format), gz, in.Lines, unit, in.Events, in.SkipStage)
		if in.Salvaged > 0 {
			p(", %d truncated messages salvaged", in.Salvaged)
		}
		p("\n")
		for _, b := range in.Bad {
			var where []string
			for _, e := range b.Examples {
				if e.Line > 0 {
					where = append(where, fmt.Sprintf("line %d", e.Line))
				} else {
					where = append(where, fmt.Sprintf("record %d", e.Record))
				}
			}
			reason := ""
			if len(b.Examples) > 0 && b.Examples[0].Reason != "" {
				reason = " (first: " + clip(b.Examples[0].Reason, 200) + ")"
			}
			p("  %d %s: %s%s\n", b.Count, esc(b.Kind), strings.Join(where, ", "), reason)
		}
		if in.Error != "" {
			p("  ERROR: %s\n", esc(in.Error))
		}
	}
	tot := r.Totals
	p("totals: %d events, %d by kubelets, %d lease renewals, %d throttled (429), %d node deletions, %d lease creations, %d lease deletions",
		tot.Events, tot.NodeRequests, tot.LeaseRenewals, tot.Throttled, tot.NodeDeletions, tot.LeaseCreations, tot.LeaseDeletions)
	printNonZero(p, []counted{
		{tot.Bad, ", %d unusable"},
		{tot.Duplicates, ", %d duplicates dropped"},
		{tot.OutOfOrder, ", %d out of order"},
		{tot.OutsideWindow, ", %d outside --since/--until"},
	})
	p("\n")

	// Who deleted nodes, and what followed.
	section(t, "NODE DELETIONS", len(r.NodeDeletions), "")
	for _, d := range r.NodeDeletions {
		e := d.Event
		p("  %s  node %s deleted (%d)\n", fmtTime(e.Time), esc(d.Node), e.Code)
		p("      by %s", actorText(e.Actor))
		p("  [%s]\n", esc(e.Where))
		var then []string
		type step struct {
			after time.Duration
			text  string
		}
		var steps []step
		if f := d.LeaseDeleted; f != nil {
			steps = append(steps, step{f.After, "lease deleted by " + esc(f.Actor.User)})
		}
		if d.RequestsAfter > 0 {
			steps = append(steps, step{d.FirstRequest.Sub(e.Time), fmt.Sprintf("%d requests by its kubelet (system:node:%s), the last at %s",
				d.RequestsAfter, esc(d.Node), fmtTime(*d.LastRequest))})
		}
		if f := d.LeaseRecreated; f != nil {
			steps = append(steps, step{f.After, fmt.Sprintf("lease re-created (%s, %d) by %s", esc(f.How), f.Code, esc(f.Actor.User))})
		}
		if f := d.NodeRecreated; f != nil {
			steps = append(steps, step{f.After, esc(f.How) + " (" + esc(f.Actor.User) + ")"})
		}
		for i := 1; i < len(steps); i++ { // few steps: insertion sort by time
			for k := i; k > 0 && steps[k].after < steps[k-1].after; k-- {
				steps[k], steps[k-1] = steps[k-1], steps[k]
			}
		}
		for _, s := range steps {
			then = append(then, fmt.Sprintf("+%s\t%s", fmtDur(s.after), s.text))
		}
		if len(then) == 0 {
			then = append(then, "nothing else about this node or its lease")
		}
		for i, l := range then {
			lead := "      then "
			if i > 0 {
				lead = "           "
			}
			p("%s%s\n", lead, l)
		}
	}

	if section(t, "LEAKS", len(r.Leaks), "LEASE\tCREATED\tBY\tHOW\tCAUSE\tAFTER NODE DELETION\tSTATUS") {
		for _, l := range r.Leaks {
			after := "-"
			if l.NodeDeletion != nil {
				after = fmt.Sprintf("%s by %s", fmtDur(l.Created.Time.Sub(l.NodeDeletion.Time)), esc(l.NodeDeletion.Actor.User))
			}
			status := l.Status
			if l.StatusEvent != nil {
				status += fmt.Sprintf(" (+%s, %s)", fmtDur(l.StatusEvent.After), esc(l.StatusEvent.Actor.User))
			}
			p("  %s/%s\t%s\t%s\t%s %d\t%s\t%s\t%s\n", esc(l.Namespace), esc(l.Name), fmtTime(l.Created.Time), esc(l.Created.Actor.User),
				l.Created.Action, l.Created.Code, l.Cause, after, status)
		}
	}

	if section(t, "ZOMBIE KUBELETS", len(r.Zombies), "NODE\tINSTANCE\tSOURCE IPS\tFIRST SEEN\tLAST SEEN\tREQUESTS\tPER MIN\tNODE DELETED BY\tSTATUS") {
		for _, z := range r.Zombies {
			del := "(before the log)"
			if z.Deletion != nil {
				del = esc(z.Deletion.Actor.User)
			}
			status := z.Status
			if z.Ended != nil {
				status += " (" + esc(z.Ended.How) + ")"
			}
			var ids []string
			for _, id := range z.Identities {
				ids = append(ids, clip(id, 28)) // certificate hashes are long; -o json has them whole
			}
			p("  %s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", esc(z.Node), dashIfEmpty(strings.Join(ids, ",")),
				orDash(strings.Join(z.SourceIPs, ",")), fmtTime(z.FirstSeen), fmtTime(z.LastSeen), z.Requests, fmtRate(z.PerMinute), del, status)
		}
		for _, z := range r.Zombies {
			var calls []string
			for i, c := range z.Calls {
				if i == 6 {
					calls = append(calls, "…")
					break
				}
				calls = append(calls, fmt.Sprintf("%s %s %d ×%d", esc(c.Verb), esc(c.Resource), c.Code, c.Count))
			}
			p("  %s: %s; %s", esc(z.Node), strings.Join(calls, ", "), esc(strings.Join(z.UserAgents, ", ")))
			if z.LeaseRecreations > 0 {
				p("; re-created its lease %d times (a kubelet older than 1.29 does)", z.LeaseRecreations)
			}
			p("\n")
		}
	}

	writeChurn(t, r.LeaseChurn)
	writeHeartbeats(t, r.Heartbeats)

	shown, hidden := 0, 0
	for _, l := range r.Leases {
		if interestingLease(l, r.Filters) {
			shown++
		} else {
			hidden++
		}
	}
	t.table()
	p("\nLEASE LIFECYCLES (%d", shown)
	if hidden > 0 {
		p("; %d more with a single create, see -o json", hidden)
	}
	p(")\n")
	if shown == 0 {
		p("  none\n")
	}
	for _, l := range r.Leases {
		if !interestingLease(l, r.Filters) {
			continue
		}
		p("  %s/%s  creates %d, deletes %d, created by update %d\n", esc(l.Namespace), esc(l.Name), l.Creates, l.Deletes, l.UpdateCreates)
		p("    TIME\tACTION\tCODE\tUSER\tUSER AGENT\tSOURCE IP\tOWNERS\tWHERE\n")
		for _, e := range l.Events {
			owners := "?"
			if e.OwnersKnown {
				owners = orDash(e.Owners)
			}
			p("    %s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", fmtTime(e.Time), esc(e.Action), e.Code, esc(e.Actor.User),
				clip(e.Actor.UserAgent, 48), orDash(e.Actor.SourceIP), owners, esc(e.Where))
		}
		if l.Omitted > 0 {
			p("    … %d more events in between\n", l.Omitted)
		}
	}

	th := r.Throttling
	t.table()
	p("\nTHROTTLING  %d responses 429, %d requests queued by APF (apf-queue-wait)\n", th.Throttled, th.APFWaited)
	if len(th.ByKey) > 0 {
		p("  USER\tUSER AGENT\tVERB\tRESOURCE\t429s\tREQUESTS\tAPF QUEUED\tAPF WAIT MAX\n")
		for _, k := range th.ByKey {
			p("  %s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\n", esc(k.User), clip(k.UserAgent, 48), esc(k.Verb), esc(k.Resource), k.Throttled, k.Requests, k.APFWaited, fmtDur(k.APFWaitMax))
		}
		tl := r.Timeline
		var rows []string
		for i := range tl.Throttled {
			if tl.Throttled[i] > 0 {
				rows = append(rows, fmt.Sprintf("  %s\t%d\t%d\n", fmtTime(tl.Start.Add(time.Duration(i)*tl.Step)), tl.Throttled[i], tl.Requests[i]))
			}
		}
		if len(rows) > 0 {
			t.table()
			p("  over time (step %s):\n  FROM\t429s\tREQUESTS\n", fmtDur(tl.Step))
			if len(rows) > 20 {
				rows = append(rows[:10], append([]string{fmt.Sprintf("  …\t%d buckets\t\n", len(rows)-20)}, rows[len(rows)-10:]...)...)
			}
			for _, row := range rows {
				p("%s", row)
			}
		}
	}

	writeDenied(t, r.AccessDenied)

	p("\nTOP TALKERS BY REQUESTS\n")
	writeTalkers(t, r.TopByRequests)
	p("\nTOP TALKERS BY LATENCY (stageTimestamp − requestReceivedTimestamp, watches excluded)\n")
	writeTalkers(t, r.TopByLatency)
	if b := r.Bounds; !b.Exact() {
		p("\nBOUNDS  memory limits reached; these numbers are approximate:\n")
		printNonZero(p, []counted{
			{b.NamesNotKept, "  %d lookups of names past the string table: shown as " + strconv.Quote(analyze.NotKeptName) + "\n"},
			{b.LeaseEventsNotTracked, "  %d lifecycle events of leases not tracked (in the totals, not in lifecycles or leaks)\n"},
			{b.NodeEventsNotTracked, "  %d events of nodes not tracked (in the totals, not in deletions or zombies)\n"},
			{b.LeaksNotListed, "  %d more leaks not listed\n"},
			{b.TalkerEvictions, "  talker tables are approximate (%d entries replaced): REQUESTS are upper bounds, see requestsError in -o json\n"},
			{b.ChurnLeaseActorsNotKept, "  %d lease churns by a ninth actor of one lease: the LEASES column of lease churn may count that lease twice\n"},
		})
	}
	for _, e := range r.Errors {
		p("\nERROR: %s\n", esc(e))
	}
	return t.flush()
}

// writeTalkers starts a new table, as the rankings follow their own titles.
func writeTalkers(t *textWriter, ts []analyze.Talker) {
	t.table()
	tw := t.tw
	if len(ts) == 0 {
		fmt.Fprintf(tw, "  none\n")
		return
	}
	fmt.Fprintf(tw, "  USER\tUSER AGENT\tVERB\tRESOURCE\tREQUESTS\t429s\t5xx\tLATENCY TOTAL\tP99 ≤\tMAX\n")
	for _, t := range ts {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\n", esc(t.User), clip(t.UserAgent, 48), esc(t.Verb), esc(t.Resource),
			t.Requests, t.Throttled, t.ServerErrors, fmtDur(t.LatencyTotal), fmtDur(t.LatencyP99), fmtDur(t.LatencyMax))
	}
}

func writeDenied(t *textWriter, d analyze.AccessDenied) {
	t.table()
	p := t.p
	p("\nACCESS DENIED  %d responses 403 (forbidden), %d responses 401 (unauthenticated)", d.Forbidden, d.Unauthorized)
	if d.Distinct > 0 {
		p(", %d distinct (who, what)", d.Distinct)
	}
	if d.Untracked > 0 {
		p("; %d more denials of pairs not tracked (over %d pairs): in the totals only", d.Untracked, analyze.MaxDeniedKeys)
	}
	p("\n")
	if len(d.Rows) == 0 {
		p("  none\n")
		return
	}
	p("  CODE\tUSER\tGROUPS\tVERB\tRESOURCE\tOBJECT\tCOUNT\tFIRST\tLAST\tUSER AGENT\tSOURCE IP\n")
	for _, x := range d.Rows {
		user := esc(x.User)
		if x.User == "" {
			user = "(unauthenticated)"
		}
		if x.ImpersonatedBy != "" {
			user += " (impersonated by " + esc(x.ImpersonatedBy) + ")"
		}
		obj := x.Name
		if x.Namespace != "" {
			obj = x.Namespace + "/" + x.Name
		}
		p("  %d\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", x.Code, user, orDash(x.Groups), esc(x.Verb), esc(x.Resource),
			dashIfEmpty(clip(obj, 80)), x.Count, fmtTime(x.First), fmtTime(x.Last), clip(x.UserAgent, 48), orDash(x.SourceIP))
	}
	if shown := int64(len(d.Rows)); shown < d.Distinct {
		p("  … %d more pairs, raise --top to see them\n", d.Distinct-shown)
	}
}

func actorText(a analyze.Actor) string {
	s := esc(a.User)
	if a.ImpersonatedBy != "" {
		s += " (impersonated by " + esc(a.ImpersonatedBy) + ")"
	}
	if a.UserAgent != "" {
		s += "  " + esc(a.UserAgent)
	}
	if a.SourceIP != "" {
		s += "  from " + esc(a.SourceIP)
	}
	if a.Identity != "" {
		s += "  identity " + clip(a.Identity, 48)
	}
	return s
}

// interestingLease tells whether a lease's history says more than "created once".
func interestingLease(l analyze.LeaseLifecycle, f analyze.Filters) bool {
	if f.Lease != "" || f.Node != "" {
		return true
	}
	if l.Deletes > 0 || l.UpdateCreates > 0 || l.Creates > 1 {
		return true
	}
	for _, e := range l.Events {
		if e.Code < 200 || e.Code >= 300 {
			return true
		}
	}
	return false
}

// dashIfEmpty is orDash for text that is already escaped.
func dashIfEmpty(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func fmtRate(r float64) string {
	switch {
	case r == 0:
		return "0"
	case r < 0.1:
		return fmt.Sprintf("%.3f", r)
	case r < 10:
		return fmt.Sprintf("%.2f", r)
	}
	return fmt.Sprintf("%.0f", r)
}
