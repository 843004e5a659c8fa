package controllers

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/sidecarset-operator/sidecarset-operator/api/revision"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/internal/cachetransform"
	"github.com/sidecarset-operator/sidecarset-operator/internal/fieldindex"
	"github.com/sidecarset-operator/sidecarset-operator/test/heap"
)

// hoard is a SidecarSet with revisionHistoryLimit far above the maximum:
// the history flood of review N3.
func hoard() *appsv1beta1.SidecarSet {
	s := proxySet("envoy:1")
	s.UID = "uid-hoard"
	s.Spec.RevisionHistoryLimit = new(int32(1 << 30))
	return s
}

// fillToTheBound returns the largest n for which the SidecarSet, its bulk
// shaped by fill(s, 0, n), weighs at most revision.MaxRecordedSize. Every
// version i has the same size (fill writes i with a fixed width).
func fillToTheBound(t *testing.T, fill func(s *appsv1beta1.SidecarSet, i, n int)) int {
	t.Helper()
	lo, hi := 0, revision.MaxRecordedSize
	for lo < hi {
		mid := (lo + hi + 1) / 2
		s := hoard()
		fill(s, 0, mid)
		size, err := revision.RecordedSize(s)
		if err != nil {
			t.Fatal(err)
		}
		if size <= revision.MaxRecordedSize {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// historyFootprint is the live heap, in bytes, that revision.MaxHistoryLimit
// revisions of a SidecarSet at the size bound cost the manager's cache (the
// informer's objects after the transforms, cmd/manager/app.CacheOptions's,
// indexed), each read from its JSON
// as the API server sends it.
func historyFootprint(t *testing.T, fill func(s *appsv1beta1.SidecarSet, i, n int)) (float64, int) {
	t.Helper()
	n := fillToTheBound(t, fill)
	raws := make([][]byte, revision.MaxHistoryLimit)
	for i := range raws {
		s := hoard()
		fill(s, i, n)
		rev, err := revision.New(s, "kruise-system", int64(i+1), new(int32))
		if err != nil {
			t.Fatal(err)
		}
		rev.UID, rev.ResourceVersion = "rev-uid", fmt.Sprint(i+1)
		rev.CreationTimestamp = metav1.Now()
		if raws[i], err = json.Marshal(rev); err != nil {
			t.Fatal(err)
		}
	}
	revs := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, withNamespaceIndex(fieldindex.CacheIndexers(&appsv1.ControllerRevision{})))
	in := cachetransform.NewInterner()
	before := heap.Live()
	for _, raw := range raws {
		r := &appsv1.ControllerRevision{}
		if err := json.Unmarshal(raw, r); err != nil {
			t.Fatal(err)
		}
		trimmed, err := cachetransform.TrimRevision(r)
		if err != nil {
			t.Fatal(err)
		}
		obj, err := in.Transform(trimmed)
		if err != nil {
			t.Fatal(err)
		}
		if err := revs.Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	after := heap.Live()
	runtime.KeepAlive(revs)
	runtime.KeepAlive(in)
	runtime.KeepAlive(raws)
	return float64(after - before), len(raws[0])
}

// TestHistoryFootprint_AtTheBound measures what the history of one
// SidecarSet at both bounds (revision.MaxHistoryLimit revisions of just
// under revision.MaxRecordedSize each) costs every replica's cache, for
// the two shapes of bulk an author controls: one large value (an env
// value: the revision keeps its data as raw bytes) and many small
// annotations (copied onto every revision; the cache keeps only those the
// operator reads). docs/revisions.md quotes the figures. Not parallel: it
// measures the live heap.
func TestHistoryFootprint_AtTheBound(t *testing.T) {
	shapes := []struct {
		name string
		fill func(s *appsv1beta1.SidecarSet, i, n int)
	}{
		{"one large env value", func(s *appsv1beta1.SidecarSet, i, n int) {
			s.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "BLOB", Value: fmt.Sprintf("%06d", i) + strings.Repeat("x", n)}}
		}},
		{"many small annotations", func(s *appsv1beta1.SidecarSet, i, n int) {
			s.Annotations = map[string]string{"version": fmt.Sprintf("%06d", i)}
			for k := range n / 12 { // "a12345":"",  is about 12 bytes
				s.Annotations[fmt.Sprintf("a%x", k)] = ""
			}
		}},
	}
	for _, shape := range shapes {
		total, size := historyFootprint(t, shape.fill)
		mib := total / (1 << 20)
		t.Logf("%s: %d revisions of %d bytes (JSON) hold %.1f MiB of live heap (%.1f× their JSON)",
			shape.name, revision.MaxHistoryLimit, size, mib, total/float64(revision.MaxHistoryLimit*size))
		// The bound docs/revisions.md states for one SidecarSet's history.
		if mib > maxHistoryMiB {
			t.Errorf("%s: the history of one SidecarSet at the bounds holds %.1f MiB, more than %d MiB", shape.name, mib, maxHistoryMiB)
		}
	}
}

// maxHistoryMiB bounds the live heap one SidecarSet's history at both
// bounds costs a replica (docs/revisions.md: 12.6 MiB).
const maxHistoryMiB = 16

// withNamespaceIndex adds the namespace index every informer of the
// manager's cache has.
func withNamespaceIndex(indexers toolscache.Indexers) toolscache.Indexers {
	indexers[toolscache.NamespaceIndex] = toolscache.MetaNamespaceIndexFunc
	return indexers
}
