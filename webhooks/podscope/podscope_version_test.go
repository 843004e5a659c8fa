package podscope

import (
	"context"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/sidecarset-operator/sidecarset-operator/version"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/names"
)

// TestPodWebhookScope_RecordsTheManagersVersion: the scope's write records
// the manager's version and commit in the configuration holding the pod
// webhooks (where the plugin reads them), rewrites them when another
// manager's version is there, and writes nothing more once they hold.
func TestPodWebhookScope_RecordsTheManagersVersion(t *testing.T) {
	t.Parallel()
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: names.MutatingConfigName, Annotations: map[string]string{
			version.Annotation: "v0.0.9", version.RevisionAnnotation: "old", "kept": "yes",
		}},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: names.PodWebhookName}, {Name: names.PodBestEffortWebhookName}},
	}
	c := fake.NewClientBuilder().WithScheme(scopeTestScheme()).WithObjects(cfg).Build()
	build := version.Info{Version: "v0.1.0", Revision: "0123456789abcdef"}
	r := &PodWebhookScope{Client: c, ConfigName: names.MutatingConfigName, Build: build}
	ctx := context.Background()

	read := func() *admissionregistrationv1.MutatingWebhookConfiguration {
		got := &admissionregistrationv1.MutatingWebhookConfiguration{}
		if err := c.Get(ctx, types.NamespacedName{Name: names.MutatingConfigName}, got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	got := read()
	if info, ok := version.FromAnnotations(got.Annotations); !ok || info != build {
		t.Fatalf("recorded version %+v (%v), want %+v", info, ok, build)
	}
	if got.Annotations["kept"] != "yes" {
		t.Errorf("an annotation of someone else's was lost: %v", got.Annotations)
	}

	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if again := read(); again.ResourceVersion != got.ResourceVersion {
		t.Errorf("a sync with the version in place wrote the configuration again (%s -> %s)", got.ResourceVersion, again.ResourceVersion)
	}
}

// TestPodWebhookScope_WithoutBuildRecordsNoVersion: a scope writer given no
// version (a test's) leaves the annotations alone.
func TestPodWebhookScope_WithoutBuildRecordsNoVersion(t *testing.T) {
	t.Parallel()
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: names.MutatingConfigName},
		Webhooks:   []admissionregistrationv1.MutatingWebhook{{Name: names.PodWebhookName}},
	}
	c := fake.NewClientBuilder().WithScheme(scopeTestScheme()).WithObjects(cfg).Build()
	r := &PodWebhookScope{Client: c, ConfigName: names.MutatingConfigName}
	if err := r.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := c.Get(context.Background(), types.NamespacedName{Name: names.MutatingConfigName}, got); err != nil {
		t.Fatal(err)
	}
	if _, ok := version.FromAnnotations(got.Annotations); ok {
		t.Errorf("annotations %v record a version", got.Annotations)
	}
}
