package podstate

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/lru"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// CachedKey is the key under which the operator's pod cache keeps a pod's
// SidecarSet state in place of the JSON annotations: the hashes, the
// in-place update state and the working hot-upgrade twins, already decoded
// once and written in a compact form that Read decodes without JSON or
// reflection (the informer's transform, Compact). It is not a valid
// annotation key (it holds a space), so no pod the API server stores can
// carry it: it exists only in the cache, which is never written back.
const CachedKey = "sidecarset-operator.dev/state cached"

// cachedKeys are the annotations Compact replaces with CachedKey. The
// injected-list stays as it is: it is short, and the cache indexes pods by it.
var cachedKeys = []string{
	appsv1beta1.SidecarSetHashAnnotation,
	appsv1beta1.SidecarSetHashWithoutImageAnnotation,
	appsv1beta1.InPlaceUpdateStateAnnotation,
	appsv1beta1.WorkingHotUpgradeContainerAnnotation,
}

// The compact form's separators: sections (hashes, hashes without image,
// in-place state, working twins), entries, fields, list items. A value
// holding one of them is never compacted.
const (
	sepSection = '\x1d'
	sepEntry   = '\x1e'
	sepField   = '\x1f'
	sepItem    = '\x1c'
	separators = "\x1c\x1d\x1e\x1f"
)

// Compact returns the annotations a cached pod keeps: the same ones with the
// SidecarSet state annotations replaced by their decoded state under
// CachedKey. ok is false when there is nothing to replace, or when an
// annotation does not decode or holds what the compact form cannot carry:
// the caller keeps the annotations as they are, and Read decodes (or
// reports) them as before. The input is not modified.
func Compact(annotations map[string]string) (out map[string]string, ok bool) {
	present := false
	for _, k := range cachedKeys {
		_, found := annotations[k]
		present = present || found
	}
	if !present {
		return annotations, false
	}
	state, err := Read(annotations)
	if err != nil {
		return annotations, false
	}
	value, ok := encodeCached(state)
	if !ok {
		return annotations, false
	}
	out = make(map[string]string, len(annotations)-len(cachedKeys)+1)
	for k, v := range annotations {
		if k != CachedKey && !isCachedKey(k) {
			out[k] = v
		}
	}
	out[CachedKey] = value
	return out, true
}

// SameHashes reports whether two versions of a pod's annotations hold the
// same kruise.io/sidecarset-hash, as sent by the API server or as cached.
func SameHashes(a, b map[string]string) bool {
	return a[appsv1beta1.SidecarSetHashAnnotation] == b[appsv1beta1.SidecarSetHashAnnotation] && a[CachedKey] == b[CachedKey]
}

func isCachedKey(k string) bool { return slices.Contains(cachedKeys, k) }

func encodeCached(s State) (string, bool) {
	var b strings.Builder
	ok := writeHashes(&b, s.Hashes)
	b.WriteByte(sepSection)
	ok = ok && writeHashes(&b, s.HashesWithoutImage)
	b.WriteByte(sepSection)
	first := true
	for _, name := range slices.Sorted(maps.Keys(s.InPlace)) {
		e := s.InPlace[name]
		if e == nil {
			return "", false
		}
		entrySep(&b, &first)
		ok = ok && fields(&b, name, e.Revision, timeField(e.UpdateTimestamp))
		b.WriteByte(sepField)
		if e.LastContainerStatuses == nil {
			b.WriteByte('n')
			continue
		}
		b.WriteByte('m')
		for i, c := range slices.Sorted(maps.Keys(e.LastContainerStatuses)) {
			if i > 0 {
				b.WriteByte(sepItem)
			}
			ok = ok && clean(c) && clean(e.LastContainerStatuses[c].ImageID)
			b.WriteString(c)
			b.WriteByte(sepItem)
			b.WriteString(e.LastContainerStatuses[c].ImageID)
		}
	}
	b.WriteByte(sepSection)
	first = true
	for _, name := range slices.Sorted(maps.Keys(s.WorkingHotUpgrade)) {
		entrySep(&b, &first)
		ok = ok && fields(&b, name, s.WorkingHotUpgrade[name])
	}
	return b.String(), ok
}

func writeHashes(b *strings.Builder, h Hashes) bool {
	ok := true
	first := true
	for _, name := range slices.Sorted(maps.Keys(h)) {
		e := h[name]
		entrySep(b, &first)
		ok = ok && fields(b, name, timeField(e.UpdateTimestamp), e.Hash, e.SidecarSetName)
		b.WriteByte(sepField)
		ok = ok && writeList(b, e.SidecarList)
		b.WriteByte(sepField)
		ok = ok && fields(b, e.ControllerRevision)
	}
	return ok
}

func entrySep(b *strings.Builder, first *bool) {
	if !*first {
		b.WriteByte(sepEntry)
	}
	*first = false
}

// fields writes values separated by sepField; false if one holds a
// separator.
func fields(b *strings.Builder, values ...string) bool {
	ok := true
	for i, v := range values {
		if i > 0 {
			b.WriteByte(sepField)
		}
		ok = ok && clean(v)
		b.WriteString(v)
	}
	return ok
}

func clean(v string) bool { return !strings.ContainsAny(v, separators) }

// writeList writes a sidecarList: n for null, l and the items otherwise;
// false if an item is empty or holds a separator.
func writeList(b *strings.Builder, l []string) bool {
	if l == nil {
		b.WriteByte('n')
		return true
	}
	b.WriteByte('l')
	ok := true
	for i, n := range l {
		if i > 0 {
			b.WriteByte(sepItem)
		}
		ok = ok && n != "" && clean(n)
		b.WriteString(n)
	}
	return ok
}

// timeField is a timestamp in Unix seconds (and nanoseconds when any), ""
// for the zero time.
func timeField(t metav1.Time) string {
	if t.IsZero() {
		return ""
	}
	s := strconv.FormatInt(t.Unix(), 10)
	if ns := t.Nanosecond(); ns != 0 {
		s += "." + strconv.Itoa(ns)
	}
	return s
}

// decodedStates memoizes readCached by compact value. The pods of a
// SidecarSet hold a handful of distinct states (the pods written in the same
// second hold equal ones), and every plan reads the state of every pod, so
// each distinct state is decoded once, not once per pod and plan. Bounded,
// the least recently used out first. The states are shared, and read-only
// as the cached pods they come from are.
var decodedStates = lru.New(1024)

func readCachedShared(value string) State {
	if s, ok := decodedStates.Get(value); ok {
		return s.(State)
	}
	s := readCached(value)
	decodedStates.Add(value, s)
	return s
}

// readCached decodes the compact form back into the State Read returns for
// the annotations it replaced (Injected is the caller's), but for empty
// maps, which are nil: the controller, which reads cached pods, never
// writes into a decoded state (it writes into copies).
func readCached(value string) State {
	hashes, rest := cut(value, sepSection)
	without, rest := cut(rest, sepSection)
	inPlace, working := cut(rest, sepSection)
	s := State{Hashes: readHashes(hashes), HashesWithoutImage: readHashes(without)}
	if inPlace != "" {
		s.InPlace = map[string]*InPlaceUpdateState{}
	}
	for entry := range entries(inPlace) {
		name, r := cut(entry, sepField)
		revision, r := cut(r, sepField)
		ts, statuses := cut(r, sepField)
		e := &InPlaceUpdateState{Revision: revision, UpdateTimestamp: readTime(ts)}
		if strings.HasPrefix(statuses, "m") {
			e.LastContainerStatuses = map[string]ContainerStatus{}
			for pairs := statuses[1:]; pairs != ""; {
				var c, id string
				c, pairs = cut(pairs, sepItem)
				id, pairs = cut(pairs, sepItem)
				e.LastContainerStatuses[c] = ContainerStatus{ImageID: id}
			}
		}
		s.InPlace[name] = e
	}
	if working != "" {
		s.WorkingHotUpgrade = map[string]string{}
	}
	for entry := range entries(working) {
		name, twin := cut(entry, sepField)
		s.WorkingHotUpgrade[name] = twin
	}
	return s
}

func readHashes(section string) Hashes {
	if section == "" {
		return nil
	}
	h := Hashes{}
	for entry := range entries(section) {
		name, r := cut(entry, sepField)
		ts, r := cut(r, sepField)
		hash, r := cut(r, sepField)
		set, r := cut(r, sepField)
		list, revision := cut(r, sepField)
		e := HashEntry{UpdateTimestamp: readTime(ts), Hash: hash, SidecarSetName: set, ControllerRevision: revision}
		if strings.HasPrefix(list, "l") {
			e.SidecarList = []string{}
			if list != "l" {
				e.SidecarList = strings.Split(list[1:], string(rune(sepItem)))
			}
		}
		h[name] = e
	}
	return h
}

func entries(section string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for section != "" {
			var e string
			e, section = cut(section, sepEntry)
			if !yield(e) {
				return
			}
		}
	}
}

func cut(s string, sep byte) (before, after string) {
	if i := strings.IndexByte(s, sep); i >= 0 {
		return s[:i], s[i+1:]
	}
	return s, ""
}

func readTime(v string) metav1.Time {
	if v == "" {
		return metav1.Time{}
	}
	secs, nanos := cut(v, '.')
	s, _ := strconv.ParseInt(secs, 10, 64)
	ns, _ := strconv.ParseInt(nanos, 10, 64)
	return metav1.NewTime(time.Unix(s, ns).Local())
}
