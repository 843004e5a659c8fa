// Package scope narrows the pod webhooks to the pods some SidecarSet
// selects, with matchConditions the API server evaluates itself: a pod that
// no SidecarSet selects never leaves the API server, costs no webhook round
// trip, and cannot be blocked by an unavailable operator.
//
// Each SidecarSet becomes an exact CEL term: its label selector (matchLabels,
// In, NotIn, Exists, DoesNotExist) over object.metadata.labels, and its
// namespace (spec.namespace, or the requirements of a namespaceSelector on
// the namespace's name label) over request.namespace. A namespaceSelector on
// other namespace labels cannot be evaluated in a matchCondition (it sees
// the request, not the Namespace object): that part alone is left out, so
// only those SidecarSets' terms are wider than their selection. Paused
// SidecarSets and selectors that select nothing (nil, empty, invalid)
// contribute no term.
//
// There are two conditions, one per webhook: the required SidecarSets' (the
// default, failurePolicy Fail) and the best-effort ones' (the
// sidecarset-operator.dev/failure-policy: Ignore annotation, failurePolicy
// Ignore). A pod some required SidecarSet selects goes to the required
// webhook only, which injects every SidecarSet that selects it.
//
// The expression stays under MaxExpressionLength. When the exact form is
// longer, terms are compacted in steps that only ever widen a term within
// its SidecarSet's own reach: first each selector is reduced to one label
// requirement that every pod it selects meets, then the values of a key to
// their common prefixes, then to label keys, and last, for a SidecarSet
// confined to namespaces named one by one, to those namespaces alone. The
// cluster-wide terms are compacted as far as they alone need, never to
// "every pod"; the confined terms then as far as the whole needs. So a
// SidecarSet confined to some namespaces, however its selector is written,
// never widens another SidecarSet's term: it cannot put pods of other
// namespaces behind the fail-closed webhook.
//
// When even that does not fit, the condition degrades, never to pods that
// no webhook sees: as few terms as needed are left out, the confined ones
// first and the longest first, and the best-effort webhook's condition
// becomes "true" (every pod is sent to it, and it injects every SidecarSet
// that selects the pod). The SidecarSets left out are injected as before,
// but a pod of theirs is admitted without them while the operator is
// unreachable. Condition.Degraded names them. The summary says what was
// needed, so the widening is reported, never silent.
//
// The package is pure: SidecarSets in, expressions out.
package scope

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/sidecarset-operator/sidecarset-operator/api/match"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// ConditionName is the name of the matchCondition this package writes.
const ConditionName = "sidecarset-selectors"

// MaxExpressionLength bounds each condition, below the API server's limit
// on a CEL expression (100 000 code points; the conditions are ASCII). The
// exact form of 5 000 SidecarSets of the benchmark's mix takes about 68 000.
const MaxExpressionLength = 96 << 10

// Level says how far a condition had to be compacted to fit.
type Level string

const (
	// Exact means every term is its SidecarSet's selection (bar label-based
	// namespaceSelectors).
	Exact Level = "Exact"
	// NecessaryLabel means each selector is reduced to one label requirement.
	NecessaryLabel Level = "NecessaryLabel"
	// ValuePrefixes means, further, that the values of a label key that
	// share a prefix ending in '-', '.' or '_' are tested by that prefix
	// (app=shop-0001 ... shop-4999 become app starting with "shop-").
	ValuePrefixes Level = "ValuePrefixes"
	// LabelKeys means each selector is reduced to one label key.
	LabelKeys Level = "LabelKeys"
	// Namespaces means, further, that the selectors of the SidecarSets
	// confined to namespaces named one by one are dropped: only their
	// namespaces are tested.
	Namespaces Level = "Namespaces"
	// Degraded means the condition could not fit: Condition.Degraded names
	// the SidecarSets left out (the best-effort webhook receives every pod).
	Degraded Level = "Degraded"
)

// levels are the compaction steps, in order.
var levels = []Level{Exact, NecessaryLabel, ValuePrefixes, LabelKeys, Namespaces}

// Condition is one webhook's matchCondition expression and how it was made.
type Condition struct {
	// Expression is the CEL expression; "false" when no SidecarSet of the
	// class selects any pod.
	Expression string
	// Level is the compaction the expression needed.
	Level Level
	// SidecarSets is the number of SidecarSets the expression covers.
	SidecarSets int
	// Wider names, sorted, the SidecarSets whose term is wider than their
	// selection at Level Exact: they select namespaces by labels other
	// than the name.
	Wider []string
	// Degraded names, sorted, the SidecarSets left out of the condition
	// because it could not fit (Level Degraded).
	Degraded []string
	// ExemptNamespace is the operator's namespace when the expression
	// leaves the operator's own pods there out (Exempting); else empty.
	ExemptNamespace string
}

// Scope is the pair of conditions for the two pod webhooks.
type Scope struct {
	// Required is the condition of the failurePolicy Fail webhook.
	Required Condition
	// BestEffort is the condition of the failurePolicy Ignore webhook.
	BestEffort Condition
}

// Build computes both conditions for a set of SidecarSets.
func Build(sets []*appsv1beta1.SidecarSet) Scope {
	return build(sets, true)
}

// BuildCombined computes one condition for every SidecarSet, for an install
// whose configuration has no best-effort webhook (one written before it
// existed): the Fail webhook then receives the pods of both kinds.
//
// Degraded, the combined condition is "true": with no best-effort webhook,
// only the fail-closed one can receive the SidecarSets left out.
func BuildCombined(sets []*appsv1beta1.SidecarSet) Condition {
	c := build(sets, false).Required
	if c.Level == Degraded {
		c.Expression = "true"
	}
	return c
}

// Fallback is the scope written when the API server refuses the one Build
// computed (a limit it enforces that MaxExpressionLength does not foresee):
// the required webhook keeps the condition it has, required, and every pod
// goes to the best-effort webhook, which injects every SidecarSet that
// selects it; every SidecarSet is reported degraded, since which of them
// the kept condition leaves out is not known.
func Fallback(sets []*appsv1beta1.SidecarSet, required string) Scope {
	sc := Scope{
		Required:   Condition{Expression: required, Level: Degraded},
		BestEffort: Condition{Expression: "true", Level: Degraded},
	}
	for _, s := range sets {
		if _, ok := newTerm(s); ok {
			sc.BestEffort.Degraded = append(sc.BestEffort.Degraded, s.Name)
		}
	}
	slices.Sort(sc.BestEffort.Degraded)
	sc.Required.SidecarSets, sc.BestEffort.SidecarSets = len(sc.BestEffort.Degraded), len(sc.BestEffort.Degraded)
	return sc
}

// DegradedSidecarSets names, sorted and once each, the SidecarSets a scope
// left out of its conditions.
func (sc Scope) DegradedSidecarSets() []string {
	out := slices.Concat(sc.Required.Degraded, sc.BestEffort.Degraded)
	slices.Sort(out)
	return slices.Compact(out)
}

func build(sets []*appsv1beta1.SidecarSet, split bool) Scope {
	var required, bestEffort []term
	for _, s := range sets {
		t, ok := newTerm(s)
		if !ok {
			continue
		}
		if split && appsv1beta1.IsBestEffort(s) {
			bestEffort = append(bestEffort, t)
		} else {
			required = append(required, t)
		}
	}
	sc := Scope{Required: condition(required), BestEffort: condition(bestEffort)}
	if sc.Required.Level == Degraded || sc.BestEffort.Level == Degraded {
		// Every pod goes to the best-effort webhook, which injects every
		// SidecarSet that selects the pod: none is missed.
		sc.BestEffort.Expression, sc.BestEffort.Level = "true", Degraded
		return sc
	}
	// A pod that a required SidecarSet selects goes to the required webhook
	// only: it injects the best-effort SidecarSets too, in one call. Only
	// the exact required terms are excluded (a wider one may not select the
	// pod, which then needs the best-effort webhook), and the exclusion is
	// an optimisation: left out when too long.
	exact := slices.DeleteFunc(slices.Clone(required), func(t term) bool { return t.wider })
	excluded := condition(exact)
	if sc.BestEffort.Expression != "false" && excluded.Expression != "false" && excluded.Level == Exact {
		both := "(" + sc.BestEffort.Expression + ") && !(" + excluded.Expression + ")"
		if len(both) <= MaxExpressionLength {
			sc.BestEffort.Expression = both
		}
	}
	return sc
}

// Exempting returns the scope with the operator's own pods of its
// namespace left out of both conditions (appsv1beta1.OperatorPodLabel):
// they are never sent to the webhooks they serve, so that the operator can
// always start, whatever a SidecarSet selects or the scope degrades to.
// Pods of other namespaces carrying the label are sent as any other.
func (sc Scope) Exempting(namespace string) Scope {
	sc.Required, sc.BestEffort = sc.Required.Exempting(namespace), sc.BestEffort.Exempting(namespace)
	return sc
}

// Installed is the scope the operator installs for the SidecarSets: Build's
// when the best-effort webhook is installed, else BuildCombined's on the
// required webhook alone; with the operator's own pods of its namespace
// exempted. (When the API server refuses it, the operator installs
// Fallback's instead.)
func Installed(sets []*appsv1beta1.SidecarSet, operatorNamespace string, bestEffortInstalled bool) Scope {
	if !bestEffortInstalled {
		return Scope{Required: BuildCombined(sets).Exempting(operatorNamespace)}
	}
	return Build(sets).Exempting(operatorNamespace)
}

// Exempting returns the condition with the operator's own pods of its
// namespace left out (Scope.Exempting).
func (c Condition) Exempting(namespace string) Condition {
	if c.Expression == "false" || namespace == "" {
		return c
	}
	operator := test(requirement{key: appsv1beta1.OperatorPodLabel, op: metav1.LabelSelectorOpIn, values: []string{appsv1beta1.OperatorPodName}})
	exempt := fmt.Sprintf("!(request.namespace == '%s' && has(object.metadata.labels) && %s)", namespace, operator)
	if c.Expression == "true" {
		c.Expression = exempt
	} else {
		c.Expression = exempt + " && (" + c.Expression + ")"
	}
	c.ExemptNamespace = namespace
	return c
}

// ObjectSelector returns the objectSelector a webhook with this condition
// needs, given the one it has. The OLM bundle's webhook definitions, which
// cannot carry a condition, keep the operator's pods out with an
// objectSelector on their label alone (OperatorPodLabel NotIn
// [OperatorPodName]), which exempts a pod carrying that label in every
// namespace. Once the condition itself keeps the operator's pods out (in
// its namespace only, Exempting) or sends no pod at all, that requirement
// is dropped and the rest of sel kept; otherwise sel is returned as it is.
// It never adds the requirement back: OLM does, when it rewrites its
// configuration, until the condition is written again.
func (c Condition) ObjectSelector(sel *metav1.LabelSelector) *metav1.LabelSelector {
	if sel == nil || (c.ExemptNamespace == "" && c.Expression != "false") {
		return sel
	}
	isExemption := func(r metav1.LabelSelectorRequirement) bool {
		return r.Key == appsv1beta1.OperatorPodLabel && r.Operator == metav1.LabelSelectorOpNotIn &&
			slices.Equal(r.Values, []string{appsv1beta1.OperatorPodName})
	}
	if !slices.ContainsFunc(sel.MatchExpressions, isExemption) {
		return sel
	}
	out := sel.DeepCopy()
	out.MatchExpressions = slices.DeleteFunc(out.MatchExpressions, isExemption)
	if len(out.MatchExpressions) == 0 {
		out.MatchExpressions = nil
	}
	return out
}

// MatchConditions returns a condition as the webhook's matchConditions.
func (c Condition) MatchConditions() []admissionregistrationv1.MatchCondition {
	return []admissionregistrationv1.MatchCondition{{Name: ConditionName, Expression: c.Expression}}
}

// Merge returns a webhook's matchConditions with ours replaced by the given
// ones: the conditions someone else put there are kept, in their order,
// ahead of ours.
func Merge(existing, ours []admissionregistrationv1.MatchCondition) []admissionregistrationv1.MatchCondition {
	out := make([]admissionregistrationv1.MatchCondition, 0, len(existing)+len(ours))
	for _, c := range existing {
		if c.Name != ConditionName {
			out = append(out, c)
		}
	}
	return append(out, ours...)
}

// requirement is one label requirement of a selector, normalised: a
// matchLabels pair is an In with one value.
type requirement struct {
	key    string
	op     metav1.LabelSelectorOperator
	values []string
}

// term is one SidecarSet's selection.
type term struct {
	name string
	// namespace is the CEL test of request.namespace; "" tests nothing.
	namespace string
	// wider is set when the namespace test is wider than the selection.
	wider bool
	// confined is set when the namespace test names the namespaces one by
	// one (in, ==): the term can be reduced to it.
	confined bool
	// labels are the selector's requirements, sorted.
	labels []requirement
}

// newTerm returns a SidecarSet's term, or false when it selects no pod
// (paused, or a nil, empty or invalid selector or namespaceSelector), as
// the injector decides (match.Pod, match.Namespace).
func newTerm(s *appsv1beta1.SidecarSet) (term, bool) {
	if s.Spec.InjectionStrategy.Paused || match.IsEmpty(s.Spec.Selector) {
		return term{}, false
	}
	if _, err := metav1.LabelSelectorAsSelector(s.Spec.Selector); err != nil {
		return term{}, false
	}
	t := term{name: s.Name}
	sel := s.Spec.Selector
	for _, k := range slices.Sorted(maps.Keys(sel.MatchLabels)) {
		t.labels = append(t.labels, requirement{key: k, op: metav1.LabelSelectorOpIn, values: []string{sel.MatchLabels[k]}})
	}
	for _, r := range sel.MatchExpressions {
		values := slices.Clone(r.Values)
		slices.Sort(values)
		t.labels = append(t.labels, requirement{key: r.Key, op: r.Operator, values: slices.Compact(values)})
	}
	slices.SortStableFunc(t.labels, func(a, b requirement) int { return strings.Compare(a.key, b.key) })
	for _, r := range t.labels {
		if !literalSafe(r.key, true) || slices.ContainsFunc(r.values, func(v string) bool { return !literalSafe(v, false) }) {
			return term{}, false // not a valid selector: LabelSelectorAsSelector refuses it
		}
	}
	ns, wider, ok := namespaceTest(s)
	if !ok {
		return term{}, false
	}
	t.namespace, t.wider = ns, wider
	t.confined = confinedTest(s)
	return t, true
}

// namespaceTest turns a SidecarSet's namespace selection into a test of
// request.namespace. It is exact for namespaceSelector requirements on the kubernetes.io/metadata.name label (every namespace
// carries its name there); requirements on other labels are left out, which
// makes the test wider (wider is true). ok is false when no namespace can be
// selected.
func namespaceTest(s *appsv1beta1.SidecarSet) (test string, wider, ok bool) {
	sel := s.Spec.NamespaceSelector
	if sel == nil {
		return "", false, true
	}
	if _, err := metav1.LabelSelectorAsSelector(sel); err != nil {
		return "", false, false // the injector counts it as not selected
	}
	var tests []string
	for _, k := range slices.Sorted(maps.Keys(sel.MatchLabels)) {
		if k != match.NamespaceNameLabel {
			wider = true
			continue
		}
		tests = append(tests, fmt.Sprintf("request.namespace == '%s'", sel.MatchLabels[k]))
	}
	for _, r := range sel.MatchExpressions {
		if r.Key != match.NamespaceNameLabel {
			wider = true
			continue
		}
		switch r.Operator {
		case metav1.LabelSelectorOpIn:
			tests = append(tests, "request.namespace in "+list(r.Values))
		case metav1.LabelSelectorOpNotIn:
			tests = append(tests, "!(request.namespace in "+list(r.Values)+")")
		case metav1.LabelSelectorOpDoesNotExist:
			return "", false, false
		}
	}
	return strings.Join(tests, " && "), wider, true
}

// condition renders the terms of one class, compacting them until the
// expression fits: the cluster-wide terms as far as they alone need (down
// to their label keys), then the confined ones as far as the whole needs
// (down to their namespaces); then, degrading, without as few terms as
// needed, the confined ones first.
func condition(terms []term) Condition {
	c := Condition{Expression: "false", Level: Exact, SidecarSets: len(terms)}
	for _, t := range terms {
		if t.wider {
			c.Wider = append(c.Wider, t.name)
		}
	}
	slices.Sort(c.Wider)
	if len(terms) == 0 {
		return c
	}
	at := make([]Level, len(terms))
	for i := range at {
		at[i] = Exact
	}
	fits := func(terms []term, at []Level) bool { return len(render(terms, at)) <= MaxExpressionLength }
	if fits(terms, at) {
		c.Expression = render(terms, at)
		return c
	}
	step := func(confined bool, level Level) {
		for i, t := range terms {
			if t.confined == confined {
				at[i] = level
			}
		}
		if slices.Index(levels, level) > slices.Index(levels, c.Level) {
			c.Level = level
		}
	}
	// The cluster-wide terms are compacted as far as they alone need, never
	// further for the confined ones, and never to "every pod".
	var open []term
	var openAt []Level
	for _, t := range terms {
		if !t.confined {
			open, openAt = append(open, t), append(openAt, Exact)
		}
	}
	for _, level := range []Level{NecessaryLabel, ValuePrefixes, LabelKeys} {
		if len(open) == 0 || fits(open, openAt) {
			break
		}
		step(false, level)
		for i := range openAt {
			openAt[i] = level
		}
	}
	// The confined terms, as far as the whole needs, down to their
	// namespaces alone.
	if slices.ContainsFunc(terms, func(t term) bool { return t.confined }) {
		for _, level := range levels[1:] {
			if fits(terms, at) {
				break
			}
			step(true, level)
		}
	}
	if fits(terms, at) {
		c.Expression = render(terms, at)
		return c
	}
	// Degrade: leave out as few terms as needed, the confined ones first,
	// the longest first (a long selector is what broke the limit).
	order := make([]int, len(terms))
	size := make([]int, len(terms))
	for i := range terms {
		order[i] = i
		size[i] = len(render(terms[i:i+1], at[i:i+1]))
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if terms[a].confined != terms[b].confined {
			if terms[a].confined {
				return -1
			}
			return 1
		}
		// Then by name: the cache lists the SidecarSets in no stable
		// order, and among equal lengths the list's order chose a
		// different set to leave out at each sync.
		return cmp.Or(cmp.Compare(size[b], size[a]), cmp.Compare(terms[a].name, terms[b].name))
	})
	without := func(n int) string {
		out := make(map[int]bool, n)
		for _, i := range order[:n] {
			out[i] = true
		}
		var kept []term
		var keptAt []Level
		for i, t := range terms {
			if !out[i] {
				kept, keptAt = append(kept, t), append(keptAt, at[i])
			}
		}
		return render(kept, keptAt)
	}
	// The fewest terms to leave out, by bisection: leaving out more never
	// lengthens the expression.
	lo, hi := 0, len(order) // without(hi) fits: it is "false" at worst
	for lo < hi {
		if mid := (lo + hi) / 2; len(without(mid)) <= MaxExpressionLength {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	n := lo
	c.Level, c.Expression = Degraded, without(n)
	for _, i := range order[:n] {
		c.Degraded = append(c.Degraded, terms[i].name)
	}
	slices.Sort(c.Degraded)
	return c
}

// render writes the terms at a compaction level:
//
//	has(object.metadata.labels) ?
//	  (<namespace test> && (<labels test> || ...)) || ... :
//	  <namespace tests of the terms that select a pod without labels>
//
// Terms are grouped by namespace test; within a group, terms that are a
// single In requirement on the same key are merged into one list. Keys and
// values are sorted, so the same SidecarSets always give the same text.
func render(terms []term, at []Level) string {
	if len(terms) == 0 {
		return "false"
	}
	groups := map[string]*group{}
	for i, t := range terms {
		level := at[i]
		reqs := compact(t.labels, level)
		g := groups[t.namespace]
		if g == nil {
			g = &group{in: map[string]map[string]bool{}, prefixed: map[string]map[string]bool{}, other: map[string]bool{}}
			groups[t.namespace] = g
		}
		if matchesNoLabels(reqs) {
			g.unlabeled = true
		}
		if len(reqs) == 1 && reqs[0].op == metav1.LabelSelectorOpIn {
			into := g.in
			if level == ValuePrefixes {
				into = g.prefixed
			}
			vs := into[reqs[0].key]
			if vs == nil {
				vs = map[string]bool{}
				into[reqs[0].key] = vs
			}
			for _, v := range reqs[0].values {
				vs[v] = true
			}
			continue
		}
		g.other[conjunction(reqs)] = true
	}
	var labeled, unlabeled []string
	for _, ns := range slices.Sorted(maps.Keys(groups)) {
		g := groups[ns]
		var alts []string
		for _, k := range slices.Sorted(maps.Keys(g.in)) {
			values := slices.Sorted(maps.Keys(g.in[k]))
			alts = append(alts, test(requirement{key: k, op: metav1.LabelSelectorOpIn, values: values}))
		}
		for _, k := range slices.Sorted(maps.Keys(g.prefixed)) {
			alts = append(alts, prefixTest(k, slices.Sorted(maps.Keys(g.prefixed[k]))))
		}
		alts = append(alts, slices.Sorted(maps.Keys(g.other))...)
		labeled = append(labeled, and(ns, or(alts)))
		if g.unlabeled {
			unlabeled = append(unlabeled, and(ns, "true"))
		}
	}
	l, u := or(labeled), or(unlabeled)
	if l == u {
		return l
	}
	return "has(object.metadata.labels) ? (" + l + ") : (" + u + ")"
}

type group struct {
	in        map[string]map[string]bool // key -> values of single-In terms
	prefixed  map[string]map[string]bool // the same, of terms at ValuePrefixes
	other     map[string]bool            // rendered label tests of the other terms
	unlabeled bool                       // some term selects a pod without labels
}

// compact reduces a term's requirements for a level. The reduced
// requirements select every pod the originals select. A term of negative
// requirements only is kept exact below Namespaces: reducing it would make
// it "every pod" (of its namespaces, for a confined term, which only
// Namespaces allows).
func compact(reqs []requirement, level Level) []requirement {
	switch level {
	case NecessaryLabel, ValuePrefixes, LabelKeys:
		for _, r := range reqs {
			if r.op != metav1.LabelSelectorOpIn && r.op != metav1.LabelSelectorOpExists {
				continue
			}
			if level == LabelKeys {
				r = requirement{key: r.key, op: metav1.LabelSelectorOpExists}
			}
			return []requirement{r}
		}
		return reqs
	case Namespaces:
		return nil
	}
	return reqs
}

// confinedTest reports whether a SidecarSet's namespace test names its
// namespaces one by one (a namespaceSelector on kubernetes.io/metadata.name
// with matchLabels or In): its term can be reduced to that test. These are
// the SidecarSets the registry files under their namespaces rather than
// cluster scope (match.IndexValues).
func confinedTest(s *appsv1beta1.SidecarSet) bool {
	return !slices.Equal(match.IndexValues(s), []string{match.ClusterScope})
}

// matchesNoLabels reports whether requirements select a pod with no labels.
func matchesNoLabels(reqs []requirement) bool {
	for _, r := range reqs {
		if r.op == metav1.LabelSelectorOpIn || r.op == metav1.LabelSelectorOpExists {
			return false
		}
	}
	return true
}

// labelsVar is the pod's labels; tests use it only once has() holds.
const labelsVar = "object.metadata.labels"

// test renders one requirement over present labels.
// hasLabel and labelValue are the CEL for a pod's label key: present, and
// its value.
func hasLabel(key string) string   { return fmt.Sprintf("'%s' in %s", key, labelsVar) }
func labelValue(key string) string { return fmt.Sprintf("%s['%s']", labelsVar, key) }

func test(r requirement) string {
	has, value := hasLabel(r.key), labelValue(r.key)
	switch r.op {
	case metav1.LabelSelectorOpIn:
		if len(r.values) == 1 {
			return fmt.Sprintf("(%s && %s == '%s')", has, value, r.values[0])
		}
		return fmt.Sprintf("(%s && %s in %s)", has, value, list(r.values))
	case metav1.LabelSelectorOpNotIn:
		return fmt.Sprintf("(!(%s) || !(%s in %s))", has, value, list(r.values))
	case metav1.LabelSelectorOpExists:
		return has
	default: // DoesNotExist
		return "!(" + has + ")"
	}
}

// prefixTest tests a label key for values, the values that share a prefix
// ending in a separator ('-', '.', '_') by that prefix, the others exactly.
func prefixTest(key string, values []string) string {
	byPrefix := map[string][]string{}
	for _, v := range values {
		prefix := v
		if i := strings.LastIndexAny(v, "-._"); i >= 0 {
			prefix = v[:i+1]
		}
		byPrefix[prefix] = append(byPrefix[prefix], v)
	}
	var exact []string
	var alts []string
	value := labelValue(key)
	for _, prefix := range slices.Sorted(maps.Keys(byPrefix)) {
		if vs := byPrefix[prefix]; len(vs) > 1 {
			alts = append(alts, fmt.Sprintf("%s.startsWith('%s')", value, prefix))
		} else {
			exact = append(exact, vs[0])
		}
	}
	if len(exact) > 0 {
		alts = append([]string{fmt.Sprintf("%s in %s", value, list(exact))}, alts...)
	}
	return fmt.Sprintf("(%s && %s)", hasLabel(key), or(alts))
}

func conjunction(reqs []requirement) string {
	if len(reqs) == 0 {
		return "true"
	}
	parts := make([]string, len(reqs))
	for i, r := range reqs {
		parts[i] = test(r)
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return "(" + strings.Join(parts, " && ") + ")"
}

func and(nsTest, labelsTest string) string {
	switch {
	case nsTest == "":
		return labelsTest
	case labelsTest == "true":
		return "(" + nsTest + ")"
	}
	return "(" + nsTest + " && " + labelsTest + ")"
}

func or(alts []string) string {
	switch {
	case len(alts) == 0:
		return "false"
	case slices.Contains(alts, "true"):
		return "true"
	case len(alts) == 1:
		return alts[0]
	}
	return "(" + strings.Join(alts, " || ") + ")"
}

func list(values []string) string {
	quoted := make([]string, len(values))
	for i, v := range values {
		quoted[i] = "'" + v + "'"
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

// literalSafe reports whether a label key or value is valid, which also
// makes it safe inside a single-quoted CEL string: the characters of label
// keys and values include no quote or backslash.
func literalSafe(s string, isKey bool) bool {
	if isKey {
		return len(validation.IsQualifiedName(s)) == 0
	}
	return len(validation.IsValidLabelValue(s)) == 0
}
