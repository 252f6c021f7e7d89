package bundle

// The boot, placed in time (issue 23 part 3): NK622 relates the block IO delay of
// io_throttling.txt (NK621) to the node's boot and to ipamd's first "connection refused"
// (NK611), the story of seed 002, where the root volume ran at 99% of its IOPS while the node
// booted and the VPC CNI started, and pods failed with ipamd's connection refused.
//
// When the node booted: the collector's copy of /proc/stat (system/procstat.txt) has the kernel's
// "btime SECONDS", the boot of the processes io_throttling.txt lists, to the second. Without it,
// cloud-init writes both clocks on one line at each stage and at the end, "Cloud-init v. V
// running 'STAGE' at TIMESTAMP. Up N seconds." and "Cloud-init v. V finished at TIMESTAMP.
// Datasource D.  Up N seconds" (cloudinit/cmd/main.py WELCOME_MSG_TPL and
// cloudinit/config/cc_final_message.py in canonical/cloud-init; TIMESTAMP is RFC 2822 in UTC),
// in cloud-init-output.log and cloud-init.log: the boot is TIMESTAMP minus N, and the latest boot
// in the logs is the current one. The collector keeps no other uptime: `last reboot`
// (system/last_reboot.txt) has neither year nor seconds, and the kubelet's journal begins when
// the kubelet starts, or ten days back.

import (
	"bytes"
	"container/heap"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/findings"
	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// bootWindow is how long after the boot a first "connection refused" still counts as part of
// the boot: the kubelet registers, aws-node's image is pulled and ipamd starts within minutes.
const bootWindow = 10 * time.Minute

// maxRefusals bounds the "connection refused" times kept: the latest by time, since the first
// after the latest boot is the one wanted.
const maxRefusals = 4096

var (
	reCloudInitUp = regexp.MustCompile(`Cloud-init v\. \S+ (?:running '[^']{1,64}'|finished) at (\w{3}, \d{1,2} \w{3} \d{4} \d{2}:\d{2}:\d{2} [+-]\d{4})\..{0,200}?\bUp (\d{1,9}(?:\.\d{1,6})?) seconds`)
	// The time of a log line: ipamd's and the plugin's JSON "ts" (zap, ISO 8601), a journal line
	// ("Mar 04 09:11:40 host unit[pid]:" or short-iso), a klog header ("E0304 09:11:40.114").
	reJSONTime    = regexp.MustCompile(`"ts":"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:?\d{2}))"`)
	reISOTime     = regexp.MustCompile(`^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:?\d{2})) `)
	reJournalTime = regexp.MustCompile(`^([A-Z][a-z]{2} [ 0-3]\d \d{2}:\d{2}:\d{2}) `)
	reKlogTime    = regexp.MustCompile(`(?:^|\]: )[IWEF](\d{4} \d{2}:\d{2}:\d{2}\.\d{1,9}) `)
)

// bootFacts is when the node last booted, and when ipamd refused connections.
type bootFacts struct {
	// at is the latest boot cloud-init gives; kernel is /proc/stat's, which wins.
	at       time.Time
	from     linePos
	evidence string
	set      bool
	kernel   struct {
		at       time.Time
		from     linePos
		evidence string
		set      bool
	}

	// refused are the times of NK611's lines: those with a year, and those without (journal
	// and klog lines), which take the boot's year.
	refused, refusedNoYear refusalTimes
	untimed                int // NK611 lines without a time
}

// noteCloudInit takes the boot from a cloud-init line that gives wall time and uptime.
func (b *bootFacts) noteCloudInit(file string, n int, line []byte) {
	if !bytes.Contains(line, []byte("Cloud-init v. ")) {
		return
	}
	m := reCloudInitUp.FindSubmatch(line)
	if m == nil {
		return
	}
	wall, err := time.Parse(time.RFC1123Z, string(m[1]))
	if err != nil {
		return
	}
	up, err := strconv.ParseFloat(string(m[2]), 64)
	if err != nil {
		return
	}
	boot := wall.Add(-time.Duration(math.Round(up * float64(time.Second)))).UTC()
	at := linePos{file, n}
	// The latest boot wins; lines of one boot differ by rounding, and the largest estimate,
	// first by position on a tie, is the same whatever order the files come in.
	if !b.set || boot.After(b.at) || (boot.Equal(b.at) && at.before(b.from)) {
		b.at, b.from, b.evidence, b.set = boot, at, evidence(file, n, line), true
	}
}

// noteProcStat takes the kernel's boot time from a /proc/stat line "btime SECONDS".
func (b *bootFacts) noteProcStat(file string, n int, line []byte) {
	rest, ok := bytes.CutPrefix(line, []byte("btime "))
	if !ok {
		return
	}
	secs, err := strconv.ParseInt(string(bytes.TrimSpace(rest)), 10, 64)
	if err != nil || secs <= 0 || secs > 1<<40 {
		return
	}
	b.kernel.at, b.kernel.from, b.kernel.evidence, b.kernel.set = time.Unix(secs, 0).UTC(), linePos{file, n}, evidence(file, n, line), true
}

// boot is when the node booted and the line that says so: the kernel's, else cloud-init's.
func (b *bootFacts) boot() (time.Time, string, bool) {
	if b.kernel.set {
		return b.kernel.at, b.kernel.evidence, true
	}
	return b.at, b.evidence, b.set
}

// noteRefused takes the time of an NK611 line (pattern.onMatchAt).
func (b *bootFacts) noteRefused(file string, n int, line []byte) {
	at := linePos{file, n}
	t, year, ok := lineTime(line)
	switch {
	case !ok:
		b.untimed++
	case year:
		b.refused.add(refusal{t, at})
	default:
		b.refusedNoYear.add(refusal{t, at})
	}
}

// lineTime reads the time a log line starts with; year says whether it has one (a journal or
// klog time does not, and is read as UTC, the clock of EKS AMIs).
func lineTime(line []byte) (t time.Time, year, ok bool) {
	// Each layout is looked for only where its fixed characters are, so that a line without a
	// time (most refusals a bundle holds) costs no regexp run: four runs a line allocated
	// megabytes over a bundle of small logs where the regexp pools do not keep their machines
	// (the race detector's runs).
	if bytes.Contains(line, []byte(`"ts":"`)) {
		if m := reJSONTime.FindSubmatch(line); m != nil {
			t, err := parseISO(string(m[1]))
			return t, true, err == nil
		}
	}
	if len(line) > 20 && isDigit(line[0]) && line[4] == '-' {
		if m := reISOTime.FindSubmatch(line); m != nil {
			t, err := parseISO(string(m[1]))
			return t, true, err == nil
		}
	}
	if len(line) >= 16 && line[0] >= 'A' && line[0] <= 'Z' && line[3] == ' ' {
		if m := reJournalTime.FindSubmatch(line); m != nil {
			t, err := time.Parse("Jan _2 15:04:05", string(m[1]))
			return t, false, err == nil
		}
	}
	if len(line) > 1 && bytes.IndexByte([]byte("IWEF"), line[0]) >= 0 && isDigit(line[1]) || bytes.Contains(line, []byte("]: ")) {
		if m := reKlogTime.FindSubmatch(line); m != nil {
			t, err := time.Parse("0102 15:04:05.999999999", string(m[1]))
			return t, false, err == nil
		}
	}
	return time.Time{}, false, false
}

func parseISO(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), nil
	}
	t, err := time.Parse("2006-01-02T15:04:05.999999999Z0700", s)
	return t.UTC(), err
}

// refusal is one NK611 line's time and place.
type refusal struct {
	t  time.Time
	at linePos
}

func (r refusal) before(o refusal) bool {
	if !r.t.Equal(o.t) {
		return r.t.Before(o.t)
	}
	return r.at.before(o.at)
}

// refusalTimes keeps the latest maxRefusals times (a min-heap), and the latest it dropped.
type refusalTimes struct {
	h       refusalHeap
	dropped refusal
	lost    bool
}

func (r *refusalTimes) add(x refusal) {
	heap.Push(&r.h, x)
	if r.h.Len() > maxRefusals {
		d := heap.Pop(&r.h).(refusal)
		if !r.lost || r.dropped.before(d) {
			r.dropped, r.lost = d, true
		}
	}
}

// firstFrom is the first time at or after boot, with shift applied to each time (the year of
// year-less ones). exact is false when a time it dropped was at or after boot: the first is
// then no later than the one returned.
func (r *refusalTimes) firstFrom(boot time.Time, shift func(time.Time) time.Time) (first refusal, exact, ok bool) {
	for _, x := range r.h {
		x.t = shift(x.t)
		if !x.t.Before(boot) && (!ok || x.before(first)) {
			first, ok = x, true
		}
	}
	exact = true
	if r.lost {
		if d := shift(r.dropped.t); !d.Before(boot) {
			exact = false
			if !ok || d.Before(first.t) {
				first, ok = refusal{d, r.dropped.at}, true
			}
		}
	}
	return first, exact, ok
}

type refusalHeap []refusal

func (h refusalHeap) Len() int           { return len(h) }
func (h refusalHeap) Less(i, j int) bool { return h[i].before(h[j]) }
func (h refusalHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *refusalHeap) Push(x any)        { *h = append(*h, x.(refusal)) }
func (h *refusalHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// inYearOf gives a year-less time the year of the boot (the next year when that would put it
// more than half a year before the boot: a boot on 31 December).
func inYearOf(boot time.Time) func(time.Time) time.Time {
	return func(t time.Time) time.Time {
		t = time.Date(boot.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
		if t.Before(boot.AddDate(0, -6, 0)) {
			t = t.AddDate(1, 0, 0)
		}
		return t
	}
}

// firstRefusedAfter is ipamd's first "connection refused" at or after the boot.
func (b *bootFacts) firstRefusedAfter(boot time.Time) (first refusal, exact, ok bool) {
	first, exact, ok = b.refused.firstFrom(boot, func(t time.Time) time.Time { return t })
	f2, e2, ok2 := b.refusedNoYear.firstFrom(boot, inYearOf(boot))
	if ok2 && (!ok || f2.before(first)) {
		first, exact, ok = f2, e2, true
	}
	return first, exact, ok
}

// reportBoot relates the block IO delay to the boot and to ipamd's first connection refused,
// when the bundle shows both.
func (a *analysis) reportBoot(rep *findings.Report) {
	b := &a.boot
	over := a.ioOverThreshold()
	if len(over) == 0 || b.refused.h.Len()+b.refusedNoYear.h.Len()+b.untimed == 0 {
		return // nothing to relate: NK621 or NK611 did not fire
	}
	skip := func(reason string) {
		f := RuleBootIODelay.Skip(pIOThrottling, reason)
		f.Section = SectionIO
		rep.Add(f)
	}
	boot, bootLine, ok := b.boot()
	if !ok {
		skip("NK621 and NK611 both fired, but the bundle does not say when the node booted (no \"btime\" in " + pProcStat + ", no cloud-init \"at TIME. Up N seconds\" line in " + pCloudInitOut + " or " + pCloudInitLog + ")")
		return
	}
	first, exact, ok := b.firstRefusedAfter(boot)
	if !ok {
		skip(fmt.Sprintf("NK621 and NK611 both fired, but no connection refused line with a time is at or after the last boot (%s)", boot.Format(time.RFC3339)))
		return
	}
	after := first.t.Sub(boot)
	if after > bootWindow {
		if !exact {
			// The refusals kept are the latest: the first after the boot may have been dropped.
			skip(fmt.Sprintf("NK621 and NK611 both fired, but more connection refused lines came than the %d kept, and the earliest kept is %s after the boot: the first one after the boot is not known", maxRefusals, after.Round(time.Second)))
		}
		return // ipamd refused connections long after the boot: not the boot's IO
	}
	came := "came at"
	if !exact {
		came = "came by" // more refusals than were kept: the first is no later than this
	}
	secs := int(after.Round(time.Second) / time.Second)
	const layout = "2006-01-02 15:04:05 MST"
	f := RuleBootIODelay.New(pIOThrottling,
		"the root volume was throttled during boot (%s waiting for block IO since they started); ipamd's first connection refused %s T+%ds (%s), %d s after boot (T = %s)",
		ioSummary(over, 3), came, secs, first.t.Round(time.Second).Format(layout), secs, boot.Round(time.Second).Format(layout))
	rep.Add(f.WithEvidence(
		"boot from "+bootLine,
		fmt.Sprintf("first connection refused: %s:%d", textsafe.ClipRawBytes(first.at.file, evidenceWidth), first.at.n),
	))
}

// ioOverThreshold lists the processes of io_throttling.txt at or above the NK621 threshold,
// most delayed first (reportIO sorted them).
func (a *analysis) ioOverThreshold() []ioProc {
	var over []ioProc
	for _, p := range a.ioTop {
		if p.delay >= a.o.IODelayThreshold {
			over = append(over, p)
		}
	}
	return over
}

// ioSummary names the n most delayed processes: "kubelet 45.21s, containerd 30.12s and 2 more".
func ioSummary(ps []ioProc, n int) string {
	var parts []string
	for i, p := range ps {
		if i == n {
			break
		}
		parts = append(parts, textsafe.ClipRawBytes(p.name, 64)+" "+p.delay.String())
	}
	s := strings.Join(parts, ", ")
	if len(ps) > n {
		s += fmt.Sprintf(" and %d more", len(ps)-n)
	}
	return s
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }
