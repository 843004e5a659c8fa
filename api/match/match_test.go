package match

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/expect"
)

// Expected values from behavior.md 1.4 (spec.namespace wins over
// namespaceSelector), 2.1 (active pods), 2.2 (an empty selector matches
// nothing; an invalid pod selector is an error) and 3.3.

func TestNamespace(t *testing.T) {
	t.Parallel()
	prod := &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
	tests := []struct {
		name     string
		spec     appsv1beta1.SidecarSetSpec
		ns       string
		nsLabels map[string]string
		want     bool
		wantErr  string
	}{
		{name: "no namespace restriction selects every namespace", ns: "anything", want: true},
		{name: "a namespace by name is selected without labels",
			spec: appsv1beta1.SidecarSetSpec{NamespaceSelector: appsv1beta1.SelectNamespace("team-a")}, ns: "team-a", want: true},
		{name: "a namespace by name selects no other namespace",
			spec: appsv1beta1.SidecarSetSpec{NamespaceSelector: appsv1beta1.SelectNamespace("team-a")}, ns: "team-b", nsLabels: map[string]string{"env": "prod"}},
		{name: "namespaceSelector matches the namespace's labels",
			spec: appsv1beta1.SidecarSetSpec{NamespaceSelector: prod}, ns: "shop", nsLabels: map[string]string{"env": "prod"}, want: true},
		{name: "namespaceSelector does not match other labels",
			spec: appsv1beta1.SidecarSetSpec{NamespaceSelector: prod}, ns: "shop", nsLabels: map[string]string{"env": "dev"}},
		{name: "namespaceSelector on kubernetes.io/metadata.name matches even if the labels lack it",
			spec: appsv1beta1.SidecarSetSpec{NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: NamespaceNameLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{"shop", "cart"}}}}},
			ns: "cart", want: true},
		{name: "an invalid namespaceSelector is an error",
			spec: appsv1beta1.SidecarSetSpec{NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "env", Operator: "Near"}}}},
			ns: "shop", wantErr: `invalid namespaceSelector: "Near" is not a valid label selector operator`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := &appsv1beta1.SidecarSet{Spec: tc.spec}
			got, err := Namespace(s, tc.ns, tc.nsLabels)
			if expect.Error(t, err, tc.wantErr) {
				return
			}
			if got != tc.want {
				t.Errorf("Namespace = %v, want %v", got, tc.want)
			}
			if tc.nsLabels != nil && tc.nsLabels[NamespaceNameLabel] != "" {
				t.Error("Namespace wrote into the caller's labels")
			}
		})
	}
}

func TestNeedsNamespaceLabels(t *testing.T) {
	t.Parallel()
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
	tests := []struct {
		name string
		spec appsv1beta1.SidecarSetSpec
		want bool
	}{
		{name: "no restriction needs no labels"},
		{name: "a namespace by name needs only the name", spec: appsv1beta1.SidecarSetSpec{NamespaceSelector: appsv1beta1.SelectNamespace("a")}},
		{name: "a name and a label need the labels", spec: appsv1beta1.SidecarSetSpec{NamespaceSelector: &metav1.LabelSelector{
			MatchLabels: map[string]string{appsv1beta1.NamespaceNameLabel: "a", "env": "prod"}}}, want: true},
		{name: "a namespaceSelector needs the labels", spec: appsv1beta1.SidecarSetSpec{NamespaceSelector: sel}, want: true},
	}
	for _, tc := range tests {
		if got := NeedsNamespaceLabels(&appsv1beta1.SidecarSet{Spec: tc.spec}); got != tc.want {
			t.Errorf("%s: NeedsNamespaceLabels = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestPod(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		selector *metav1.LabelSelector
		labels   map[string]string
		want     bool
		wantErr  string
	}{
		{name: "matchLabels select a pod carrying them",
			selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, labels: map[string]string{"app": "web", "x": "y"}, want: true},
		{name: "matchLabels do not select a pod without them",
			selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, labels: map[string]string{"app": "api"}},
		{name: "NotIn selects a pod without the label",
			selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "tier", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"db"}}}}, labels: map[string]string{}, want: true},
		{name: "a nil selector selects nothing", labels: map[string]string{"app": "web"}},
		{name: "an empty selector selects nothing", selector: &metav1.LabelSelector{}, labels: map[string]string{"app": "web"}},
		{name: "an invalid selector is an error",
			selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Bogus"}}},
			wantErr:  `invalid selector: "Bogus" is not a valid label selector operator`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := Pod(&appsv1beta1.SidecarSet{Spec: appsv1beta1.SidecarSetSpec{Selector: tc.selector}}, tc.labels)
			if expect.Error(t, err, tc.wantErr) {
				return
			}
			if got != tc.want {
				t.Errorf("Pod = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSelects_NilSelectsEverything(t *testing.T) {
	t.Parallel()
	if ok, err := Selects(nil, map[string]string{"a": "b"}); !ok || err != nil {
		t.Errorf("Selects(nil) = %v, %v; want true (an updateStrategy without selector selects every pod)", ok, err)
	}
}

func TestPodActive(t *testing.T) {
	t.Parallel()
	now := metav1.Now()
	tests := []struct {
		name string
		pod  corev1.Pod
		want bool
	}{
		{name: "a pending pod is active", pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending}}, want: true},
		{name: "a running pod is active", pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}, want: true},
		{name: "a pod without phase (being created) is active", want: true},
		{name: "a succeeded pod is not active", pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}},
		{name: "a failed pod is not active", pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed}}},
		{name: "a running pod being deleted is not active",
			pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := PodActive(&tc.pod); got != tc.want {
				t.Errorf("PodActive = %v, want %v", got, tc.want)
			}
		})
	}
}
