package read

import (
	"hash/maphash"
	"sync"
	"unicode/utf8"
)

// Interner maps the few strings that repeat across millions of events (user names, user
// agents, source IPs, resources, node and lease names) to small integers, so that records
// stay small and the analysis compares integers. ID 0 is the empty string. Only bounded
// vocabularies are interned: names of nodes and leases, never names of arbitrary objects.
//
// The table is bounded too: a log of ten million distinct lease or user names must not need
// gigabytes. Past maxStrings entries a new string is not kept; it gets an ID made of a hash of
// its bytes with the top bit set, which still compares equal for equal strings (and, rarely,
// for two different ones: such IDs only ever reach state that is itself past its bound and
// reported as approximate) and prints as NotKeptName.
type Interner struct {
	mu      sync.Mutex
	ids     map[string]uint32
	strs    []string
	max     int
	seed    maphash.Seed
	notKept int64 // distinct lookups that found the table full
}

const (
	// DefaultMaxStrings bounds the table: half a million names, about 50 MiB at most.
	DefaultMaxStrings = 1 << 19
	hashedID          = 1 << 31
	// NotKeptName stands for a string that was not kept because the table was full.
	NotKeptName = "(not kept: too many distinct names)"
)

func newInterner() *Interner { return NewInterner(0) }

// NewInterner returns an empty table that keeps up to maxStrings strings (0: DefaultMaxStrings).
func NewInterner(maxStrings int) *Interner {
	if maxStrings <= 0 {
		maxStrings = DefaultMaxStrings
	}
	return &Interner{ids: map[string]uint32{"": 0}, strs: []string{""}, max: maxStrings, seed: maphash.MakeSeed()}
}

// Intern returns the ID of b, adding it to the table while there is room.

func (in *Interner) Intern(b []byte) uint32 {
	in.mu.Lock()
	id, ok := in.ids[string(b)]
	if !ok {
		if len(in.strs) >= in.max {
			in.notKept++
			in.mu.Unlock()
			return hashedID | uint32(maphash.Bytes(in.seed, b)&(hashedID-1))
		}
		s := fixUTF8(b)
		if id, ok = in.ids[s]; !ok {
			id = uint32(len(in.strs))
			in.strs = append(in.strs, s)
		}
		in.ids[string(b)] = id
	}
	in.mu.Unlock()
	return id
}

// NotKept counts the distinct lookups that found the table full.
func (in *Interner) NotKept() int64 {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.notKept
}

// Str returns the string for an ID.
func (in *Interner) Str(id uint32) string {
	if id&hashedID != 0 {
		return NotKeptName
	}
	in.mu.Lock()
	s := in.strs[id]
	in.mu.Unlock()
	return s
}

// Snapshot returns a lookup for lock-free reads once no worker runs any more.
func (in *Interner) Snapshot() func(uint32) string {
	in.mu.Lock()
	strs := in.strs
	in.mu.Unlock()
	return func(id uint32) string {
		if id&hashedID != 0 {
			return NotKeptName
		}
		return strs[id]
	}
}

// localInterner is one worker's cache in front of the shared table, so the hot path takes no
// lock once a string has been seen.
type localInterner struct {
	shared *Interner
	cache  map[string]uint32
}

func newLocalInterner(shared *Interner) *localInterner {
	return &localInterner{shared: shared, cache: make(map[string]uint32, 1024)}
}

// maxLocalCache bounds each worker's cache; a full cache is emptied and refilled.
const maxLocalCache = 1 << 16

func (l *localInterner) id(b []byte) uint32 {
	if len(b) == 0 {
		return 0
	}
	if id, ok := l.cache[string(b)]; ok {
		return id
	}
	id := l.shared.Intern(b)
	if len(l.cache) >= maxLocalCache {
		clear(l.cache)
	}
	l.cache[string(b)] = id
	return id
}

// fixUTF8 returns b as a string with every byte that is not part of valid UTF-8 replaced by
// U+FFFD, exactly as encoding/json does when it decodes a string.
func fixUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	out := make([]byte, 0, len(b)+8)
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	return string(out)
}
