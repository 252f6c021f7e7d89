package read

import (
	"fmt"
	"testing"
)

// The string table is bounded: names past it compare by hash and print as not kept.
func TestInternerBounded(t *testing.T) {
	in := NewInterner(10)
	ids := map[uint32]bool{}
	for i := 0; i < 100; i++ {
		ids[in.Intern([]byte(fmt.Sprintf("name-%d", i)))] = true
	}
	if len(in.strs) != 10 || in.notKept != 91 || len(ids) != 100 {
		t.Errorf("table %d, not kept %d, distinct IDs %d", len(in.strs), in.notKept, len(ids))
	}
	a, b := in.Intern([]byte("name-50")), in.Intern([]byte("name-50"))
	if a != b || a&hashedID == 0 || in.Snapshot()(a) != NotKeptName {
		t.Errorf("a name past the table: %x %x %q", a, b, in.Snapshot()(a))
	}
}
