package cli

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/internal/fieldindex"
)

func TestStateReader_ServesTheWebhookReads(t *testing.T) {
	t.Parallel()
	rev := func(ns, name, owner string) appsv1.ControllerRevision {
		return appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Labels: map[string]string{appsv1beta1.SidecarSetNameLabel: owner}}}
	}
	r, err := newStateReader(t.Context(), map[string]map[string]string{"team-a": {"env": "prod"}},
		[]appsv1.ControllerRevision{rev("kruise-system", "a-1", "a"), rev("kruise-system", "b-1", "b"), rev("other", "a-2", "a")})
	if err != nil {
		t.Fatal(err)
	}

	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	if err := r.Get(t.Context(), types.NamespacedName{Name: "team-a"}, ns); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"env": "prod", "kubernetes.io/metadata.name": "team-a"}, ns.GetLabels()); diff != "" {
		t.Errorf("namespace labels (-want +got):\n%s", diff)
	}
	if err := r.Get(t.Context(), types.NamespacedName{Name: "unknown"}, ns); !apierrors.IsNotFound(err) {
		t.Errorf("an unknown namespace: %v, want NotFound", err)
	}

	got := &appsv1.ControllerRevision{}
	if err := r.Get(t.Context(), types.NamespacedName{Namespace: "kruise-system", Name: "b-1"}, got); err != nil || got.Name != "b-1" {
		t.Errorf("Get b-1: %v, %s", err, got.Name)
	}
	if err := r.Get(t.Context(), types.NamespacedName{Namespace: "kruise-system", Name: "a-2"}, got); !apierrors.IsNotFound(err) {
		t.Errorf("a revision of another namespace: %v, want NotFound", err)
	}

	revisions, err := fieldindex.ListRevisions(t.Context(), r, "kruise-system", "a")
	if err != nil {
		t.Fatal(err)
	}
	if len(revisions) != 1 || revisions[0].Name != "a-1" {
		t.Errorf("listed by the manager's index: %+v", revisions)
	}
	list := &appsv1.ControllerRevisionList{}
	if err := r.List(t.Context(), list, client.MatchingFields{"no.such.index": "a"}); err == nil {
		t.Error("a field without an index is listed")
	}
}
