package whitelistwatch

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/policy"
)

func TestLoadWhitelist_AppliesTheConfigMapInForce(t *testing.T) {
	t.Parallel()
	const (
		good      = `{"rules":[{"allowedAnnotationKeyExprs":["^oom-score$"]}]}`
		malformed = `{"rules":[{"annotationKeyExprs":["^oom-score$"]}]}`
	)
	key := configMapKey("kruise-system")
	configMap := func(whitelist string) *corev1.ConfigMap {
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
			Data:       map[string]string{appsv1beta1.PatchPodMetadataWhiteListKey: whitelist},
		}
	}
	withPatch := &appsv1beta1.SidecarSet{Spec: appsv1beta1.SidecarSetSpec{PatchPodMetadata: []appsv1beta1.SidecarSetPatchPodMetadata{
		{Annotations: map[string]string{"oom-score": "1"}, PatchPolicy: appsv1beta1.SidecarSetRetainPatchPolicy}}}}
	readFailure := errors.New("cache stopped")

	tests := []struct {
		name string
		// before is loaded first (nil: nothing), then current.
		before, current *corev1.ConfigMap
		getErr          error
		wantFound       bool
		wantInvalid     bool
		wantErr         error
		// wantAllowed is whether the store then allows patchPodMetadata
		// oom-score with the defaults gate off.
		wantAllowed bool
	}{
		{name: "a present whitelist is in force right after loading", current: configMap(good), wantFound: true, wantAllowed: true},
		{name: "a missing ConfigMap leaves no whitelist", wantAllowed: false},
		{name: "a deleted ConfigMap removes the previous whitelist", before: configMap(good), wantAllowed: false},
		{name: "a malformed whitelist is reported and the last good one stays in force",
			before: configMap(good), current: configMap(malformed), wantFound: true, wantInvalid: true, wantAllowed: true},
		{name: "a read error is returned and changes nothing", before: configMap(good), current: configMap(malformed),
			getErr: readFailure, wantErr: readFailure, wantAllowed: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			store := policy.NewStore()
			if tc.before != nil {
				if _, err := load(ctx, newReader(t, nil, tc.before), store, key); err != nil {
					t.Fatalf("loading the first version: %v", err)
				}
			}
			var objs []client.Object
			if tc.current != nil {
				objs = append(objs, tc.current)
			}
			got, err := load(ctx, newReader(t, tc.getErr, objs...), store, key)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("load() error = %v, want %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.wantFound, got.configMap != nil); diff != "" {
				t.Errorf("ConfigMap found (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantInvalid, got.invalid != nil); diff != "" {
				t.Errorf("whitelist invalid (-want +got):\n%s", diff)
			}
			allowed := len(store.Current().Check(false, withPatch)) == 0
			if diff := cmp.Diff(tc.wantAllowed, allowed); diff != "" {
				t.Errorf("oom-score allowed (-want +got):\n%s", diff)
			}
		})
	}
}

// newReader is a fake reader holding objs whose Get fails with getErr, if set.
func newReader(t *testing.T, getErr error, objs ...client.Object) client.Reader {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	b := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...)
	if getErr != nil {
		b = b.WithInterceptorFuncs(interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return getErr
		}})
	}
	return b.Build()
}
