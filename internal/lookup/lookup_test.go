package lookup

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/internal/fieldindex"
	"github.com/sidecarset-operator/sidecarset-operator/test/expect"
)

const ns = "kruise-system"

func reader(objs ...client.Object) client.Reader {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(appsv1beta1.AddToScheme(scheme))
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithIndex(&appsv1.ControllerRevision{}, fieldindex.RevisionBySidecarSet, fieldindex.RevisionSidecarSet).Build()
}

func TestNamespaceLabels(t *testing.T) {
	t.Parallel()
	r := reader(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{"env": "prod"}}})
	got, err := NamespaceLabels(t.Context(), r, "shop")
	if err != nil || got["env"] != "prod" {
		t.Errorf("NamespaceLabels(shop) = %v, %v; want env=prod", got, err)
	}
	if _, err := NamespaceLabels(t.Context(), r, "gone"); !apierrors.IsNotFound(err) {
		t.Errorf("NamespaceLabels(gone) error = %v, want NotFound", err)
	}
}

func makeRevision(name, set string, number int64, owner types.UID, version string) *appsv1.ControllerRevision {
	r := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{appsv1beta1.SidecarSetNameLabel: set}},
		Revision:   number,
	}
	if version != "" {
		r.Labels[appsv1beta1.SidecarSetCustomVersionLabel] = version
	}
	if owner != "" {
		r.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1alpha1", Kind: "SidecarSet", Name: set, UID: owner, Controller: new(true)}}
	}
	return r
}

func TestPinnedRevision(t *testing.T) {
	t.Parallel()
	r := reader(
		makeRevision("proxy-1", "proxy", 1, "uid-now", "v1"),
		makeRevision("proxy-2", "proxy", 2, "uid-now", "v1"),
		makeRevision("proxy-old", "proxy", 9, "uid-before", "v1"),
		makeRevision("logger-1", "logger", 1, "uid-logger", "v1"),
	)
	pinned := func(pin *appsv1beta1.SidecarSetInjectRevision) *appsv1beta1.SidecarSet {
		s := &appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "proxy", UID: "uid-now"}}
		s.Spec.InjectionStrategy.Revision = pin
		return s
	}
	tests := []struct {
		name         string
		pin          *appsv1beta1.SidecarSetInjectRevision
		want         string
		wantErr      string
		wantNotFound bool
	}{
		{name: "nothing pinned"},
		{name: "a revisionName of the SidecarSet", pin: &appsv1beta1.SidecarSetInjectRevision{RevisionName: new("proxy-1")}, want: "proxy-1"},
		{name: "a revisionName of another SidecarSet is refused",
			pin:     &appsv1beta1.SidecarSetInjectRevision{RevisionName: new("logger-1")},
			wantErr: `ControllerRevision kruise-system/logger-1 belongs to SidecarSet "logger", not "proxy"`},
		{name: "a missing revisionName is NotFound",
			pin:     &appsv1beta1.SidecarSetInjectRevision{RevisionName: new("proxy-9")},
			wantErr: `ControllerRevision kruise-system/proxy-9: controllerrevisions.apps "proxy-9" not found`, wantNotFound: true},
		{name: "a customVersion resolves to the newest revision the SidecarSet owns",
			pin: &appsv1beta1.SidecarSetInjectRevision{CustomVersion: new("v1")}, want: "proxy-2"},
		{name: "a customVersion no revision carries is an error",
			pin:     &appsv1beta1.SidecarSetInjectRevision{CustomVersion: new("v2")},
			wantErr: `no ControllerRevision of SidecarSet "proxy" in kruise-system has apps.kruise.io/sidecarset-custom-version=v2`},
		{name: "a pin naming nothing is an error", pin: &appsv1beta1.SidecarSetInjectRevision{},
			wantErr: "injectionStrategy.revision names neither a revisionName nor a customVersion"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rev, err := PinnedRevision(t.Context(), r, ns, pinned(tc.pin))
			if apierrors.IsNotFound(err) != tc.wantNotFound {
				t.Errorf("IsNotFound(%v) = %v, want %v", err, apierrors.IsNotFound(err), tc.wantNotFound)
			}
			if expect.Error(t, err, tc.wantErr) {
				return
			}
			got := ""
			if rev != nil {
				got = rev.Name
			}
			if got != tc.want {
				t.Errorf("revision = %q, want %q", got, tc.want)
			}
		})
	}
}
