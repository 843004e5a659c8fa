// Package scope narrows the pod webhook to the pods some SidecarSet could
// select, with a matchCondition the API server evaluates itself: a pod
// creation that no SidecarSet could touch never leaves the API server, costs
// no webhook round trip, and cannot be blocked by an unavailable operator.
//
// The condition is an over-approximation, never an under-approximation: a
// pod it excludes is one that no SidecarSet's selector can match. Each
// SidecarSet contributes one label requirement that every pod it selects
// must meet (a matchLabels pair, an In or an Exists expression); the
// condition is true when a pod meets any SidecarSet's requirement. A
// SidecarSet whose selector requires no label to be present (only NotIn or
// DoesNotExist) could select a pod with no labels at all: then there is no
// condition and every pod is sent, as without this package.
//
// The package is pure: SidecarSets in, matchConditions out.
package scope

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/sidecarset-operator/sidecarset-operator/api/match"
	appsv1alpha1 "github.com/sidecarset-operator/sidecarset-operator/api/v1alpha1"
)

// ConditionName is the name of the matchCondition this package writes.
const ConditionName = "sidecarset-selectors"

// MaxExpressionLength bounds the condition. Above it the condition keeps the
// label keys and drops their values (a wider but shorter test); if even that
// is too long, there is no condition. The bound keeps the API server's
// compilation of the webhook configuration cheap; it is far below anything
// the API server rejects.
const MaxExpressionLength = 64 << 10

// Summary describes a scope, for logs and metrics.
type Summary struct {
	// Scoped is false when every pod is sent to the webhook.
	Scoped bool
	// Reason says why the webhook is not scoped, naming the SidecarSet.
	Reason string
	// Keys is the number of label keys the condition tests.
	Keys int
	// ValuesDropped is true when the condition tests the keys only.
	ValuesDropped bool
}

// requirement is what one key must satisfy: any value, or one of values.
type requirement struct {
	any    bool
	values map[string]bool
}

// Conditions returns the pod webhook's matchConditions for a set of
// SidecarSets: one condition that a pod meets when some SidecarSet's
// selector could match it, or none (every pod is sent).
func Conditions(sets []*appsv1alpha1.SidecarSet) ([]admissionregistrationv1.MatchCondition, Summary) {
	keys := map[string]*requirement{}
	for _, s := range sets {
		key, values, ok := necessary(s.Spec.Selector)
		if !ok {
			return nil, Summary{Reason: fmt.Sprintf("SidecarSet %q has a selector that requires no label", s.Name)}
		}
		if key == "" {
			continue // selects no pod
		}
		r := keys[key]
		if r == nil {
			r = &requirement{values: map[string]bool{}}
			keys[key] = r
		}
		if values == nil {
			r.any = true
			continue
		}
		for _, v := range values {
			r.values[v] = true
		}
	}
	expr := expression(keys, true)
	summary := Summary{Scoped: true, Keys: len(keys)}
	if len(expr) > MaxExpressionLength {
		expr = expression(keys, false)
		summary.ValuesDropped = true
	}
	if len(expr) > MaxExpressionLength {
		return nil, Summary{Reason: fmt.Sprintf("the SidecarSets' selectors use too many label keys (%d)", len(keys))}
	}
	return []admissionregistrationv1.MatchCondition{{Name: ConditionName, Expression: expr}}, summary
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

// necessary returns one label requirement that every pod the selector
// matches meets: a key and its allowed values (nil: any value). An empty key
// with ok means the selector matches no pod; !ok means the selector has no
// such requirement (or cannot be read), so any pod may match.
func necessary(sel *metav1.LabelSelector) (key string, values []string, ok bool) {
	if match.IsEmpty(sel) {
		return "", nil, true // nil and empty selectors select nothing (match.Pod)
	}
	if _, err := metav1.LabelSelectorAsSelector(sel); err != nil {
		return "", nil, false // the injector denies such pods: send them all
	}
	for _, k := range slices.Sorted(maps.Keys(sel.MatchLabels)) {
		v := sel.MatchLabels[k]
		if literalSafe(k, true) && literalSafe(v, false) {
			return k, []string{v}, true
		}
	}
	for _, r := range sel.MatchExpressions {
		if !literalSafe(r.Key, true) {
			continue
		}
		switch r.Operator {
		case metav1.LabelSelectorOpExists:
			return r.Key, nil, true
		case metav1.LabelSelectorOpIn:
			if !slices.ContainsFunc(r.Values, func(v string) bool { return !literalSafe(v, false) }) {
				return r.Key, r.Values, true
			}
		}
	}
	return "", nil, false
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

// expression writes the CEL test, keys and values sorted so that the same
// SidecarSets always give the same text:
//
//	has(object.metadata.labels) && (
//	  ('app' in object.metadata.labels && object.metadata.labels['app'] in ['a', 'b']) ||
//	  'tier' in object.metadata.labels)
func expression(keys map[string]*requirement, withValues bool) string {
	if len(keys) == 0 {
		return "false"
	}
	var terms []string
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		r := keys[k]
		present := fmt.Sprintf("'%s' in object.metadata.labels", k)
		if r.any || !withValues {
			terms = append(terms, present)
			continue
		}
		values := slices.Sorted(maps.Keys(r.values))
		var b strings.Builder
		for i, v := range values {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("'" + v + "'")
		}
		terms = append(terms, fmt.Sprintf("(%s && object.metadata.labels['%s'] in [%s])", present, k, b.String()))
	}
	return "has(object.metadata.labels) && (" + strings.Join(terms, " || ") + ")"
}
