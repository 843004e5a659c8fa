package scope

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset-operator/sidecarset-operator/api/match"
	appsv1alpha1 "github.com/sidecarset-operator/sidecarset-operator/api/v1alpha1"
)

func set(name string, sel *metav1.LabelSelector) *appsv1alpha1.SidecarSet {
	s := &appsv1alpha1.SidecarSet{}
	s.Name = name
	s.Spec.Selector = sel
	return s
}

func labels(kv ...string) *metav1.LabelSelector {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{}}
	for i := 0; i < len(kv); i += 2 {
		sel.MatchLabels[kv[i]] = kv[i+1]
	}
	return sel
}

func exprs(reqs ...metav1.LabelSelectorRequirement) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchExpressions: reqs}
}

func req(key string, op metav1.LabelSelectorOperator, values ...string) metav1.LabelSelectorRequirement {
	return metav1.LabelSelectorRequirement{Key: key, Operator: op, Values: values}
}

func TestConditions(t *testing.T) {
	cases := []struct {
		name   string
		sets   []*appsv1alpha1.SidecarSet
		want   string // "" means no condition
		reason string
	}{
		{
			name: "no SidecarSet: no pod is sent",
			want: "false",
		},
		{
			name: "seed example: app=nginx",
			sets: []*appsv1alpha1.SidecarSet{set("test-sidecarset", labels("app", "nginx"))},
			want: "has(object.metadata.labels) && (('app' in object.metadata.labels && object.metadata.labels['app'] in ['nginx']))",
		},
		{
			name: "values of one key are merged and sorted; the first matchLabels key in order is used",
			sets: []*appsv1alpha1.SidecarSet{
				set("b", labels("app", "web", "tier", "front")),
				set("a", labels("app", "api")),
				set("c", exprs(req("app", metav1.LabelSelectorOpIn, "db", "cache"))),
			},
			want: "has(object.metadata.labels) && (('app' in object.metadata.labels && object.metadata.labels['app'] in ['api', 'cache', 'db', 'web']))",
		},
		{
			name: "Exists widens a key to any value; NotIn before a positive requirement is skipped",
			sets: []*appsv1alpha1.SidecarSet{
				set("a", labels("app", "web")),
				set("b", exprs(req("env", metav1.LabelSelectorOpNotIn, "prod"), req("app", metav1.LabelSelectorOpExists))),
				set("c", exprs(req("sidecar.example.com/inject", metav1.LabelSelectorOpIn, "true"))),
			},
			want: "has(object.metadata.labels) && ('app' in object.metadata.labels || " +
				"('sidecar.example.com/inject' in object.metadata.labels && object.metadata.labels['sidecar.example.com/inject'] in ['true']))",
		},
		{
			name: "nil and empty selectors select nothing",
			sets: []*appsv1alpha1.SidecarSet{set("nil", nil), set("empty", &metav1.LabelSelector{}), set("a", labels("app", "web"))},
			want: "has(object.metadata.labels) && (('app' in object.metadata.labels && object.metadata.labels['app'] in ['web']))",
		},
		{
			name:   "a selector of NotIn and DoesNotExist only can select a pod without labels",
			sets:   []*appsv1alpha1.SidecarSet{set("a", labels("app", "web")), set("negative", exprs(req("app", metav1.LabelSelectorOpNotIn, "web"), req("x", metav1.LabelSelectorOpDoesNotExist)))},
			reason: `SidecarSet "negative" has a selector that requires no label`,
		},
		{
			name:   "an invalid selector sends every pod (the injector denies what it cannot evaluate)",
			sets:   []*appsv1alpha1.SidecarSet{set("bad", exprs(req("app", "Near", "x")))},
			reason: `SidecarSet "bad" has a selector that requires no label`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			conds, summary := Conditions(tc.sets)
			if tc.want == "" {
				if conds != nil || summary.Scoped || summary.Reason != tc.reason {
					t.Fatalf("got %v %+v, want no condition because %s", conds, summary, tc.reason)
				}
				return
			}
			if len(conds) != 1 || conds[0].Name != ConditionName || !summary.Scoped {
				t.Fatalf("got %v %+v, want one condition", conds, summary)
			}
			if conds[0].Expression != tc.want {
				t.Fatalf("expression\n got: %s\nwant: %s", conds[0].Expression, tc.want)
			}
			compile(t, conds[0].Expression)
		})
	}
}

func TestConditions_Size(t *testing.T) {
	var sets []*appsv1alpha1.SidecarSet
	for i := range 1000 {
		sets = append(sets, set(fmt.Sprintf("s%d", i), labels("app", fmt.Sprintf("bench-other-%04d", i))))
	}
	conds, summary := Conditions(sets)
	if len(conds) != 1 || summary.ValuesDropped || summary.Keys != 1 {
		t.Fatalf("1000 values of one key: got %+v", summary)
	}
	long := strings.Repeat("v", 55)
	for i := range 2000 {
		sets = append(sets, set(fmt.Sprintf("l%d", i), labels("app", fmt.Sprintf("%s%04d", long, i))))
	}
	conds, summary = Conditions(sets)
	if len(conds) != 1 || !summary.ValuesDropped || conds[0].Expression != "has(object.metadata.labels) && ('app' in object.metadata.labels)" {
		t.Fatalf("too many values: got %v %+v, want the key only", conds, summary)
	}
	sets = nil
	for i := range 2000 {
		sets = append(sets, set(fmt.Sprintf("k%d", i), labels(fmt.Sprintf("example.com/%s%04d", long, i), "x")))
	}
	conds, summary = Conditions(sets)
	if conds != nil || summary.Scoped || !strings.Contains(summary.Reason, "too many label keys (2000)") {
		t.Fatalf("too many keys: got %v %+v, want no condition", conds, summary)
	}
}

// TestConditions_NeverExcludesASelectedPod is the property the webhook's
// correctness rests on: for random SidecarSets and random pods, a pod that
// any SidecarSet selects meets the condition.
func TestConditions_NeverExcludesASelectedPod(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	keys := []string{"app", "tier", "env", "example.com/inject"}
	values := []string{"a", "b", "c", ""}
	randomSelector := func() *metav1.LabelSelector {
		sel := &metav1.LabelSelector{}
		for range r.IntN(3) {
			if sel.MatchLabels == nil {
				sel.MatchLabels = map[string]string{}
			}
			sel.MatchLabels[keys[r.IntN(len(keys))]] = values[r.IntN(len(values))]
		}
		ops := []metav1.LabelSelectorOperator{metav1.LabelSelectorOpIn, metav1.LabelSelectorOpNotIn, metav1.LabelSelectorOpExists, metav1.LabelSelectorOpDoesNotExist}
		for range r.IntN(3) {
			op := ops[r.IntN(len(ops))]
			rq := metav1.LabelSelectorRequirement{Key: keys[r.IntN(len(keys))], Operator: op}
			if op == metav1.LabelSelectorOpIn || op == metav1.LabelSelectorOpNotIn {
				for range 1 + r.IntN(2) {
					rq.Values = append(rq.Values, values[r.IntN(len(values))])
				}
			}
			sel.MatchExpressions = append(sel.MatchExpressions, rq)
		}
		return sel
	}
	randomLabels := func() map[string]string {
		if r.IntN(5) == 0 {
			return nil
		}
		l := map[string]string{}
		for range r.IntN(4) {
			l[keys[r.IntN(len(keys))]] = values[r.IntN(len(values))]
		}
		return l
	}
	scoped, excluded := 0, 0
	for round := range 300 {
		var sets []*appsv1alpha1.SidecarSet
		for i := range 1 + r.IntN(4) {
			sets = append(sets, set(fmt.Sprintf("s%d", i), randomSelector()))
		}
		conds, _ := Conditions(sets)
		if conds == nil {
			continue
		}
		scoped++
		prg := compile(t, conds[0].Expression)
		for range 50 {
			podLabels := randomLabels()
			selected := false
			for _, s := range sets {
				ok, _ := match.Pod(s, podLabels)
				selected = selected || ok
			}
			sent := eval(t, prg, podLabels)
			if selected && !sent {
				t.Fatalf("round %d: a pod with labels %v is selected but not sent; condition: %s", round, podLabels, conds[0].Expression)
			}
			if !sent {
				excluded++
			}
		}
	}
	if scoped < 100 || excluded == 0 {
		t.Fatalf("the property was barely exercised: %d scoped rounds, %d pods excluded", scoped, excluded)
	}
}

func compile(t *testing.T, expr string) cel.Program {
	t.Helper()
	env, err := cel.NewEnv(cel.Variable("object", cel.DynType))
	if err != nil {
		t.Fatal(err)
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		t.Fatalf("%s: %v", expr, iss.Err())
	}
	prg, err := env.Program(ast)
	if err != nil {
		t.Fatal(err)
	}
	return prg
}

func eval(t *testing.T, prg cel.Program, podLabels map[string]string) bool {
	t.Helper()
	meta := map[string]any{"name": "pod"}
	if podLabels != nil {
		meta["labels"] = podLabels
	}
	out, _, err := prg.Eval(map[string]any{"object": map[string]any{"metadata": meta}})
	if err != nil {
		t.Fatalf("labels %v: %v", podLabels, err)
	}
	return out.Value().(bool)
}

func TestMerge_KeepsOtherConditionsAndReplacesOurs(t *testing.T) {
	t.Parallel()
	mine := admissionregistrationv1.MatchCondition{Name: "not-kube-system", Expression: "true"}
	stale := admissionregistrationv1.MatchCondition{Name: ConditionName, Expression: "false"}
	fresh := admissionregistrationv1.MatchCondition{Name: ConditionName, Expression: "'app' in object.metadata.labels"}
	tests := []struct {
		name           string
		existing, ours []admissionregistrationv1.MatchCondition
		want           []admissionregistrationv1.MatchCondition
	}{
		{"ours added after the others", []admissionregistrationv1.MatchCondition{mine}, []admissionregistrationv1.MatchCondition{fresh},
			[]admissionregistrationv1.MatchCondition{mine, fresh}},
		{"ours replaced", []admissionregistrationv1.MatchCondition{stale, mine}, []admissionregistrationv1.MatchCondition{fresh},
			[]admissionregistrationv1.MatchCondition{mine, fresh}},
		{"ours removed when unscoped", []admissionregistrationv1.MatchCondition{mine, stale}, nil,
			[]admissionregistrationv1.MatchCondition{mine}},
		{"nothing to keep", nil, nil, []admissionregistrationv1.MatchCondition{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, Merge(tc.existing, tc.ours)); diff != "" {
				t.Errorf("Merge (-want +got):\n%s", diff)
			}
		})
	}
}
