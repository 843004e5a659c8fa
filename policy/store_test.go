package policy

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

func configMap(resourceVersion string, whitelist *string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Namespace: "kruise-system", Name: appsv1beta1.ConfigurationConfigMapName, ResourceVersion: resourceVersion,
	}}
	cm.Data = map[string]string{"other": "x"}
	if whitelist != nil {
		cm.Data[appsv1beta1.PatchPodMetadataWhiteListKey] = *whitelist
	}
	return cm
}

// TestStore_Updates walks a Store through a ConfigMap's life; each step
// depends on the previous ones.
func TestStore_Updates(t *testing.T) {
	t.Parallel()
	good := `{"rules":[{"allowedAnnotationKeyExprs":["^oom-score$"]}]}`
	other := `{"rules":[{"allowedAnnotationKeyExprs":["^other$"]}]}`
	malformed := `{"rules":[{"annotationKeyExprs":["^oom-score$"]}]}`
	obj := &appsv1beta1.SidecarSet{Spec: appsv1beta1.SidecarSetSpec{PatchPodMetadata: []appsv1beta1.SidecarSetPatchPodMetadata{
		{Annotations: map[string]string{"oom-score": "1"}},
	}}}
	notFound := "SidecarSet patch metadata whitelist not found"
	type want struct {
		present   bool
		version   string
		loadError string // substring; "" for none
		updateErr bool
		// check is the detail of the single error of Check on obj with the
		// defaults gate on, as a prefix; "" for no error.
		check string
	}
	store := NewStore()
	steps := []struct {
		name   string
		update func() error
		want   want
	}{{
		name:   "a new store has no whitelist",
		update: func() error { return nil },
	}, {
		name:   "a ConfigMap without the key is a missing whitelist",
		update: func() error { return store.Update(configMap("1", nil)) },
		want:   want{version: "1"},
	}, {
		name:   "a malformed first whitelist fails closed, whatever the gate",
		update: func() error { return store.Update(configMap("2", &malformed)) },
		want: want{present: true, version: "2", updateErr: true,
			loadError: `ConfigMap kruise-system/kruise-configuration resourceVersion 2: rules[0]: json: unknown field "annotationKeyExprs"`,
			check:     `SidecarSet patch metadata whitelist is invalid: ConfigMap kruise-system/kruise-configuration resourceVersion 2: rules[0]`},
	}, {
		name:   "a good whitelist replaces it and clears the error",
		update: func() error { return store.Update(configMap("3", &good)) },
		want:   want{present: true, version: "3"},
	}, {
		name:   "a malformed update keeps the last good whitelist",
		update: func() error { return store.Update(configMap("4", &malformed)) },
		want:   want{present: true, version: "3", updateErr: true, loadError: "resourceVersion 4: rules[0]"},
	}, {
		name:   "another good whitelist applies",
		update: func() error { return store.Update(configMap("5", &other)) },
		want: want{present: true, version: "5",
			check: "sidecarSet patch metadata annotation(oom-score) is not allowed"},
	}, {
		name:   "a deleted ConfigMap leaves no whitelist",
		update: func() error { store.Delete(); return nil },
	}, {
		name:   "a good whitelist after a deletion applies",
		update: func() error { return store.Update(configMap("6", &good)) },
		want:   want{present: true, version: "6"},
	}, {
		name:   "a nil ConfigMap is a deletion",
		update: func() error { return store.Update(nil) },
	}}
	for _, step := range steps {
		err := step.update()
		if (err != nil) != step.want.updateErr {
			t.Fatalf("%s: update error = %v, want error %v", step.name, err, step.want.updateErr)
		}
		snap := store.Current()
		if snap.Present != step.want.present || snap.Version != step.want.version {
			t.Errorf("%s: present=%v version=%q, want present=%v version=%q",
				step.name, snap.Present, snap.Version, step.want.present, step.want.version)
		}
		if snap.Present && step.want.loadError == "" && snap.Whitelist == nil {
			t.Errorf("%s: no whitelist, want one", step.name)
		}
		gotLoadErr := ""
		if snap.LoadError != nil {
			gotLoadErr = snap.LoadError.Error()
		}
		if !strings.Contains(gotLoadErr, step.want.loadError) || (step.want.loadError == "") != (gotLoadErr == "") {
			t.Errorf("%s: LoadError = %q, want it to contain %q", step.name, gotLoadErr, step.want.loadError)
		}
		errs := snap.Check(true, obj)
		switch {
		case step.want.check == "" && len(errs) != 0:
			t.Errorf("%s: Check = %v, want no error", step.name, errs)
		case step.want.check != "" && (len(errs) != 1 || !strings.HasPrefix(errs[0].Detail, step.want.check)):
			t.Errorf("%s: Check = %v, want one error starting with %q", step.name, errs, step.want.check)
		}
		if !snap.Present {
			// Without the gate, a missing whitelist is reported as Kruise does.
			if errs := snap.Check(false, obj); len(errs) != 1 || !strings.HasPrefix(errs[0].Detail, notFound) {
				t.Errorf("%s: Check without the gate = %v, want %q", step.name, errs, notFound)
			}
		}
	}
}

func TestSnapshot_CheckWithoutPatchPodMetadata(t *testing.T) {
	t.Parallel()
	snap := &Snapshot{Present: true, LoadError: errors.New("malformed")}
	if diff := cmp.Diff(field.ErrorList(nil), snap.Check(false, &appsv1beta1.SidecarSet{})); diff != "" {
		t.Errorf("Check (-want +got):\n%s", diff)
	}
}

// TestStore_Loaded: a store knows nothing until the ConfigMap was read once,
// present or not; a nil store holds no whitelist.
func TestStore_Loaded(t *testing.T) {
	t.Parallel()
	var none *Store
	if none.Loaded() || none.Current().Whitelist != nil {
		t.Error("a nil store is loaded or has a whitelist")
	}
	missing := NewStore()
	if missing.Loaded() {
		t.Error("a new store is loaded")
	}
	missing.Delete()
	if !missing.Loaded() {
		t.Error("a store told the ConfigMap is missing is not loaded")
	}
	present := NewStore()
	if err := present.Update(configMap("1", nil)); err != nil || !present.Loaded() {
		t.Errorf("a store updated with a ConfigMap: loaded %v, error %v", present.Loaded(), err)
	}
}
