// Package progress draws a one-line progress report on stderr for long commands (gc, audit,
// doctor). It is for people watching a terminal: by default (mode auto) it draws nothing unless
// the writer is a terminal, so pipes, files and CI logs never get carriage returns mixed into them.
//
// A Meter redraws its line with '\r' at most once per Every (a few times a second), shows the
// rate and, when the total is known, an ETA, and ends with one final line and a newline.
// Machine output never goes through it: callers give it stderr only.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// Mode is the value of a --progress flag.
type Mode string

const (
	// Auto shows progress only when the writer is a terminal.
	Auto Mode = "auto"
	// Always shows progress whatever the writer is.
	Always Mode = "always"
	// Never shows no progress.
	Never Mode = "never"
)

// FlagUsage is the help text shared by every command's --progress flag.
const FlagUsage = "progress line on stderr: auto (when stderr is a terminal), always or never"

// ParseMode checks a --progress value.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case Auto, Always, Never:
		return m, nil
	}
	return "", fmt.Errorf("unknown --progress %q (want auto, always or never)", s)
}

// Enabled reports whether progress should be drawn on w in this mode.
func (m Mode) Enabled(w io.Writer) bool {
	switch m {
	case Always:
		return true
	case Auto:
		return IsTerminal(w)
	}
	return false
}

// IsTerminal reports whether stream, a reader or a writer, is an *os.File attached to a
// terminal: the one terminal test of nodekeeper's own code (--progress=auto, gc's prompt). Colour
// is cli-runtime's decision (printers.AllowsColorOutput), which also looks at the environment.
func IsTerminal(stream any) bool {
	f, ok := stream.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// DefaultEvery is how often a Meter redraws at most.
const DefaultEvery = 200 * time.Millisecond

// Meter counts work done and draws it on one line. The zero value is not usable; use New.
// A nil *Meter is valid and does nothing, so callers can pass it around unconditionally.
// Its methods are safe for concurrent use.
type Meter struct {
	w     io.Writer
	unit  string
	bytes bool
	now   func() time.Time
	every time.Duration

	mu       sync.Mutex
	start    time.Time
	lastDraw time.Time
	done     int64
	total    int64
	extra    string
	width    int // length of the last line drawn, to blank what a shorter line leaves behind
	finished bool
}

// Options configure a Meter.
type Options struct {
	// Unit names what is counted ("nodes", "leases"); ignored when Bytes is set.
	Unit string
	// Bytes formats the counts as sizes (KiB, MiB, ...).
	Bytes bool
	// Total is the amount of work expected; 0 or less means unknown (no ETA).
	Total int64
	// Now is the clock (default time.Now); tests inject one.
	Now func() time.Time
	// Every throttles redraws (default DefaultEvery).
	Every time.Duration
}

// New returns a Meter drawing on w, or nil (a no-op Meter) when mode says not to draw on w.
func New(w io.Writer, mode Mode, opts Options) *Meter {
	if !mode.Enabled(w) {
		return nil
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	every := opts.Every
	if every <= 0 {
		every = DefaultEvery
	}
	return &Meter{w: w, unit: opts.Unit, bytes: opts.Bytes, now: now, every: every, start: now(), total: opts.Total}
}

// Set records the amount done so far and, optionally, a short suffix (counts of outcomes, events
// read); it redraws when the last draw is at least Every old.
func (m *Meter) Set(done int64, extra string) {
	if !m.lock() {
		return
	}
	defer m.mu.Unlock()
	m.set(done, extra)
}

// Add adds n to the amount done and redraws if due. Concurrent calls all count: the sum is
// taken under the lock.
func (m *Meter) Add(n int64) {
	if !m.lock() {
		return
	}
	defer m.mu.Unlock()
	m.set(m.done+n, m.extra)
}

// set records done and extra and draws if due; m.mu is held.
func (m *Meter) set(done int64, extra string) {
	m.done, m.extra = done, extra
	if now := m.now(); m.lastDraw.IsZero() || now.Sub(m.lastDraw) >= m.every {
		m.lastDraw = now
		m.draw(now, false)
	}
}

// lock locks a meter that still draws and reports whether it did: a nil meter (progress off)
// or a finished one is left alone.
func (m *Meter) lock() bool {
	if m == nil {
		return false
	}
	m.mu.Lock()
	if m.finished {
		m.mu.Unlock()
		return false
	}
	return true
}

// SetTotal changes the expected total (0 or less: unknown).
func (m *Meter) SetTotal(total int64) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.total = total
	m.mu.Unlock()
}

// Finish draws the final line (no ETA, the elapsed time instead) and ends it with a newline.
// Later calls do nothing.
func (m *Meter) Finish() {
	if !m.lock() {
		return
	}
	defer m.mu.Unlock()
	m.finished = true
	m.draw(m.now(), true)
}

// draw writes the line; m.mu is held.
func (m *Meter) draw(now time.Time, final bool) {
	elapsed := now.Sub(m.start)
	rate := float64(m.done) / max(elapsed.Seconds(), 1e-3)
	var b strings.Builder
	b.WriteString(m.amount(m.done))
	if m.total > 0 {
		b.WriteString("/" + m.amount(m.total))
	}
	if !m.bytes && m.unit != "" {
		b.WriteString(" " + m.unit)
	}
	if m.bytes {
		fmt.Fprintf(&b, " (%s/s)", formatBytes(int64(rate)))
	} else {
		fmt.Fprintf(&b, " (%.0f/s)", rate)
	}
	if m.extra != "" {
		b.WriteString(", " + m.extra)
	}
	switch {
	case final:
		fmt.Fprintf(&b, ", done in %s", elapsed.Round(time.Second/10))
	case m.total > 0 && m.done > 0 && m.done < m.total:
		eta := time.Duration(float64(m.total-m.done) / rate * float64(time.Second))
		fmt.Fprintf(&b, ", ETA %s", eta.Round(time.Second))
	}
	line := b.String()
	pad := max(m.width-len(line), 0)
	m.width = len(line)
	end := ""
	if final {
		end = "\n"
	}
	fmt.Fprintf(m.w, "\r%s%s%s", line, strings.Repeat(" ", pad), end)
}

func (m *Meter) amount(n int64) string {
	if m.bytes {
		return formatBytes(n)
	}
	return fmt.Sprint(n)
}

// formatBytes prints n in binary units with one decimal.
func formatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for v := n / unit; v >= unit && exp < 4; v /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}
