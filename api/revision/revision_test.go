package revision

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// The expected values below are written from behavior.md 3.4 (the
// revision data: "$patch":"replace", the five spec fields, keys sorted at
// every level, null for absent fields) and from the upstream
// controller-history hash it names (32-bit FNV-1 of the data, then of the
// collision count in decimal, safe-encoded with bcdfghjklmnpqrstvwxz2456789),
// computed outside this repository.

// nginxData is the revision data of a SidecarSet whose spec has one
// container, nginx:1.25, and nothing else.
const nginxData = `{"spec":{"$patch":"replace","containers":[{"image":"nginx:1.25","name":"nginx",` +
	`"resources":{},"shareVolumePolicy":{},"upgradeStrategy":{}}],"imagePullSecrets":null,"initContainers":null,` +
	`"patchPodMetadata":null,"volumes":null}}`

func nginxSet() *appsv1beta1.SidecarSet {
	return &appsv1beta1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: "nginx-sidecar", UID: "uid-1"},
		Spec: appsv1beta1.SidecarSetSpec{
			Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Containers: []appsv1beta1.SidecarContainer{{Container: corev1.Container{Name: "nginx", Image: "nginx:1.25"}}},
		},
	}
}

func TestEncode_IsKruiseRevisionData(t *testing.T) {
	t.Parallel()
	s := nginxSet()
	// Fields outside the five recorded ones change nothing.
	s.Spec.UpdateStrategy.Paused = true
	s.Spec.NamespaceSelector = appsv1beta1.SelectNamespace("ns")
	got, err := Encode(&s.Spec)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(nginxData, string(got)); diff != "" {
		t.Errorf("data (-want +got):\n%s", diff)
	}

	s.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "regcred"}}
	s.Spec.PatchPodMetadata = []appsv1beta1.SidecarSetPatchPodMetadata{{
		PatchPolicy: appsv1beta1.SidecarSetRetainPatchPolicy, Annotations: map[string]string{"z": "1", "a": "2"},
	}}
	got, err = Encode(&s.Spec)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"spec":{"$patch":"replace","containers":[{"image":"nginx:1.25","name":"nginx",` +
		`"resources":{},"shareVolumePolicy":{},"upgradeStrategy":{}}],"imagePullSecrets":[{"name":"regcred"}],"initContainers":null,` +
		`"patchPodMetadata":[{"annotations":{"a":"2","z":"1"},"patchPolicy":"Retain"}],"volumes":null}}`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("data with pull secrets and metadata (-want +got):\n%s", diff)
	}
}

func TestName_UpstreamControllerHistoryHash(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		set       string
		collision *int32
		want      string
	}{
		{name: "without a collision count", set: "nginx-sidecar", want: "nginx-sidecar-589d7dcd9"},
		{name: "collision count 0 is hashed as the digit 0", set: "nginx-sidecar", collision: new(int32(0)), want: "nginx-sidecar-5dd58f4f59"},
		{name: "each collision gives another name", set: "nginx-sidecar", collision: new(int32(1)), want: "nginx-sidecar-5dd58f4f58"},
		{name: "the prefix is cut at 223 characters", set: strings.Repeat("a", 250), collision: new(int32(0)),
			want: strings.Repeat("a", 223) + "-5dd58f4f59"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := Name(tc.set, []byte(nginxData), tc.collision); got != tc.want {
				t.Errorf("Name = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestNew_LabelsAnnotationsAndOwner(t *testing.T) {
	t.Parallel()
	s := nginxSet()
	s.Labels = map[string]string{"team": "web"}
	s.Spec.CustomVersion = "v1"
	s.Annotations = map[string]string{
		appsv1beta1.SidecarSetHashAnnotation:               "h",
		"kubectl.kubernetes.io/last-applied-configuration": "{...}",
	}
	got, err := New(s, "kruise-system", 7, new(int32(0)))
	if err != nil {
		t.Fatal(err)
	}
	controller := true
	want := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name:      "nginx-sidecar-5dd58f4f59",
			Namespace: "kruise-system",
			Labels: map[string]string{
				"team": "web", appsv1beta1.SidecarSetCustomVersionLabel: "v1",
				"kruise.io/sidecarset-name": "nginx-sidecar", "controller.kubernetes.io/hash": "5dd58f4f59",
			},
			// Every SidecarSet annotation but kubectl's last-applied copy
			// (a deliberate difference from OpenKruise).
			Annotations: map[string]string{appsv1beta1.SidecarSetHashAnnotation: "h"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps.kruise.io/v1beta1", Kind: "SidecarSet", Name: "nginx-sidecar", UID: "uid-1",
				Controller: &controller, BlockOwnerDeletion: &controller,
			}},
		},
		Data:     runtime.RawExtension{Raw: []byte(nginxData)},
		Revision: 7,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("revision (-want +got):\n%s", diff)
	}
}

func TestDecodeAndRestore(t *testing.T) {
	t.Parallel()
	old := nginxSet()
	old.Spec.Volumes = []corev1.Volume{{Name: "logs"}}
	rev, err := New(old, "kruise-system", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	live := nginxSet()
	live.Spec.Containers[0].Image = "nginx:1.27"
	live.Spec.UpdateStrategy.Paused = true
	live.Status.LatestRevision = "nginx-sidecar-new"

	restored, err := Restore(live, rev)
	if err != nil {
		t.Fatal(err)
	}
	if got := restored.Spec.Containers[0].Image; got != "nginx:1.25" {
		t.Errorf("restored image %q, want the revision's nginx:1.25", got)
	}
	if diff := cmp.Diff([]corev1.Volume{{Name: "logs"}}, restored.Spec.Volumes); diff != "" {
		t.Errorf("restored volumes (-want +got):\n%s", diff)
	}
	if !restored.Spec.UpdateStrategy.Paused || restored.Spec.Selector == nil {
		t.Error("the strategy and selector are not the live SidecarSet's")
	}
	if restored.Status.LatestRevision != rev.Name {
		t.Errorf("status.latestRevision = %q, want %q", restored.Status.LatestRevision, rev.Name)
	}
	// Without hash annotations on the revision, they are recomputed from the
	// restored spec (behavior.md 2.4).
	wantHashes, err := appsv1beta1.ComputeHashes(&old.Spec)
	if err != nil {
		t.Fatal(err)
	}
	if got := restored.Annotations[appsv1beta1.SidecarSetHashAnnotation]; got != wantHashes.Hash {
		t.Errorf("hash annotation %q, want %q", got, wantHashes.Hash)
	}
	if live.Spec.Containers[0].Image != "nginx:1.27" {
		t.Error("Restore modified the live SidecarSet")
	}
	// With them, they are taken as recorded.
	rev.Annotations = map[string]string{appsv1beta1.SidecarSetHashAnnotation: "h1", appsv1beta1.SidecarSetHashWithoutImageAnnotation: "w1"}
	restored, err = Restore(live, rev)
	if err != nil {
		t.Fatal(err)
	}
	if restored.Annotations[appsv1beta1.SidecarSetHashAnnotation] != "h1" || restored.Annotations[appsv1beta1.SidecarSetHashWithoutImageAnnotation] != "w1" {
		t.Errorf("hash annotations %v, want the revision's h1 and w1", restored.Annotations)
	}

	rev.Data.Raw = []byte(`{"spec":`)
	if _, err := Restore(live, rev); err == nil || !strings.HasPrefix(err.Error(), "revision "+rev.Name+": decoding revision data: ") {
		t.Errorf("error = %v, want one naming the revision", err)
	}
}

// revisionOf is a ControllerRevision of SidecarSet "proxy" for the owner
// tests.
func revisionOf(name string, number int64, owner types.UID, version string) appsv1.ControllerRevision {
	r := appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kruise-system",
			Labels: map[string]string{appsv1beta1.SidecarSetNameLabel: "proxy"}},
		Revision: number,
	}
	if version != "" {
		r.Labels[appsv1beta1.SidecarSetCustomVersionLabel] = version
	}
	if owner != "" {
		controller := true
		r.OwnerReferences = []metav1.OwnerReference{
			{UID: "not-a-controller"},
			{UID: owner, Controller: &controller},
		}
	}
	return r
}

func TestOwnedBy(t *testing.T) {
	t.Parallel()
	s := &appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "proxy", UID: "uid-now"}}
	tests := []struct {
		name string
		rev  appsv1.ControllerRevision
		uid  types.UID
		want bool
	}{
		{name: "a revision the SidecarSet controls is its own", rev: revisionOf("r", 1, "uid-now", ""), uid: "uid-now", want: true},
		{name: "a revision without controller (planted, or orphaned by a deletion) is not its own", rev: revisionOf("r", 1, "", "")},
		{name: "a revision an earlier SidecarSet of the same name controls is not", rev: revisionOf("r", 1, "uid-before", ""), uid: "uid-before"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := OwnedBy(&tc.rev, s); got != tc.want {
				t.Errorf("OwnedBy = %v, want %v", got, tc.want)
			}
			if got := ControllerUID(&tc.rev); got != tc.uid {
				t.Errorf("ControllerUID = %q, want %q", got, tc.uid)
			}
		})
	}
}

func TestNewestWithCustomVersion(t *testing.T) {
	t.Parallel()
	s := &appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "proxy", UID: "uid-now"}}
	other := revisionOf("other-v1", 9, "uid-now", "v1")
	other.Labels[appsv1beta1.SidecarSetNameLabel] = "other"
	tests := []struct {
		name    string
		revs    []appsv1.ControllerRevision
		version string
		want    string // "" for none
	}{
		{name: "the highest revision number carrying the version wins",
			revs:    []appsv1.ControllerRevision{revisionOf("a", 3, "uid-now", "v1"), revisionOf("b", 5, "uid-now", "v1"), revisionOf("c", 4, "uid-now", "v1")},
			version: "v1", want: "b"},
		{name: "revisions of other versions do not count",
			revs:    []appsv1.ControllerRevision{revisionOf("a", 3, "uid-now", "v1"), revisionOf("b", 5, "uid-now", "v2")},
			version: "v1", want: "a"},
		{name: "a newer one left by an earlier SidecarSet of the same name does not count",
			revs:    []appsv1.ControllerRevision{revisionOf("mine", 2, "uid-now", "v1"), revisionOf("foreign", 8, "uid-before", "v1")},
			version: "v1", want: "mine"},
		{name: "a newer one without controller (planted, or orphaned) does not count",
			revs:    []appsv1.ControllerRevision{revisionOf("mine", 2, "uid-now", "v1"), revisionOf("planted", 999999, "", "v1")},
			version: "v1", want: "mine"},
		{name: "one without controller alone resolves to nothing",
			revs:    []appsv1.ControllerRevision{revisionOf("planted", 2, "", "v1")},
			version: "v1"},
		{name: "another SidecarSet's revision does not count",
			revs:    []appsv1.ControllerRevision{other},
			version: "v1"},
		{name: "equal numbers are broken by name, whatever the order",
			revs:    []appsv1.ControllerRevision{revisionOf("y", 2, "uid-now", "v1"), revisionOf("z", 2, "uid-now", "v1"), revisionOf("x", 2, "uid-now", "v1")},
			version: "v1", want: "z"},
		{name: "no revision has the version", revs: []appsv1.ControllerRevision{revisionOf("a", 1, "uid-now", "")}, version: "v1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := ""
			if r := NewestWithCustomVersion(s, tc.version, tc.revs); r != nil {
				got = r.Name
			}
			if got != tc.want {
				t.Errorf("NewestWithCustomVersion = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestCheckOwned: a revisionName pin names one of the SidecarSet's own
// revisions: labelled with its name and controlled by it (issue 22: the
// label alone let a SidecarSet recreated under an old name pin the revision
// of the one it replaced).
func TestCheckOwned(t *testing.T) {
	t.Parallel()
	s := &appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "proxy", UID: "uid-now"}}
	mine := revisionOf("proxy-1", 1, "uid-now", "")
	if err := CheckOwned(&mine, s); err != nil {
		t.Errorf("its own revision: %v", err)
	}
	theirs := revisionOf("logger-1", 1, "uid-now", "")
	theirs.Labels[appsv1beta1.SidecarSetNameLabel] = "logger"
	earlier := revisionOf("proxy-0", 1, "uid-before", "")
	ownerless := revisionOf("proxy-x", 1, "", "")
	for _, tc := range []struct {
		rev  appsv1.ControllerRevision
		want string
	}{
		{theirs, `ControllerRevision kruise-system/logger-1 belongs to SidecarSet "logger", not "proxy"`},
		{earlier, `ControllerRevision kruise-system/proxy-0 is controlled by uid-before, an earlier SidecarSet named "proxy", not by this one (uid-now)`},
		{ownerless, `ControllerRevision kruise-system/proxy-x has no controller: SidecarSet "proxy" does not own it`},
	} {
		if err := CheckOwned(&tc.rev, s); err == nil || err.Error() != tc.want {
			t.Errorf("error = %v, want %q", err, tc.want)
		}
	}
	// Read from a file (no UID): the label is all there is to check.
	offline := &appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "proxy"}}
	if err := CheckOwned(&earlier, offline); err != nil {
		t.Errorf("a SidecarSet without a UID: %v", err)
	}
}
