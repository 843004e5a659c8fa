package cachetransform

import (
	appsv1 "k8s.io/api/apps/v1"

	"github.com/sidecarset-operator/sidecarset-operator/api/revision"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// readRevisionLabels and readRevisionAnnotations are the labels and
// annotations of a ControllerRevision the operator reads: which SidecarSet
// it records (the field index, ownership), the custom version a pin names,
// the controller-history hash, and the hashes a restored SidecarSet carries
// (revision.Restore).
var (
	readRevisionLabels = []string{
		appsv1beta1.SidecarSetNameLabel, appsv1beta1.SidecarSetCustomVersionLabel, revision.HashLabel,
	}
	readRevisionAnnotations = []string{
		appsv1beta1.SidecarSetHashAnnotation, appsv1beta1.SidecarSetHashWithoutImageAnnotation,
	}
)

// TrimRevision is the ControllerRevision cache transform: it keeps of a
// revision's labels and annotations those the operator reads. A revision
// copies its SidecarSet's labels and annotations, which nothing in the
// operator reads, and the cache holds each once per revision: up to 100
// revisions of 128 KiB per SidecarSet (docs/revisions.md). The operator
// writes revisions by patches of what it changes (client.MergeFrom), so what
// the cache drops stays on the API server. Other objects go through
// unchanged; the revision is modified in place.
func TrimRevision(obj any) (any, error) {
	rev, ok := obj.(*appsv1.ControllerRevision)
	if !ok {
		return obj, nil
	}
	rev.Labels = keepKeys(rev.Labels, readRevisionLabels)
	rev.Annotations = keepKeys(rev.Annotations, readRevisionAnnotations)
	return rev, nil
}

// keepKeys returns m with only the keys given, m itself when it has no
// other, nil when it has none of them.
func keepKeys(m map[string]string, keys []string) map[string]string {
	kept := 0
	for _, k := range keys {
		if _, ok := m[k]; ok {
			kept++
		}
	}
	switch {
	case kept == len(m):
		return m
	case kept == 0:
		return nil
	}
	out := make(map[string]string, kept)
	for _, k := range keys {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}
