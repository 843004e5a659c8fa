package policy

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// The seed corpora are under testdata/fuzz/<FuzzName>; `go test` runs them,
// `go test -fuzz=FuzzName ./policy/` explores further.

// FuzzWhitelist: any ConfigMap data parses or fails without panicking, and
// a parsed whitelist checks any SidecarSet deterministically, reporting
// only patchPodMetadata keys.
func FuzzWhitelist(f *testing.F) {
	f.Fuzz(func(t *testing.T, data, labelKey, labelValue, key string) {
		w, err := ParseWhitelist(data)
		if err != nil {
			if w != nil {
				t.Fatalf("ParseWhitelist returned a whitelist and an error: %v", err)
			}
			return
		}
		s := &appsv1beta1.SidecarSet{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{labelKey: labelValue}},
			Spec: appsv1beta1.SidecarSetSpec{PatchPodMetadata: []appsv1beta1.SidecarSetPatchPodMetadata{
				{Annotations: map[string]string{key: "v", key + "-2": "v"}},
			}},
		}
		for _, gate := range []bool{false, true} {
			first := checkWith(w, gate, s)
			if diff := cmp.Diff(first, checkWith(w, gate, s)); diff != "" {
				t.Fatalf("Check is not deterministic (-first +second):\n%s", diff)
			}
			for _, e := range first {
				if !strings.HasPrefix(e.Field, "spec.patchPodMetadata[0].annotations[") {
					t.Fatalf("error on %q, want a patchPodMetadata key", e.Field)
				}
			}
		}
	})
}

// FuzzRules: the shipped rules evaluate any SidecarSet, on create and on
// update, without panicking, without runtime errors other than a cost
// limit, and within the request budget (plus the one evaluation that may
// overrun it).
func FuzzRules(f *testing.F) {
	for _, s := range []*appsv1beta1.SidecarSet{validSidecarSet(), everyRuleFails(), everyRuleFailsOnCanary()} {
		data, err := json.Marshal(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, []byte("null"))
	}
	rules := mustShippedRules(f)
	f.Fuzz(func(t *testing.T, objData, oldData []byte) {
		var obj appsv1beta1.SidecarSet
		if json.Unmarshal(objData, &obj) != nil {
			return
		}
		var old *appsv1beta1.SidecarSet
		if json.Unmarshal(oldData, &old) != nil {
			return
		}
		res, err := rules.Evaluate(t.Context(), &obj, old)
		if err != nil && !errors.Is(err, ErrOutOfBudget) {
			t.Fatalf("Validate: %v", err)
		}
		if res.Cost > RuntimeCostBudget+PerCallLimit {
			t.Fatalf("cost %d, more than the budget %d plus one call", res.Cost, RuntimeCostBudget)
		}
		for _, e := range res.Errors {
			if e.Field == "" || e.Origin == "" || e.Detail == "" {
				t.Fatalf("incomplete error %#v", e)
			}
		}
	})
}
