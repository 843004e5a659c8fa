package validation

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/sidecarset-operator/sidecarset-operator/api/revision"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/policy/authority"
)

// TestValidateSidecarSet_RevisionHistoryLimitAboveTheMaximum: a limit above
// the maximum is accepted (OpenKruise has none, and its objects must stay
// writable) with a warning naming the value, the maximum and the clamp.
func TestValidateSidecarSet_RevisionHistoryLimitAboveTheMaximum(t *testing.T) {
	t.Parallel()
	limit := func(n int32) func(*appsv1beta1.SidecarSet) {
		return func(s *appsv1beta1.SidecarSet) { s.Spec.RevisionHistoryLimit = &n }
	}
	tests := []struct {
		name  string
		limit int32
		want  []string
	}{
		{name: "the maximum itself is accepted silently", limit: 100},
		{name: "one above the maximum warns", limit: 101, want: []string{
			"spec.revisionHistoryLimit: 101 is above the maximum of 100: the controller keeps at most 100 ControllerRevisions " +
				"of this SidecarSet (the value is clamped to 100)"}},
		{name: "OpenKruise's unbounded value warns", limit: 2147483647, want: []string{
			"spec.revisionHistoryLimit: 2147483647 is above the maximum of 100: the controller keeps at most 100 ControllerRevisions " +
				"of this SidecarSet (the value is clamped to 100)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, old := range []*appsv1beta1.SidecarSet{nil, newSidecarSet("hoard", "web", limit(tc.limit))} {
				errs, warnings := ValidateSidecarSet(newSidecarSet("hoard", "web", limit(tc.limit)), old, Options{})
				checkErrors(t, nil, errs)
				checkWarnings(t, tc.want, warnings)
			}
		})
	}
}

// recordedSize is what a revision of the SidecarSet weighs, serialized
// (without a namespace): the size the bound applies to.
func recordedSize(t *testing.T, s *appsv1beta1.SidecarSet) int {
	t.Helper()
	rev, err := revision.New(s, "", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(rev)
	if err != nil {
		t.Fatal(err)
	}
	return len(raw)
}

// TestValidateSidecarSet_SizeBound: a SidecarSet whose revision would
// weigh more than 128 KiB is refused on create, and on an update that makes
// it larger; an existing larger one (written by OpenKruise, or before the
// bound) stays editable by updates that do not grow it.
func TestValidateSidecarSet_SizeBound(t *testing.T) {
	t.Parallel()
	env := func(bytes int) func(*appsv1beta1.SidecarSet) {
		return func(s *appsv1beta1.SidecarSet) {
			s.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "BLOB", Value: strings.Repeat("x", bytes)}}
		}
	}
	small := newSidecarSet("hoard", "web", env(1000))
	fits := newSidecarSet("hoard", "web", env(128<<10-2000))
	big := newSidecarSet("hoard", "web", env(200<<10))
	bigger := newSidecarSet("hoard", "web", env(200<<10+1))
	bigNewImage := newSidecarSet("hoard", "web", env(200<<10), func(s *appsv1beta1.SidecarSet) { s.Spec.Containers[0].Image = "centos:6.8" })
	// The defaulting webhook's records, written on an OpenKruise
	// SidecarSet's first update that changes its content.
	recorded := newSidecarSet("hoard", "web", env(200<<10), func(s *appsv1beta1.SidecarSet) { s.Spec.Containers[0].Image = "centos:6.8" },
		withAnnotation(authority.Annotation, "inject-privileged,inject-secrets,inject-all-namespaces"),
		withAnnotation(appsv1beta1.NamespaceUIDsAnnotation, `["0c7a1d2e-3f4b-4c5d-8e9f-000000000001"]`),
		withAnnotation(appsv1beta1.SidecarSetHashAnnotation, "x8x5268d4b7d944b46fb7z9674z48554bfzd4524v472x7c5wxvw9960000000"))
	annotated := newSidecarSet("hoard", "web", env(200<<10), withAnnotation("example.com/notes", "more"))
	if recordedSize(t, fits) > 128<<10 {
		t.Fatalf("the fitting SidecarSet weighs %d bytes, more than the bound", recordedSize(t, fits))
	}
	refused := func(s, old *appsv1beta1.SidecarSet) field.ErrorList {
		detail := fmt.Sprintf("the SidecarSet weighs %d bytes as each of its ControllerRevisions records it (its spec, labels "+
			"and annotations), more than the bound of 131072 bytes (128 KiB): every change of it is kept as a ControllerRevision "+
			"in kruise-system and held in memory by every operator replica; keep large configuration in a ConfigMap the sidecar mounts",
			recordedSize(t, s))
		if old != nil {
			detail += fmt.Sprintf(" (this update makes it larger: it weighed %d bytes)", recordedSize(t, old))
		}
		return field.ErrorList{field.Forbidden(field.NewPath("spec"), detail)}
	}
	tests := []struct {
		name   string
		s, old *appsv1beta1.SidecarSet
		want   field.ErrorList
	}{
		{name: "a SidecarSet within the bound is created", s: fits},
		{name: "a SidecarSet above the bound is refused at creation", s: big, want: refused(big, nil)},
		{name: "an update growing a SidecarSet past the bound is refused", s: big, old: small, want: refused(big, small)},
		{name: "an update growing a SidecarSet already above the bound is refused", s: bigger, old: big, want: refused(bigger, big)},
		{name: "an update that does not grow a SidecarSet above the bound is accepted", s: bigNewImage, old: big},
		{name: "an update shrinking a SidecarSet above the bound is accepted", s: small, old: big},
		{name: "an update of a SidecarSet above the bound that the operator's records grow is accepted", s: recorded, old: big},
		{name: "an update growing a SidecarSet above the bound by another annotation is refused", s: annotated, old: big, want: refused(annotated, big)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			errs, _ := ValidateSidecarSet(tc.s, tc.old, Options{})
			checkErrors(t, tc.want, errs)
		})
	}
}

// TestValidateSidecarSet_PatchPodMetadataOfTheOperatorsKeysWarns: a
// patchPodMetadata entry for a key holding SidecarSet state (the operator's
// sidecarset-operator.dev/ keys among them) is accepted, as OpenKruise
// accepts it, with a warning that it is never patched onto pods.
func TestValidateSidecarSet_PatchPodMetadataOfTheOperatorsKeysWarns(t *testing.T) {
	t.Parallel()
	s := newSidecarSet("forger", "web", func(s *appsv1beta1.SidecarSet) {
		s.Spec.PatchPodMetadata = []appsv1beta1.SidecarSetPatchPodMetadata{{
			PatchPolicy: appsv1beta1.SidecarSetMergePatchJSONPatchPolicy,
			Annotations: map[string]string{appsv1beta1.ReachAnnotation: `{"mesh":""}`, "example.com/owner": `{"team":"web"}`},
		}, {
			PatchPolicy: appsv1beta1.SidecarSetOverwritePatchPolicy,
			Annotations: map[string]string{appsv1beta1.SidecarSetListAnnotation: "mesh"},
		}}
	})
	errs, warnings := ValidateSidecarSet(s, nil, Options{})
	checkErrors(t, nil, errs)
	checkWarnings(t, []string{
		"spec.patchPodMetadata[0].annotations[sidecarset-operator.dev/reach]: holds SidecarSet state, which only the operator writes: " +
			"it is never patched onto pods",
		"spec.patchPodMetadata[1].annotations[kruise.io/sidecarset-injected-list]: holds SidecarSet state, which only the operator writes: " +
			"it is never patched onto pods",
	}, warnings)
}
