package cachetransform

import (
	"hash/maphash"
	"runtime"
	"strings"
	"sync"
	"unsafe"
	"weak"
)

// share returns the canonical copy of s: strings decoded apart and equal
// point to one copy, across every transform of the manager (the Interner's
// and the PodCache's), for as long as any object holds that copy. Once no
// object holds it, a garbage collection frees it and its entry goes with it:
// the table keeps no string for nobody and has no size at which it starts
// over.
//
// Go's unique package does not serve here: its canonical copy lives while a
// unique.Handle does, and cached objects hold the string, not a handle, so
// each garbage collection would drop the entries of strings still in use
// and the next object would bring a new copy of each.
func share(s string) string {
	if s == "" {
		return ""
	}
	return shared.share(s)
}

// shared is the manager's one table of canonical strings.
var shared = &stringTable{seed: maphash.MakeSeed(), m: map[uint64]heldString{}}

// stringTable files canonical strings by their hash and holds them weakly:
// the objects holding a string keep its bytes alive, the table does not.
type stringTable struct {
	seed maphash.Seed
	mu   sync.Mutex
	m    map[uint64]heldString
}

// heldString is a canonical string the table does not keep alive: a weak
// pointer to its first byte, and its length.
type heldString struct {
	data weak.Pointer[byte]
	n    int
}

// entry names one table entry for its cleanup.
type entry struct {
	hash uint64
	data weak.Pointer[byte]
}

func (t *stringTable) share(s string) string {
	h := maphash.String(t.seed, s)
	t.mu.Lock()
	defer t.mu.Unlock()
	if held, ok := t.m[h]; ok {
		if p := held.data.Value(); p != nil {
			if c := unsafe.String(p, held.n); c == s { //nolint:gosec // p is the first byte of a live string of held.n bytes, never written
				return c
			}
			// Another string with the same 64-bit hash holds the entry:
			// this one is not shared.
			return strings.Clone(s)
		}
	}
	c := strings.Clone(s)
	p := unsafe.StringData(c) //nolint:gosec // only read back through unsafe.String with its length
	w := weak.Make(p)
	t.m[h] = heldString{data: w, n: len(c)}
	runtime.AddCleanup(p, t.forget, entry{hash: h, data: w})
	return c
}

// forget removes the entry of a string the garbage collector freed, unless
// a newer copy took its place.
func (t *stringTable) forget(e entry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if held, ok := t.m[e.hash]; ok && held.data == e.data {
		delete(t.m, e.hash)
	}
}
