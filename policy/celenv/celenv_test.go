package celenv

import (
	"context"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/cel/environment"
)

func TestMatcher(t *testing.T) {
	t.Parallel()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "shop", Labels: map[string]string{"app": "web"}}}
	kind := corev1.SchemeGroupVersion.WithKind("Pod")
	attr := &admission.VersionedAttributes{
		Attributes: admission.NewAttributesRecord(pod, nil, kind, "shop", "web-1", corev1.SchemeGroupVersion.WithResource("pods"), "",
			admission.Create, &metav1.CreateOptions{}, false, nil),
		VersionedObject: admission.NewLazyObject(pod), VersionedKind: kind,
	}
	tests := []struct {
		name       string
		conditions []string
		matches    bool
		failed     string
		err        bool
	}{
		{name: "no condition", matches: true},
		{name: "the object's labels", conditions: []string{`object.metadata.labels["app"] == "web"`}, matches: true},
		{name: "the request", conditions: []string{`request.operation == "CREATE" && request.namespace == "shop"`}, matches: true},
		{name: "a false one among true ones is named", conditions: []string{"true", `object.metadata.name == "db"`, "true"}, failed: "c1"},
		{name: "a false one wins over an error", conditions: []string{"1/0 == 1", "false"}, failed: "c1"},
		{name: "a runtime error", conditions: []string{"1/0 == 1"}, err: true},
		{name: "a compile error", conditions: []string{"object.metadata.labels["}, err: true},
		{name: "the authorizer, not bound here", conditions: []string{`authorizer.group("").resource("pods").check("create").allowed()`}, err: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var conds []admissionregistrationv1.MatchCondition
			for i, e := range tc.conditions {
				conds = append(conds, admissionregistrationv1.MatchCondition{Name: "c" + string(rune('0'+i)), Expression: e})
			}
			r := Matcher("test", conds).Match(context.Background(), attr, nil, nil)
			if (r.Error != nil) != tc.err || r.Matches != tc.matches || r.FailedConditionName != tc.failed {
				t.Errorf("Match = %+v; want matches %v, failed %q, error %v", r, tc.matches, tc.failed, tc.err)
			}
		})
	}
}

// TestBase_PinsTheLibrary: an expression is compiled with the library of
// the pinned version, not the newest one.
func TestBase_PinsTheLibrary(t *testing.T) {
	t.Parallel()
	// The sets library came with Kubernetes 1.29.
	for _, tc := range []struct {
		version *version.Version
		expr    string
		ok      bool
	}{
		{Policies, `sets.contains([1, 2], [1])`, true},
		{version.MajorMinor(1, 29), `sets.contains([1, 2], [1])`, true},
		{version.MajorMinor(1, 28), `sets.contains([1, 2], [1])`, false},
		{version.MajorMinor(1, 28), `"a,b".split(",").size() == 2`, true},
	} {
		env, err := Base(tc.version).Env(environment.NewExpressions)
		if err != nil {
			t.Fatal(err)
		}
		_, iss := env.Compile(tc.expr)
		if (iss.Err() == nil) != tc.ok {
			t.Errorf("at %s, %s: compile error %v, want ok %v", tc.version, tc.expr, iss.Err(), tc.ok)
		}
	}
}
