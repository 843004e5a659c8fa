package scope

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/sidecarset-operator/sidecarset-operator/api/match"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

func set(name string, sel *metav1.LabelSelector) *appsv1beta1.SidecarSet {
	s := &appsv1beta1.SidecarSet{}
	s.Name = name
	s.Spec.Selector = sel
	return s
}

func inNamespace(s *appsv1beta1.SidecarSet, ns string) *appsv1beta1.SidecarSet {
	s.Spec.NamespaceSelector = appsv1beta1.SelectNamespace(ns)
	return s
}

func withNamespaceSelector(s *appsv1beta1.SidecarSet, sel *metav1.LabelSelector) *appsv1beta1.SidecarSet {
	s.Spec.NamespaceSelector = sel
	return s
}

func bestEffort(s *appsv1beta1.SidecarSet) *appsv1beta1.SidecarSet {
	s.Annotations = map[string]string{appsv1beta1.FailurePolicyAnnotation: appsv1beta1.FailurePolicyIgnore}
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

func TestBuild_Expressions(t *testing.T) {
	t.Parallel()
	paused := set("paused", labels("app", "web"))
	paused.Spec.InjectionStrategy.Paused = true
	cases := []struct {
		name       string
		sets       []*appsv1beta1.SidecarSet
		required   string
		bestEffort string
		wider      []string
	}{
		{
			name:       "no SidecarSet: no pod is sent",
			required:   "false",
			bestEffort: "false",
		},
		{
			name:       "the manual's example: app=nginx",
			sets:       []*appsv1beta1.SidecarSet{set("test-sidecarset", labels("app", "nginx"))},
			required:   "has(object.metadata.labels) ? (('app' in object.metadata.labels && object.metadata.labels['app'] == 'nginx')) : (false)",
			bestEffort: "false",
		},
		{
			name: "issue 11: DoesNotExist in one namespace selects only that namespace's pods",
			sets: []*appsv1beta1.SidecarSet{inNamespace(set("opt-out", exprs(req("opt-out", metav1.LabelSelectorOpDoesNotExist))), "team-a")},
			required: "has(object.metadata.labels) ? ((request.namespace == 'team-a' && !('opt-out' in object.metadata.labels))) : " +
				"((request.namespace == 'team-a'))",
			bestEffort: "false",
		},
		{
			name: "matchLabels and expressions are conjoined; single-key terms of a namespace are merged",
			sets: []*appsv1beta1.SidecarSet{
				set("b", labels("app", "web", "tier", "front")),
				set("a", labels("app", "api")),
				set("c", exprs(req("app", metav1.LabelSelectorOpIn, "db", "cache"))),
				set("d", exprs(req("env", metav1.LabelSelectorOpNotIn, "prod"), req("team", metav1.LabelSelectorOpExists))),
			},
			required: "has(object.metadata.labels) ? ((('app' in object.metadata.labels && object.metadata.labels['app'] in ['api', 'cache', 'db']) || " +
				"((!('env' in object.metadata.labels) || !(object.metadata.labels['env'] in ['prod'])) && 'team' in object.metadata.labels) || " +
				"(('app' in object.metadata.labels && object.metadata.labels['app'] == 'web') && ('tier' in object.metadata.labels && object.metadata.labels['tier'] == 'front')))) : (false)",
			bestEffort: "false",
		},
		{
			name:       "paused, nil, empty and invalid selectors select nothing",
			sets:       []*appsv1beta1.SidecarSet{paused, set("nil", nil), set("empty", &metav1.LabelSelector{}), set("bad", exprs(req("app", "Near", "x")))},
			required:   "false",
			bestEffort: "false",
		},
		{
			name: "a namespaceSelector on the name label is exact, on other labels wider",
			sets: []*appsv1beta1.SidecarSet{
				withNamespaceSelector(set("by-name", labels("app", "web")), exprs(req(match.NamespaceNameLabel, metav1.LabelSelectorOpIn, "a", "b"))),
				withNamespaceSelector(set("by-label", labels("app", "web")), labels("team", "x")),
				withNamespaceSelector(set("not-kube-system", labels("app", "db")), exprs(req(match.NamespaceNameLabel, metav1.LabelSelectorOpNotIn, "kube-system"))),
				withNamespaceSelector(set("none", labels("app", "db")), exprs(req(match.NamespaceNameLabel, metav1.LabelSelectorOpDoesNotExist))),
			},
			required: "has(object.metadata.labels) ? ((('app' in object.metadata.labels && object.metadata.labels['app'] == 'web') || " +
				"(!(request.namespace in ['kube-system']) && ('app' in object.metadata.labels && object.metadata.labels['app'] == 'db')) || " +
				"(request.namespace in ['a', 'b'] && ('app' in object.metadata.labels && object.metadata.labels['app'] == 'web')))) : (false)",
			bestEffort: "false",
			wider:      []string{"by-label"},
		},
		{
			name: "best-effort SidecarSets have their own condition, without the pods a required one selects",
			sets: []*appsv1beta1.SidecarSet{
				set("mtls", labels("mesh", "on")),
				bestEffort(set("logs", labels("app", "web"))),
			},
			required: "has(object.metadata.labels) ? (('mesh' in object.metadata.labels && object.metadata.labels['mesh'] == 'on')) : (false)",
			bestEffort: "(has(object.metadata.labels) ? (('app' in object.metadata.labels && object.metadata.labels['app'] == 'web')) : (false)) && " +
				"!(has(object.metadata.labels) ? (('mesh' in object.metadata.labels && object.metadata.labels['mesh'] == 'on')) : (false))",
		},
		{
			name:       "only best-effort SidecarSets",
			sets:       []*appsv1beta1.SidecarSet{bestEffort(set("logs", labels("app", "web")))},
			required:   "false",
			bestEffort: "has(object.metadata.labels) ? (('app' in object.metadata.labels && object.metadata.labels['app'] == 'web')) : (false)",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := Build(tc.sets)
			if got.Required.Expression != tc.required {
				t.Errorf("required\n got: %s\nwant: %s", got.Required.Expression, tc.required)
			}
			if got.BestEffort.Expression != tc.bestEffort {
				t.Errorf("best-effort\n got: %s\nwant: %s", got.BestEffort.Expression, tc.bestEffort)
			}
			if diff := cmp.Diff(tc.wider, got.Required.Wider); diff != "" {
				t.Errorf("wider (-want +got):\n%s", diff)
			}
			if got.Required.Level != Exact || got.BestEffort.Level != Exact {
				t.Errorf("levels %s/%s, want Exact", got.Required.Level, got.BestEffort.Level)
			}
			newEvaluator(t, got.Required.Expression)
			newEvaluator(t, got.BestEffort.Expression)
		})
	}
}

// pod is what a matchCondition sees of a pod creation.
type pod struct {
	namespace string
	nsLabels  map[string]string // the namespace's labels (not visible to CEL)
	labels    map[string]string // nil: no labels field
}

// selected is the injector's decision, from api/match.
func selected(s *appsv1beta1.SidecarSet, p pod) bool {
	if s.Spec.InjectionStrategy.Paused {
		return false
	}
	if ok, err := match.Namespace(s, p.namespace, p.nsLabels); err != nil || !ok {
		return false
	}
	ok, err := match.Pod(s, p.labels)
	return err == nil && ok
}

// TestBuild_ExactForRandomSelectors is the property the webhooks rest on:
// for random SidecarSets and pods, the required condition is true exactly
// for the pods some required SidecarSet selects, and the best-effort one
// exactly for those only best-effort SidecarSets select. SidecarSets that
// select namespaces by other labels than the name may only widen.
func TestBuild_ExactForRandomSelectors(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	keys := []string{"app", "tier", "env", "example.com/inject"}
	values := []string{"a", "b", "c", ""}
	namespaces := []string{"default", "kube-system", "team-a"}
	ops := []metav1.LabelSelectorOperator{metav1.LabelSelectorOpIn, metav1.LabelSelectorOpNotIn, metav1.LabelSelectorOpExists, metav1.LabelSelectorOpDoesNotExist}
	randomSelector := func(keys, values []string) *metav1.LabelSelector {
		sel := &metav1.LabelSelector{}
		for range r.IntN(3) {
			if sel.MatchLabels == nil {
				sel.MatchLabels = map[string]string{}
			}
			sel.MatchLabels[keys[r.IntN(len(keys))]] = values[r.IntN(len(values))]
		}
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
	randomSet := func(i int) (*appsv1beta1.SidecarSet, bool) {
		s := set(fmt.Sprintf("s%d", i), randomSelector(keys, values))
		exact := true
		switch r.IntN(4) {
		case 0:
			s.Spec.NamespaceSelector = appsv1beta1.SelectNamespace(namespaces[r.IntN(len(namespaces))])
		case 1:
			s.Spec.NamespaceSelector = randomSelector([]string{match.NamespaceNameLabel}, namespaces)
		case 2:
			s.Spec.NamespaceSelector = randomSelector([]string{match.NamespaceNameLabel, "team"}, append(cloneStrings(namespaces), "x"))
			exact = false
		}
		if r.IntN(3) == 0 {
			bestEffort(s)
		}
		s.Spec.InjectionStrategy.Paused = r.IntN(10) == 0
		return s, exact
	}
	randomPod := func() pod {
		p := pod{namespace: namespaces[r.IntN(len(namespaces))]}
		if r.IntN(2) == 0 {
			p.nsLabels = map[string]string{"team": []string{"x", "y"}[r.IntN(2)]}
		}
		if r.IntN(5) != 0 {
			p.labels = map[string]string{}
			for range r.IntN(4) {
				p.labels[keys[r.IntN(len(keys))]] = values[r.IntN(len(values))]
			}
		}
		return p
	}
	sent, notSent := 0, 0
	for round := range 200 {
		var sets []*appsv1beta1.SidecarSet
		exact := true
		for i := range 1 + r.IntN(5) {
			s, e := randomSet(i)
			sets = append(sets, s)
			exact = exact && e
		}
		sc := Build(sets)
		required, bestEffortEval := newEvaluator(t, sc.Required.Expression), newEvaluator(t, sc.BestEffort.Expression)
		for range 40 {
			p := randomPod()
			var byRequired, byBestEffort bool
			for _, s := range sets {
				if selected(s, p) {
					if appsv1beta1.IsBestEffort(s) {
						byBestEffort = true
					} else {
						byRequired = true
					}
				}
			}
			gotRequired, gotBestEffort := required.eval(t, p), bestEffortEval.eval(t, p)
			if byRequired && !gotRequired {
				t.Fatalf("round %d: pod %+v is selected by a required SidecarSet but not sent; condition: %s", round, p, sc.Required.Expression)
			}
			if byBestEffort && !byRequired && !gotBestEffort {
				t.Fatalf("round %d: pod %+v is selected by best-effort SidecarSets only but not sent; condition: %s", round, p, sc.BestEffort.Expression)
			}
			if exact && gotRequired && gotBestEffort {
				t.Fatalf("round %d: pod %+v is sent to both webhooks", round, p)
			}
			if exact && (gotRequired != byRequired || gotBestEffort != (byBestEffort && !byRequired)) {
				t.Fatalf("round %d: pod %+v: sent required=%v best-effort=%v, selected required=%v best-effort=%v; conditions:\n%s\n%s",
					round, p, gotRequired, gotBestEffort, byRequired, byBestEffort, sc.Required.Expression, sc.BestEffort.Expression)
			}
			if gotRequired || gotBestEffort {
				sent++
			} else {
				notSent++
			}
		}
	}
	if sent < 500 || notSent < 500 {
		t.Fatalf("the property was barely exercised: %d pods sent, %d not", sent, notSent)
	}
}

func cloneStrings(s []string) []string { return append([]string(nil), s...) }

// benchmarkMix is the SidecarSets of `make bench-scale`: n SidecarSets, of
// which 50 select pods (matchLabels, expressions, spec.namespace and
// namespaceSelector mixed), the rest selecting nothing.
func benchmarkMix(n int) []*appsv1beta1.SidecarSet {
	var sets []*appsv1beta1.SidecarSet
	for i := range n {
		var s *appsv1beta1.SidecarSet
		switch {
		case i >= 50:
			s = set(fmt.Sprintf("idle-%04d", i), labels("app", fmt.Sprintf("idle-%04d", i)))
		case i%4 == 0:
			s = set(fmt.Sprintf("match-%02d", i), labels("app", fmt.Sprintf("bench-%02d", i)))
		case i%4 == 1:
			s = set(fmt.Sprintf("expr-%02d", i), exprs(req("app", metav1.LabelSelectorOpIn, fmt.Sprintf("bench-%02d", i)), req("canary", metav1.LabelSelectorOpDoesNotExist)))
		case i%4 == 2:
			s = inNamespace(set(fmt.Sprintf("ns-%02d", i), labels("app", fmt.Sprintf("bench-%02d", i))), fmt.Sprintf("bench-%02d", i))
		default:
			s = withNamespaceSelector(set(fmt.Sprintf("nssel-%02d", i), labels("app", fmt.Sprintf("bench-%02d", i))), labels("bench", "true"))
		}
		sets = append(sets, s)
	}
	return sets
}

// TestBuild_FiveThousandSidecarSets: at the benchmark's size the condition
// stays exact, within MaxExpressionLength, and cheap for the API server: its
// runtime cost for a pod is far below the per-expression limit, whose excess
// would fail (failurePolicy) the pod instead of skipping the webhook.
func TestBuild_FiveThousandSidecarSets(t *testing.T) {
	t.Parallel()
	sc := Build(benchmarkMix(5000))
	c := sc.Required
	if c.Level != Exact || c.SidecarSets != 5000 || len(c.Expression) > MaxExpressionLength {
		t.Fatalf("5000 SidecarSets: level %s, %d SidecarSets, %d bytes", c.Level, c.SidecarSets, len(c.Expression))
	}
	e := newEvaluator(t, c.Expression)
	worst := uint64(0)
	for _, p := range []pod{
		{namespace: "bench-02", labels: map[string]string{"app": "bench-02", "pod-template-hash": "abc"}},
		{namespace: "default", labels: map[string]string{"app": "unrelated", "tier": "x", "env": "y"}},
		{namespace: "kube-system", labels: nil},
	} {
		_, cost := e.evalCost(t, p)
		worst = max(worst, cost)
	}
	t.Logf("5000 SidecarSets: %d bytes, worst runtime cost %d (limit per expression %d)", len(c.Expression), worst, celconfig.PerCallLimit)
	if worst > celconfig.PerCallLimit/100 {
		t.Fatalf("runtime cost %d is over 1%% of the API server's per-expression limit %d", worst, celconfig.PerCallLimit)
	}
}

// TestBuild_CompactsInsteadOfDropping: past MaxExpressionLength the terms
// are widened step by step, never dropped: every selected pod is still
// sent, and the level says how much precision was lost.
func TestBuild_CompactsInsteadOfDropping(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("v", 50)
	cases := []struct {
		name string
		sets func() []*appsv1beta1.SidecarSet
		want Level
	}{
		{"many conjunctions become one requirement each", func() []*appsv1beta1.SidecarSet {
			var sets []*appsv1beta1.SidecarSet
			for i := range 2000 {
				sets = append(sets, set(fmt.Sprintf("s%d", i), labels("app", fmt.Sprintf("a%d", i%20), fmt.Sprintf("k%d", i), long)))
			}
			return sets
		}, NecessaryLabel},
		{"many values sharing a prefix become the prefix", func() []*appsv1beta1.SidecarSet {
			var sets []*appsv1beta1.SidecarSet
			for i := range 6000 {
				sets = append(sets, set(fmt.Sprintf("s%d", i), labels("app", fmt.Sprintf("a-much-longer-application-name-%04d", i))))
			}
			return sets
		}, ValuePrefixes},
		{"many long values without a separator become their keys", func() []*appsv1beta1.SidecarSet {
			var sets []*appsv1beta1.SidecarSet
			for i := range 6000 {
				sets = append(sets, set(fmt.Sprintf("s%d", i), labels("app", fmt.Sprintf("%s%04d", long, i))))
			}
			return sets
		}, LabelKeys},
		{"many long keys leave the namespaces", func() []*appsv1beta1.SidecarSet {
			var sets []*appsv1beta1.SidecarSet
			for i := range 6000 {
				sets = append(sets, inNamespace(set(fmt.Sprintf("s%d", i), labels(fmt.Sprintf("example.com/%s%04d", long, i), "x")), fmt.Sprintf("ns-%d", i%3)))
			}
			return sets
		}, Namespaces},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sets := tc.sets()
			c := Build(sets).Required
			if c.Level != tc.want || len(c.Expression) > MaxExpressionLength {
				t.Fatalf("level %s (%d bytes), want %s", c.Level, len(c.Expression), tc.want)
			}
			e := newEvaluator(t, c.Expression)
			for _, s := range sets[:50] {
				p := pod{namespace: match.IndexValues(s)[0], labels: maps.Clone(s.Spec.Selector.MatchLabels)}
				if p.namespace == match.ClusterScope {
					p.namespace = "default"
				}
				if !e.eval(t, p) {
					t.Fatalf("pod %+v selected by %s is not sent", p, s.Name)
				}
			}
			if c.Level != Namespaces && e.eval(t, pod{namespace: "default", labels: map[string]string{"other": "x"}}) {
				t.Fatalf("a pod no SidecarSet selects is sent at level %s", c.Level)
			}
			if c.Level == Namespaces && e.eval(t, pod{namespace: "kube-system", labels: map[string]string{"other": "x"}}) {
				t.Fatalf("a pod of an unselected namespace is sent at level %s", c.Level)
			}
		})
	}
}

// evaluator runs a condition in the API server's CEL environment for
// webhook matchConditions (object and request as dynamic values).
type evaluator struct{ prg cel.Program }

func newEvaluator(t *testing.T, expr string) evaluator {
	t.Helper()
	envSet, err := environment.MustBaseEnvSet(version.MajorMinor(1, 30)).Extend(environment.VersionedOptions{
		IntroducedVersion: version.MajorMinor(1, 0),
		EnvOptions:        []cel.EnvOption{cel.Variable("object", cel.DynType), cel.Variable("request", cel.DynType)},
	})
	if err != nil {
		t.Fatal(err)
	}
	env, err := envSet.Env(environment.NewExpressions)
	if err != nil {
		t.Fatal(err)
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		t.Fatalf("the API server's environment rejects the condition: %v\n%s", iss.Err(), expr)
	}
	if ast.OutputType() != cel.BoolType && ast.OutputType() != cel.DynType {
		t.Fatalf("the condition is a %v, not a bool", ast.OutputType())
	}
	prg, err := env.Program(ast, cel.EvalOptions(cel.OptTrackCost), cel.CostLimit(celconfig.PerCallLimit))
	if err != nil {
		t.Fatal(err)
	}
	return evaluator{prg: prg}
}

func (e evaluator) evalCost(t *testing.T, p pod) (bool, uint64) {
	t.Helper()
	meta := map[string]any{"name": "pod", "namespace": p.namespace}
	if p.labels != nil {
		meta["labels"] = p.labels
	}
	out, details, err := e.prg.Eval(map[string]any{
		"object":  map[string]any{"metadata": meta},
		"request": map[string]any{"namespace": p.namespace, "operation": "CREATE"},
	})
	if err != nil {
		t.Fatalf("pod %+v: %v", p, err)
	}
	return out.Value().(bool), *details.ActualCost()
}

func (e evaluator) eval(t *testing.T, p pod) bool {
	t.Helper()
	ok, _ := e.evalCost(t, p)
	return ok
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
		{"ours removed", []admissionregistrationv1.MatchCondition{mine, stale}, nil,
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

// negative is the i-th of selectors that cannot be compacted: negative
// only, on a key of its own, with four long values.
func negative(i int) *metav1.LabelSelector {
	var values []string
	for j := range 4 {
		values = append(values, fmt.Sprintf("%s-%05d-%d", strings.Repeat("v", 50), i, j))
	}
	return exprs(req(fmt.Sprintf("example.com/%s%05d", strings.Repeat("k", 40), i), metav1.LabelSelectorOpNotIn, values...))
}

// TestBuild_WorstCases builds the scopes that SidecarSets written to push
// it around would force (negative-only selectors with long values, many
// namespaces, thousands of SidecarSets, confined or cluster-wide) and
// checks the two properties the webhooks rest on: a pod that a SidecarSet
// selects is always sent to a webhook (the required one for a required
// SidecarSet the condition keeps), and a SidecarSet confined to namespaces
// never puts a pod outside them behind the required webhook.
func TestBuild_WorstCases(t *testing.T) {
	t.Parallel()
	namespace := func(i int) string { return fmt.Sprintf("team-%058d", i) } // 63 characters
	platform := func() *appsv1beta1.SidecarSet { return set("platform-mtls", labels("mesh", "on")) }
	cases := []struct {
		name string
		sets func() []*appsv1beta1.SidecarSet
		// level is the required condition's; degraded, whether the
		// confined or the cluster-wide SidecarSets may be left out.
		level                   Level
		confinedOut, clusterOut bool
	}{
		{"negative-only selectors with long values, confined to three namespaces", func() []*appsv1beta1.SidecarSet {
			sets := []*appsv1beta1.SidecarSet{platform()}
			for i := range 3000 {
				sets = append(sets, inNamespace(set(fmt.Sprintf("team-%d", i), negative(i)), namespace(i%3)))
			}
			return sets
		}, Namespaces, false, false},
		{"negative-only selectors confined to thousands of namespaces", func() []*appsv1beta1.SidecarSet {
			sets := []*appsv1beta1.SidecarSet{platform()}
			for i := range 2500 {
				sets = append(sets, inNamespace(set(fmt.Sprintf("team-%d", i), negative(i)), namespace(i)))
			}
			return sets
		}, Degraded, true, false},
		{"negative-only selectors cluster-wide", func() []*appsv1beta1.SidecarSet {
			sets := []*appsv1beta1.SidecarSet{platform()}
			for i := range 1500 {
				sets = append(sets, set(fmt.Sprintf("wide-%d", i), negative(i)))
			}
			return sets
		}, Degraded, false, true},
		{"thousands mixed: best-effort and required, confined and cluster-wide", func() []*appsv1beta1.SidecarSet {
			sets := []*appsv1beta1.SidecarSet{platform(), bestEffort(set("platform-logs", labels("logs", "on")))}
			for i := range 4000 {
				s := inNamespace(set(fmt.Sprintf("team-%d", i), negative(i)), namespace(i%1500))
				if i%2 == 0 {
					bestEffort(s)
				}
				if i%5 == 0 {
					s.Spec.Selector = labels("app", fmt.Sprintf("%s%05d", strings.Repeat("a", 50), i))
				}
				sets = append(sets, s)
			}
			for i := range 20 {
				sets = append(sets, set(fmt.Sprintf("wide-%d", i), labels("app", fmt.Sprintf("wide-%d", i))))
			}
			return sets
		}, Degraded, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sets := tc.sets()
			sc := Build(sets)
			if sc.Required.Level != tc.level {
				t.Fatalf("required condition at level %s (%d bytes), want %s", sc.Required.Level, len(sc.Required.Expression), tc.level)
			}
			for _, c := range []Condition{sc.Required, sc.BestEffort} {
				if len(c.Expression) > MaxExpressionLength {
					t.Fatalf("a condition of %d bytes", len(c.Expression))
				}
			}
			degraded := map[string]bool{}
			for _, name := range sc.DegradedSidecarSets() {
				degraded[name] = true
			}
			confinedTo := map[string]bool{} // namespaces some confined SidecarSet names
			for _, s := range sets {
				confined := s.Spec.NamespaceSelector != nil
				if confined {
					confinedTo[match.IndexValues(s)[0]] = true
				}
				if degraded[s.Name] && (confined && !tc.confinedOut || !confined && !tc.clusterOut) {
					t.Fatalf("%s is left out of the condition", s.Name)
				}
			}
			if (tc.level == Degraded) != (len(degraded) > 0) || (tc.level == Degraded) != (sc.BestEffort.Expression == "true") {
				t.Fatalf("level %s with %d SidecarSets left out, best-effort condition %.40q", tc.level, len(degraded), sc.BestEffort.Expression)
			}
			if tc.level == Degraded && BuildCombined(sets).Expression != "true" {
				t.Fatalf("without a best-effort webhook, a degraded scope must send every pod to the required one")
			}

			// The pods: in the namespaces of the first and last SidecarSets,
			// in namespaces no one is confined to, with the labels that
			// the selectors test, and without.
			namespaces := []string{"default", "kube-system"}
			for _, s := range append(slices.Clone(sets[:40]), sets[len(sets)-40:]...) {
				if s.Spec.NamespaceSelector != nil {
					namespaces = append(namespaces, match.IndexValues(s)[0])
				}
			}
			labelSets := []map[string]string{nil, {"mesh": "on"}, {"logs": "on"}, {"app": "wide-3"},
				{"app": fmt.Sprintf("%s%05d", strings.Repeat("a", 50), 5)},
				{fmt.Sprintf("example.com/%s%05d", strings.Repeat("k", 40), 1): fmt.Sprintf("%s-%05d-%d", strings.Repeat("v", 50), 1, 2)}}
			required, bestEffortEval := newEvaluator(t, sc.Required.Expression), newEvaluator(t, sc.BestEffort.Expression)
			checked := 0
			for _, ns := range namespaces {
				for _, l := range labelSets {
					p := pod{namespace: ns, labels: l}
					gotRequired, gotBestEffort := required.eval(t, p), bestEffortEval.eval(t, p)
					byOpenRequired := false
					for _, s := range sets {
						if !selected(s, p) {
							continue
						}
						checked++
						switch {
						case !appsv1beta1.IsBestEffort(s) && !degraded[s.Name]:
							if !gotRequired {
								t.Fatalf("pod %+v selected by the required %s is not sent to the required webhook", p, s.Name)
							}
						case !gotRequired && !gotBestEffort:
							t.Fatalf("pod %+v selected by %s is sent to no webhook", p, s.Name)
						}
						if !appsv1beta1.IsBestEffort(s) && s.Spec.NamespaceSelector == nil {
							byOpenRequired = true
						}
					}
					if !confinedTo[ns] && !tc.clusterOut && gotRequired && !byOpenRequired {
						t.Fatalf("pod %+v, in a namespace no confined SidecarSet names, selected by no cluster-wide required SidecarSet, is sent to the required webhook", p)
					}
				}
			}
			if checked < len(namespaces) {
				t.Fatalf("the pods were barely selected: %d selections", checked)
			}
			t.Logf("%d SidecarSets: required %s (%d bytes), best-effort %s (%d bytes), %d left out, %d selections checked",
				len(sets), sc.Required.Level, len(sc.Required.Expression), sc.BestEffort.Level, len(sc.BestEffort.Expression), len(degraded), checked)
		})
	}
}

// TestExempting_OnlyTheOperatorsNamespace: the operator's own pods are left
// out in its namespace, whatever the condition (even "true", a degraded
// combined scope); a pod carrying the same label elsewhere is sent as any
// other (issue 22: the label exempted a pod in any namespace).
func TestExempting_OnlyTheOperatorsNamespace(t *testing.T) {
	t.Parallel()
	operator := map[string]string{appsv1beta1.OperatorPodLabel: appsv1beta1.OperatorPodName}
	for _, c := range []Condition{
		{Expression: "true"},
		Build([]*appsv1beta1.SidecarSet{set("everything", exprs(req("x", metav1.LabelSelectorOpDoesNotExist)))}).Required,
	} {
		e := newEvaluator(t, c.Exempting("kruise-system").Expression)
		for _, tc := range []struct {
			p    pod
			sent bool
		}{
			{pod{namespace: "kruise-system", labels: operator}, false},
			{pod{namespace: "team-a", labels: operator}, true},
			{pod{namespace: "kruise-system", labels: map[string]string{"app": "other"}}, true},
			{pod{namespace: "kruise-system"}, true},
		} {
			if got := e.eval(t, tc.p); got != tc.sent {
				t.Errorf("%q: pod %+v sent %v, want %v", c.Expression, tc.p, got, tc.sent)
			}
		}
	}
	if got := (Condition{Expression: "false"}).Exempting("kruise-system").Expression; got != "false" {
		t.Fatalf("a condition sending no pod became %q", got)
	}
}

// TestBuild_LeavesOutTheSameSidecarSetsWhateverTheirOrder: the SidecarSets
// left out do not depend on the order they are listed in (the cache lists
// them in map order). Among terms of the same length the order decided:
// each sync of 320 such SidecarSets left out a different 89, and the
// controller rewrote the conditions of the ones that changed, some 2 600
// events in the webhook suite's degraded-scope spec.
func TestBuild_LeavesOutTheSameSidecarSetsWhateverTheirOrder(t *testing.T) {
	t.Parallel()
	var sets []*appsv1beta1.SidecarSet
	for i := range 320 {
		s := set(fmt.Sprintf("degrade-%03d", i), negative(i))
		s.Spec.NamespaceSelector = labels(s.Name, "on")
		sets = append(sets, s)
	}
	want := Build(sets).Required
	if want.Level != Degraded || len(want.Degraded) == 0 {
		t.Fatalf("level %s with %d left out: the test builds no degraded scope", want.Level, len(want.Degraded))
	}
	for range 3 {
		shuffled := slices.Clone(sets)
		rand.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		if got := Build(shuffled).Required.Degraded; !slices.Equal(got, want.Degraded) {
			t.Fatalf("listed in another order, left out %v, want %v", got, want.Degraded)
		}
	}
}

// TestCondition_ObjectSelector: the OLM bundle's objectSelector exempts the
// operator's label in every namespace; it is dropped only from a webhook
// whose condition exempts the operator's pods in its namespace itself (or
// sends no pod), and nothing else of the selector is touched.
func TestCondition_ObjectSelector(t *testing.T) {
	t.Parallel()
	olm := req(appsv1beta1.OperatorPodLabel, metav1.LabelSelectorOpNotIn, appsv1beta1.OperatorPodName)
	other := req("tier", metav1.LabelSelectorOpNotIn, "system")
	exempting := Condition{Expression: "true"}.Exempting("kruise-system")
	tests := []struct {
		name string
		c    Condition
		sel  *metav1.LabelSelector
		want *metav1.LabelSelector
	}{
		{"an exempting condition drops OLM's label-only exemption", exempting, exprs(olm), &metav1.LabelSelector{}},
		{"someone else's requirements are kept", exempting,
			&metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}, MatchExpressions: []metav1.LabelSelectorRequirement{other, olm}},
			&metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}, MatchExpressions: []metav1.LabelSelectorRequirement{other}}},
		{"a condition sending no pod drops it too", Condition{Expression: "false"}.Exempting("kruise-system"), exprs(olm), &metav1.LabelSelector{}},
		{"a condition that does not exempt the operator keeps it", Condition{Expression: "true"}, exprs(olm), exprs(olm)},
		{"without the operator's namespace nothing is exempted, and it is kept", Condition{Expression: "true"}.Exempting(""), exprs(olm), exprs(olm)},
		{"another requirement on the label is not the exemption", exempting,
			exprs(req(appsv1beta1.OperatorPodLabel, metav1.LabelSelectorOpNotIn, appsv1beta1.OperatorPodName, "other")),
			exprs(req(appsv1beta1.OperatorPodLabel, metav1.LabelSelectorOpNotIn, appsv1beta1.OperatorPodName, "other"))},
		{"no selector stays none", exempting, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			before := tc.sel.DeepCopy()
			if diff := cmp.Diff(tc.want, tc.c.ObjectSelector(tc.sel)); diff != "" {
				t.Errorf("ObjectSelector (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.sel); diff != "" {
				t.Errorf("the selector given was changed (-before +after):\n%s", diff)
			}
		})
	}
}
