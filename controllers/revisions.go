package controllers

import (
	appsv1 "k8s.io/api/apps/v1"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/controllers/rollout"
)

// revisionSpec is a ControllerRevision's spec, decoded, defaulted and
// hashed once per version of the revision (memories.revisionSpecs).
type revisionSpec struct {
	resourceVersion string
	withoutImage    string
	spec            *appsv1beta1.SidecarSetSpec
}

// decodeRevisionSpec decodes one revision (rollout.RevisionSpec).
func decodeRevisionSpec(live *appsv1beta1.SidecarSet, rev *appsv1.ControllerRevision) revisionSpec {
	e := revisionSpec{resourceVersion: rev.ResourceVersion}
	e.withoutImage, e.spec, _ = rollout.RevisionSpec(live, rev)
	return e
}
