package bundle

import (
	"bytes"
	"fmt"
	"time"

	"github.com/nodekeeper/nodekeeper/internal/textsafe"
)

// Story is what `nodekeeper explain --bundle` joins to a node's timeline: whose bundle this is
// (the instance ID of system/instance-id.txt, the host the kubelet's journal names) and, when
// the bundle shows them, the boot and ipamd's first "connection refused" after it, the two
// moments NK622 relates, each with the file:line that says so. Texts are as written (clipped);
// printers escape them.
type Story struct {
	Name       string
	InstanceID string
	Hostname   string
	// Boot and FirstRefused are nil when the bundle does not show them.
	Boot, FirstRefused *StoryLine
}

// StoryLine is one moment a bundle shows, and where.
type StoryLine struct {
	Time  time.Time
	Where string // file:line
	What  string
}

// story is the Story of the analysed bundle.
func (a *analysis) story(name string) *Story {
	s := &Story{Name: name, InstanceID: textsafe.ClipRaw(a.instanceID, 64), Hostname: a.hostname}
	boot, _, ok := a.boot.boot()
	if !ok {
		return s
	}
	from := a.boot.from
	what := "the node booted (cloud-init's wall time less its uptime)"
	if a.boot.kernel.set {
		from, what = a.boot.kernel.from, "the node booted (the kernel's btime)"
	}
	s.Boot = &StoryLine{Time: boot, Where: fmt.Sprintf("%s:%d", from.file, from.n), What: what}
	if first, exact, ok := a.boot.firstRefusedAfter(boot); ok && first.t.Sub(boot) <= bootWindow {
		what := fmt.Sprintf("ipamd's first connection refused, %d s after boot", int(first.t.Sub(boot).Round(time.Second)/time.Second))
		if !exact {
			what += " or earlier (more refusals than were kept)"
		}
		s.FirstRefused = &StoryLine{Time: first.t, Where: fmt.Sprintf("%s:%d", first.at.file, first.at.n), What: what}
	}
	return s
}

// noteJournalHost keeps the host of the kubelet journal's first line that has one
// ("Mar 04 09:11:40 ip-10-0-12-34.ec2.internal kubelet[3121]: ..."): the node's hostname.
func (a *analysis) noteJournalHost(_ int, line []byte) {
	if a.hostname != "" || len(line) < 17 || reJournalTime.Find(line) == nil {
		return
	}
	rest := line[16:]
	host, tail, ok := bytes.Cut(rest, []byte(" "))
	if !ok || len(host) == 0 || len(host) > 253 || !bytes.HasPrefix(tail, []byte("kubelet")) {
		return
	}
	a.hostname = textsafe.ClipRawBytes(string(host), 253)
}
