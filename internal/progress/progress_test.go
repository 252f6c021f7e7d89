package progress

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func TestParseMode(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Mode
		wantErr bool
	}{
		{"auto", Auto, false}, {"always", Always, false}, {"never", Never, false},
		{"sometimes", "", true}, {"", "", true},
	} {
		got, err := ParseMode(tc.in)
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("ParseMode(%q) = %q, %v; want %q, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

// A buffer is not a terminal: auto and never draw nothing, always draws.
func TestModeEnabled(t *testing.T) {
	for _, tc := range []struct {
		mode Mode
		want bool
	}{{Auto, false}, {Never, false}, {Always, true}} {
		var buf bytes.Buffer
		m := New(&buf, tc.mode, Options{Unit: "nodes"})
		m.Set(1, "")
		m.Finish()
		if got := buf.Len() > 0; got != tc.want {
			t.Errorf("mode %s on a buffer: drew %v (%q), want %v", tc.mode, got, buf.String(), tc.want)
		}
	}
}

func TestMeterLines(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  Options
		steps func(m *Meter, c *fakeClock)
		want  []string // each '\r'-separated frame, the final one with its newline
	}{
		{
			name: "count with total: rate and ETA, then a final line",
			opts: Options{Unit: "nodes", Total: 10},
			steps: func(m *Meter, c *fakeClock) {
				c.advance(time.Second)
				m.Set(2, "")
				c.advance(time.Second)
				m.Set(4, "1 failed")
				c.advance(time.Second)
				m.Finish()
			},
			want: []string{"", "2/10 nodes (2/s), ETA 4s", "4/10 nodes (2/s), 1 failed, ETA 3s", "4/10 nodes (1/s), 1 failed, done in 3s\n"},
		},
		{
			name: "unknown total: no ETA",
			opts: Options{Unit: "leases"},
			steps: func(m *Meter, c *fakeClock) {
				c.advance(2 * time.Second)
				m.Add(10)
				m.Finish()
			},
			want: []string{"", "10 leases (5/s)", "10 leases (5/s), done in 2s\n"},
		},
		{
			name: "bytes",
			opts: Options{Bytes: true, Total: 4 << 20},
			steps: func(m *Meter, c *fakeClock) {
				c.advance(time.Second)
				m.Set(1<<20, "120 events")
				m.Finish()
			},
			want: []string{"", "1.0 MiB/4.0 MiB (1.0 MiB/s), 120 events, ETA 3s", "1.0 MiB/4.0 MiB (1.0 MiB/s), 120 events, done in 1s\n"},
		},
		{
			name: "redraws throttled, a shorter line blanks the longer one",
			opts: Options{Unit: "nodes", Every: time.Second},
			steps: func(m *Meter, c *fakeClock) {
				c.advance(time.Second)
				m.Set(1000, "")
				c.advance(time.Second / 2)
				m.Set(1001, "") // too soon: not drawn
				c.advance(time.Second / 2)
				m.Set(1002, "")
				c.advance(98 * time.Second)
				m.Finish()
				m.Finish() // once only
				m.Set(5, "")
			},
			want: []string{"", "1000 nodes (1000/s)", "1002 nodes (501/s)", "1002 nodes (10/s), done in 1m40s" + "\n"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			c := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
			tc.opts.Now = c.now
			m := New(&buf, Always, tc.opts)
			tc.steps(m, c)
			got := strings.Split(buf.String(), "\r")
			for i := range got {
				if i < len(got)-1 || !strings.HasSuffix(got[i], "\n") {
					got[i] = strings.TrimRight(got[i], " ")
				}
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("frames:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// A shorter line is padded with spaces over what the longer one left on the terminal.
func TestMeterPadsShorterLine(t *testing.T) {
	var buf bytes.Buffer
	c := &fakeClock{t: time.Unix(0, 0)}
	m := New(&buf, Always, Options{Unit: "n", Now: c.now})
	c.advance(time.Second)
	m.Set(1, "a long suffix here")
	c.advance(time.Second)
	m.Set(2, "")
	frames := strings.Split(buf.String(), "\r")
	if len(frames) != 3 || len(frames[2]) != len(frames[1]) {
		t.Errorf("second frame %q not padded to the first %q", frames[2], frames[1])
	}
}

// A nil Meter (what New returns when not drawing) is safe to use.
func TestNilMeter(t *testing.T) {
	var m *Meter
	m.Set(1, "x")
	m.Add(1)
	m.SetTotal(3)
	m.Finish()
}

// TestConcurrentAddsAllCount: Adds from many goroutines (audit's parsing workers) are summed under
// the lock, so none is lost between reading the count and writing it back.
func TestConcurrentAddsAllCount(t *testing.T) {
	const goroutines, adds = 8, 2000
	var buf bytes.Buffer
	c := &fakeClock{t: time.Unix(0, 0)}
	m := New(&buf, Always, Options{Unit: "events", Now: c.now, Every: time.Hour})
	var wg sync.WaitGroup
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range adds {
				m.Add(1)
				runtime.Gosched()
			}
		}()
	}
	wg.Wait()
	m.Finish()
	if want := fmt.Sprintf("%d events", goroutines*adds); !strings.Contains(buf.String(), want) {
		t.Errorf("final line %q, want %q", buf.String(), want)
	}
}
