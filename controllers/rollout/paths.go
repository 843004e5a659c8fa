package rollout

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/sidecarset-operator/sidecarset-operator/api/revision"
	"github.com/sidecarset-operator/sidecarset-operator/api/upgrade"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// Paths.
//
// A pod that does not record the current hash reaches it by one of three
// paths, chosen by the rule of package upgrade applied to the revision the
// pod runs (found by its recorded without-image hash among the
// SidecarSet's revisions, Input.Revisions) and the current spec:
//
//   - in place: images only (the pod's without-image hash is the current
//     one): one patch (update.go);
//   - resize: images and the CPU and memory of sidecars (resize.go);
//   - recreate: anything else, or a revision no longer recorded
//     (recreate.go), when the SidecarSet allows it; otherwise the pod is
//     reported not upgradable, as OpenKruise reports it.

// kind is what the rollout does to a pod that is not updated.
type kind int

const (
	// kindInPlace: the in-place patch of images and hashes.
	kindInPlace kind = iota
	// kindResize: a pods/resize patch to issue.
	kindResize
	// kindResizing: the kubelet is applying the pod's resize.
	kindResizing
	// kindResizePending: the kubelet deferred the resize, found it
	// infeasible, or it is stuck: reported, and waiting.
	kindResizePending
	// kindResized: the resize is applied; the in-place patch finishes.
	kindResized
	// kindRecreate: an eviction to issue.
	kindRecreate
	// kindBlocked: the rollout cannot reach the pod.
	kindBlocked
)

// acts reports whether the rollout has something to issue for the pod.
func (k kind) acts() bool {
	return k == kindInPlace || k == kindResize || k == kindResized || k == kindRecreate
}

// choosePath classifies a pod whose images are not the only difference.
func (s *setView) choosePath(v *podView) {
	d, known := s.diffFor(v.state.HashesWithoutImage[s.name].Hash)
	switch {
	case !known:
		s.toRecreate(v, "the revision it runs is no longer recorded")
	case d.Path == upgrade.PathResize:
		s.planResize(v)
	default:
		s.toRecreate(v, describeDiff(d))
	}
}

// diffFor compares the revision of a without-image hash with the current
// spec, once per hash.
func (s *setView) diffFor(withoutImage string) (upgrade.Diff, bool) {
	if d, ok := s.diffs[withoutImage]; ok {
		return d, true
	}
	rev, ok := s.revisions[withoutImage]
	if !ok || withoutImage == "" {
		return upgrade.Diff{}, false
	}
	d := upgrade.Compare(rev, &s.obj.Spec)
	if s.diffs == nil {
		s.diffs = map[string]upgrade.Diff{}
	}
	s.diffs[withoutImage] = d
	return d, true
}

// describeDiff says what needs a new pod: "sidecar agent: env changed".
func describeDiff(d upgrade.Diff) string {
	var parts []string
	for _, c := range d.Changes {
		if c.Path() != upgrade.PathRecreate {
			continue
		}
		what := "sidecar"
		if c.Plain {
			what = "init container"
		}
		switch {
		case c.Added:
			parts = append(parts, fmt.Sprintf("%s %s added", what, c.Name))
		case c.Removed:
			parts = append(parts, fmt.Sprintf("%s %s removed", what, c.Name))
		default:
			parts = append(parts, fmt.Sprintf("%s %s: %s changed", what, c.Name, strings.Join(c.Fields, ", ")))
		}
	}
	if d.Order != nil || d.InitOrder != nil {
		parts = append(parts, "sidecars reordered")
	}
	if len(parts) == 0 {
		return "the sidecars changed beyond images and resources"
	}
	return strings.Join(parts, "; ")
}

// RevisionSpec returns the spec a SidecarSet's revision records (its
// sidecars on the live SidecarSet), defaulted, and its without-image hash:
// an entry of Input.Revisions. ok is false when the revision does not
// decode; the pods that run it then go the recreate path, or are reported.
func RevisionSpec(live *appsv1beta1.SidecarSet, rev *appsv1.ControllerRevision) (withoutImage string, spec *appsv1beta1.SidecarSetSpec, ok bool) {
	restored, err := revision.Restore(live, rev)
	if err != nil {
		return "", nil, false
	}
	appsv1beta1.SetDefaults(restored)
	hashes, err := appsv1beta1.ComputeHashes(&restored.Spec)
	if err != nil {
		return "", nil, false
	}
	return hashes.WithoutImage, &restored.Spec, true
}
