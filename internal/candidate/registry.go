// Package candidate keeps every SidecarSet ready for the pods (defaulted,
// hashed, selectors and resourcesPolicies compiled) in a registry indexed so
// that a pod's candidates are found without looking at SidecarSets that
// cannot match it. The pod webhook injects from it, the kubectl plugin runs
// the webhook's decision over one, and the controller's detector of pods
// that miss their sidecars (controllers/detect) looks pods up in it.
//
// A registry has one writer. In the manager it is its Follower, whose
// handler on the SidecarSet informer keeps it in step with the cluster and
// tells the one listener (OnChange) of each change after making it; the
// plugin and the tests build a fixed one from a list (New).
//
// SidecarSets are bucketed by namespace (the namespace they are pinned to, or
// cluster scope) and, within a bucket, by one label requirement their pod
// selector imposes (a matchLabels pair, or each value of an In expression).
// A pod's candidates are the SidecarSets under its namespace and cluster
// scope whose key is one of the pod's labels, plus the few whose selector has
// no such requirement. The work per pod grows with the pod's labels and the
// SidecarSets that share a label with it, not with the number of SidecarSets.
package candidate

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sidecarset-operator/sidecarset-operator/api/match"
	"github.com/sidecarset-operator/sidecarset-operator/api/resources"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// Entry is one SidecarSet, prepared for injection. It is immutable and
// shared: callers must not modify it.
type Entry struct {
	// SidecarSet is a defaulted copy of the stored object.
	SidecarSet *appsv1beta1.SidecarSet
	// Hashes of its spec.
	Hashes appsv1beta1.Hashes
	// Selector is the compiled pod selector; nil if invalid or empty.
	Selector labels.Selector
	// SelectorError is set when the pod selector does not compile.
	SelectorError error
	// Resources are its sidecars' compiled resourcesPolicies.
	Resources resources.Policies
}

// Matches reports whether the entry's pod selector matches a label set.
func (e *Entry) Matches(set map[string]string) bool {
	return e.Selector != nil && e.Selector.Matches(labels.Set(set))
}

// Registry is the concurrency-safe index of SidecarSets. Its reads are
// for everyone; its writes are its follower's (or New's) alone.
type Registry struct {
	mu      sync.RWMutex
	entries map[string]*Entry   // by SidecarSet name
	buckets map[string][]*Entry // bucket key -> entries (an entry's keys are bucketKeys of its SidecarSet)

	// follow is its follower's progress: nil until one started (then
	// no other may), and whether it holds every SidecarSet.
	follow atomic.Pointer[following]
	// onChange is told of each change the follower makes.
	onChange atomic.Pointer[func(old, current *Entry)]
}

// NewRegistry returns an empty registry, for a Follower to fill.
func NewRegistry() *Registry {
	return &Registry{entries: map[string]*Entry{}, buckets: map[string][]*Entry{}}
}

// New returns a registry of a fixed list of SidecarSets, which nothing
// follows: the kubectl plugin's, and the tests'. It has synced.
func New(sets ...*appsv1beta1.SidecarSet) (*Registry, error) {
	r := NewRegistry()
	for _, s := range sets {
		if _, _, err := r.upsert(s); err != nil {
			return nil, fmt.Errorf("SidecarSet %s: %w", s.Name, err)
		}
	}
	r.follow.Store(&following{synced: func() bool { return true }})
	return r, nil
}

// upsert adds or replaces a SidecarSet, defaulted, and returns the entries
// before and after (both the same when this version was held already). A SidecarSet stored
// already defaulted (through the defaulting webhook) is kept as it is,
// shared with the caller's cache: the caller must not modify it afterwards
// (objects from an informer never are). Otherwise the registry keeps a
// defaulted copy of what injection reads (the metadata, the spec and the
// latest revision recorded on pods).
func (r *Registry) upsert(s *appsv1beta1.SidecarSet) (old, current *Entry, err error) {
	if e := r.held(s); e != nil {
		return e, e, nil // a relist delivers every SidecarSet again
	}
	copied := &appsv1beta1.SidecarSet{TypeMeta: s.TypeMeta, ObjectMeta: *s.ObjectMeta.DeepCopy(), Spec: *s.Spec.DeepCopy()}
	copied.ManagedFields = nil
	copied.Status.LatestRevision = s.Status.LatestRevision
	appsv1beta1.SetDefaults(copied)
	if reflect.DeepEqual(&copied.Spec, &s.Spec) { // exactly: the hashes read nil and empty apart
		copied = s
	}
	hashes, err := appsv1beta1.ComputeHashes(&copied.Spec)
	if err != nil {
		return nil, nil, err
	}
	hashes = sharedHashes(hashes, copied.Annotations)
	e := &Entry{SidecarSet: copied, Hashes: hashes, Resources: resources.CompileSpec(&copied.Spec)}
	if !match.IsEmpty(copied.Spec.Selector) {
		e.Selector, e.SelectorError = compileSelector(copied.Spec.Selector)
	}
	keys := bucketKeys(copied)

	r.mu.Lock()
	defer r.mu.Unlock()
	old = r.removeLocked(copied.Name)
	r.entries[copied.Name] = e
	for _, k := range keys {
		r.buckets[k] = append(r.buckets[k], e)
	}
	return old, e, nil
}

// held returns the entry of this version of the SidecarSet, if the
// registry holds it already.
func (r *Registry) held(s *appsv1beta1.SidecarSet) *Entry {
	if s.ResourceVersion == "" {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if e, ok := r.entries[s.Name]; ok && e.SidecarSet.UID == s.UID && e.SidecarSet.ResourceVersion == s.ResourceVersion {
		return e
	}
	return nil
}

// sharedHashes returns the hashes holding the SidecarSet's own copies of
// them where its annotations record the same (the controller writes them
// there): thousands of SidecarSets need not hold each hash twice.
func sharedHashes(h appsv1beta1.Hashes, annotations map[string]string) appsv1beta1.Hashes {
	if v := annotations[appsv1beta1.SidecarSetHashAnnotation]; v == h.Hash {
		h.Hash = v
	}
	if v := annotations[appsv1beta1.SidecarSetHashWithoutImageAnnotation]; v == h.WithoutImage {
		h.WithoutImage = v
	}
	return h
}

// remove removes a SidecarSet by name and returns its entry, if it had
// one.
func (r *Registry) remove(name string) *Entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.removeLocked(name)
}

// Get returns a SidecarSet's entry.
func (r *Registry) Get(name string) (*Entry, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.entries[name]
	return e, ok
}

// Len is the number of SidecarSets.
func (r *Registry) Len() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.entries)
}

// All returns every SidecarSet, sorted by name: the kubectl plugin's
// explain considers them all, to give a reason for each.
func (r *Registry) All() []*Entry {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]*Entry, 0, len(r.entries))
	for _, e := range r.entries {
		out = append(out, e)
	}
	sortByName(out)
	return out
}

// Candidates returns, sorted by name, the SidecarSets that can apply to a
// pod of the namespace with the labels: every SidecarSet the pod could match
// is included; most that cannot are not looked at.
func (r *Registry) Candidates(namespace string, podLabels map[string]string) []*Entry {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []*Entry
	seen := map[string]bool{}
	add := func(key string) {
		for _, e := range r.buckets[key] {
			if !seen[e.SidecarSet.Name] {
				seen[e.SidecarSet.Name] = true
				out = append(out, e)
			}
		}
	}
	for _, ns := range []string{namespace, match.ClusterScope} {
		add(scanKey(ns))
		for k, v := range podLabels {
			add(labelKey(ns, k, v))
		}
	}
	sortByName(out)
	return out
}

func sortByName(entries []*Entry) {
	slices.SortFunc(entries, func(a, b *Entry) int { return strings.Compare(a.SidecarSet.Name, b.SidecarSet.Name) })
}

// removeLocked unfiles a SidecarSet from the buckets its entry's
// SidecarSet was filed under (bucketKeys is a function of the SidecarSet
// alone: the registry does not keep the keys of thousands of entries).
func (r *Registry) removeLocked(name string) *Entry {
	old, ok := r.entries[name]
	if !ok {
		return nil
	}
	for _, k := range bucketKeys(old.SidecarSet) {
		r.buckets[k] = slices.DeleteFunc(r.buckets[k], func(e *Entry) bool { return e == old })
		if len(r.buckets[k]) == 0 {
			delete(r.buckets, k)
		}
	}
	delete(r.entries, name)
	return old
}

// compileSelector compiles a pod selector. A selector of matchLabels alone,
// once validated, matches straight from its own map: the compiled
// requirements (a slice, each value in a slice of its own, boxed) would add
// about 110 bytes per SidecarSet, for thousands of them.
func compileSelector(sel *metav1.LabelSelector) (labels.Selector, error) {
	compiled, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil || len(sel.MatchExpressions) > 0 || len(sel.MatchLabels) == 0 {
		return compiled, err
	}
	return labels.ValidatedSetSelector(sel.MatchLabels), nil
}

// bucketKeys files a SidecarSet under each namespace index value and, within
// it, under the label pairs one requirement of its selector allows (so any
// pod it matches carries one of them), or under the scan bucket.
func bucketKeys(s *appsv1beta1.SidecarSet) []string {
	pairs := requiredPairs(s.Spec.Selector)
	var keys []string
	for _, ns := range match.IndexValues(s) {
		if pairs == nil {
			keys = append(keys, scanKey(ns))
			continue
		}
		for _, p := range pairs {
			keys = append(keys, labelKey(ns, p[0], p[1]))
		}
	}
	return keys
}

// requiredPairs returns label pairs at least one of which every pod matched
// by the selector carries: the smallest matchLabels pair (deterministic), or
// the values of an In expression; nil when no requirement allows that.
func requiredPairs(sel *metav1.LabelSelector) [][2]string {
	if sel == nil {
		return nil
	}
	if len(sel.MatchLabels) > 0 {
		keys := make([]string, 0, len(sel.MatchLabels))
		for k := range sel.MatchLabels {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		return [][2]string{{keys[0], sel.MatchLabels[keys[0]]}}
	}
	for _, req := range sel.MatchExpressions {
		if req.Operator == metav1.LabelSelectorOpIn && len(req.Values) > 0 {
			pairs := make([][2]string, 0, len(req.Values))
			for _, v := range req.Values {
				pairs = append(pairs, [2]string{req.Key, v})
			}
			return pairs
		}
	}
	return nil
}

func scanKey(ns string) string        { return ns + "\x00*" }
func labelKey(ns, k, v string) string { return ns + "\x00" + k + "\x00" + v }
