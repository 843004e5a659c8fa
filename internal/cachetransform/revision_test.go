package cachetransform

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/sidecarset-operator/sidecarset-operator/api/revision"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// A cached revision keeps the labels and annotations the operator reads
// (its SidecarSet's name, the custom version, the hashes) and its data; the
// labels and annotations copied from the SidecarSet, which nothing in the
// operator reads, are dropped: an author filling them would otherwise cost
// every replica their weight once per revision.
func TestTrimRevision_KeepsWhatTheOperatorReads(t *testing.T) {
	t.Parallel()
	s := &appsv1beta1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: "mesh", UID: "uid-mesh",
			Labels:      map[string]string{"team": "platform"},
			Annotations: map[string]string{"note": "copied", appsv1beta1.SidecarSetHashAnnotation: "h1", appsv1beta1.SidecarSetHashWithoutImageAnnotation: "h2"}},
		Spec: appsv1beta1.SidecarSetSpec{CustomVersion: "v2",
			Containers: []appsv1beta1.SidecarContainer{{Container: corev1.Container{Name: "proxy", Image: "envoy:1"}}}},
	}
	rev, err := revision.New(s, "kruise-system", 3, new(int32))
	if err != nil {
		t.Fatal(err)
	}
	want := rev.DeepCopy()
	want.Labels = map[string]string{
		appsv1beta1.SidecarSetNameLabel:          "mesh",
		appsv1beta1.SidecarSetCustomVersionLabel: "v2",
		revision.HashLabel:                       rev.Labels[revision.HashLabel],
	}
	want.Annotations = map[string]string{appsv1beta1.SidecarSetHashAnnotation: "h1", appsv1beta1.SidecarSetHashWithoutImageAnnotation: "h2"}

	got, err := TrimRevision(rev)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("trimmed revision (-want +got):\n%s", diff)
	}

	bare := &appsv1.ControllerRevision{Data: runtime.RawExtension{Raw: []byte("{}")}}
	if got, err := TrimRevision(bare); err != nil || got.(*appsv1.ControllerRevision).Labels != nil || got.(*appsv1.ControllerRevision).Annotations != nil {
		t.Errorf("TrimRevision(revision without labels or annotations) = %v, %v; want no maps made", got, err)
	}
	other := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", Labels: map[string]string{"a": "b"}}}
	if got, err := TrimRevision(other); err != nil || got != other || len(other.Labels) != 1 {
		t.Errorf("TrimRevision(namespace) = %v, %v; want it unchanged", got, err)
	}
}
