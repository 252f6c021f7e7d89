package audit

import (
	"sync"
	"unicode/utf8"
)

// interner maps the few strings that repeat across millions of events (user names, user
// agents, source IPs, resources, node and lease names) to small integers, so that records
// stay small and the analysis compares integers. ID 0 is the empty string. Only bounded
// vocabularies are interned: names of nodes and leases, never names of arbitrary objects.
type interner struct {
	mu   sync.Mutex
	ids  map[string]uint32
	strs []string
}

func newInterner() *interner {
	return &interner{ids: map[string]uint32{"": 0}, strs: []string{""}}
}

func (in *interner) intern(b []byte) uint32 {
	in.mu.Lock()
	id, ok := in.ids[string(b)]
	if !ok {
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

// str returns the string for an ID.
func (in *interner) str(id uint32) string {
	in.mu.Lock()
	s := in.strs[id]
	in.mu.Unlock()
	return s
}

// snapshot returns the table for lock-free reads once no worker runs any more.
func (in *interner) snapshot() []string {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.strs
}

// localInterner is one worker's cache in front of the shared table, so the hot path takes no
// lock once a string has been seen.
type localInterner struct {
	shared *interner
	cache  map[string]uint32
}

func newLocalInterner(shared *interner) *localInterner {
	return &localInterner{shared: shared, cache: make(map[string]uint32, 1024)}
}

func (l *localInterner) id(b []byte) uint32 {
	if len(b) == 0 {
		return 0
	}
	if id, ok := l.cache[string(b)]; ok {
		return id
	}
	id := l.shared.intern(b)
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
