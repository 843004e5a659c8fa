package authority

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

func TestRecord_ParseFormatOf(t *testing.T) {
	t.Parallel()
	for _, v := range []Verbs{None, Privileged, Secrets | AllNamespaces, All} {
		got, err := Parse(Format(v))
		if err != nil || got != v {
			t.Errorf("Parse(Format(%s)) = %s, %v", v, got, err)
		}
	}
	if _, err := Parse("inject-everything"); err == nil {
		t.Error("an unknown verb parses")
	}
	set := func(annotations map[string]string) *appsv1beta1.SidecarSet {
		return &appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Annotations: annotations}}
	}
	tests := []struct {
		name string
		s    *appsv1beta1.SidecarSet
		want Verbs
	}{
		{"no record: written before the operator, every verb", set(nil), All},
		{"an empty record: no verb", set(map[string]string{Annotation: ""}), None},
		{"a record", set(map[string]string{Annotation: "inject-secrets"}), Secrets},
		{"a record that does not parse grants nothing", set(map[string]string{Annotation: "inject-secrets,root"}), None},
	}
	for _, tc := range tests {
		if got := Of(tc.s); got != tc.want {
			t.Errorf("%s: Of = %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestNamespaces_AsThePolicyReadsThem(t *testing.T) {
	t.Parallel()
	byName := func(names ...string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: appsv1beta1.NamespaceNameLabel, Operator: metav1.LabelSelectorOpIn, Values: names}}}
	}
	tests := []struct {
		name      string
		sel       *metav1.LabelSelector
		want      []string
		wantEvery bool
	}{
		{"no selector: every namespace", nil, nil, true},
		{"one namespace by matchLabels", appsv1beta1.SelectNamespace("a"), []string{"a"}, false},
		{"namespaces by In", byName("a", "b"), []string{"a", "b"}, false},
		{"other labels: those they pick", &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}, nil, true},
		{"a name and another label: judged as many", &metav1.LabelSelector{
			MatchLabels: map[string]string{appsv1beta1.NamespaceNameLabel: "a", "team": "a"}}, nil, true},
		{"NotIn names: every other namespace", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: appsv1beta1.NamespaceNameLabel, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"kube-system"}}}}, nil, true},
	}
	for _, tc := range tests {
		got, every := Namespaces(&appsv1beta1.SidecarSet{Spec: appsv1beta1.SidecarSetSpec{NamespaceSelector: tc.sel}})
		if !cmp.Equal(got, tc.want) || every != tc.wantEvery {
			t.Errorf("%s: Namespaces = %v, %v; want %v, %v", tc.name, got, every, tc.want, tc.wantEvery)
		}
	}
}

func TestInPod_ResolvesNamesToTheFirstDefinition(t *testing.T) {
	t.Parallel()
	volumes := []corev1.Volume{
		{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "db"}}},
		{Name: "creds", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "disk", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "d"}}},
	}
	c := &corev1.Container{
		VolumeMounts:  []corev1.VolumeMount{{Name: "creds", MountPath: "/c"}, {Name: "scratch", MountPath: "/s"}, {Name: "missing", MountPath: "/m"}},
		VolumeDevices: []corev1.VolumeDevice{{Name: "disk", DevicePath: "/dev/d"}},
	}
	want := []Reach{
		{Mount: 0, Device: -1, Volume: "creds", Type: "secret", Verbs: Secrets},
		{Mount: 1, Device: -1, Volume: "scratch", Type: "emptyDir", Verbs: None},
		{Mount: -1, Device: 0, Volume: "disk", Type: "persistentVolumeClaim", Verbs: Secrets},
	}
	if diff := cmp.Diff(want, InPod(volumes, c)); diff != "" {
		t.Errorf("InPod (-want +got):\n%s", diff)
	}
}

func TestContentChanged(t *testing.T) {
	t.Parallel()
	base := &appsv1beta1.SidecarSet{Spec: appsv1beta1.SidecarSetSpec{
		Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		Containers: []appsv1beta1.SidecarContainer{{Container: corev1.Container{Name: "c", Image: "c:1"}}},
	}}
	tests := []struct {
		name   string
		mutate func(*appsv1beta1.SidecarSet)
		want   bool
	}{
		{"a pause", func(s *appsv1beta1.SidecarSet) { s.Spec.UpdateStrategy.Paused = true }, false},
		{"a label", func(s *appsv1beta1.SidecarSet) { s.Labels = map[string]string{"team": "x"} }, false},
		{"the failure policy", func(s *appsv1beta1.SidecarSet) {
			s.Annotations = map[string]string{appsv1beta1.FailurePolicyAnnotation: appsv1beta1.FailurePolicyIgnore}
		}, false},
		{"an image", func(s *appsv1beta1.SidecarSet) { s.Spec.Containers[0].Image = "c:2" }, true},
		{"the selector", func(s *appsv1beta1.SidecarSet) { s.Spec.Selector.MatchLabels["app"] = "api" }, true},
		{"the namespaces", func(s *appsv1beta1.SidecarSet) { s.Spec.NamespaceSelector = appsv1beta1.SelectNamespace("a") }, true},
		{"a pin", func(s *appsv1beta1.SidecarSet) {
			s.Spec.InjectionStrategy.Revision = &appsv1beta1.SidecarSetInjectRevision{CustomVersion: new("v1")}
		}, true},
		{"the canary base", func(s *appsv1beta1.SidecarSet) {
			s.Annotations = map[string]string{appsv1beta1.SidecarSetBaseAnnotation: "mtls"}
		}, true},
	}
	for _, tc := range tests {
		s := base.DeepCopy()
		tc.mutate(s)
		if got := ContentChanged(base, s); got != tc.want {
			t.Errorf("%s: ContentChanged = %v, want %v", tc.name, got, tc.want)
		}
	}
}
