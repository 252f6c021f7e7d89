package syncbuf

import (
	"strings"
	"sync"
	"testing"
)

// Writers on several goroutines, and reads while they write, lose no byte and tear no write.
func TestConcurrentWrites(t *testing.T) {
	const writers, lines = 4, 500
	var b Buffer
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			line := strings.Repeat(string(rune('a'+w)), 32) + "\n"
			for range lines {
				if _, err := b.Write([]byte(line)); err != nil {
					t.Error(err)
				}
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	got := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(got) != writers*lines {
		t.Fatalf("%d lines, want %d", len(got), writers*lines)
	}
	for i, line := range got {
		if len(line) != 32 || strings.Count(line, line[:1]) != 32 {
			t.Fatalf("line %d is torn: %q", i+1, line)
		}
	}
}
