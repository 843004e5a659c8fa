package match

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// Overlap reports whether some pod could be selected by both SidecarSets:
// their pod selectors and their namespace selections must both be jointly
// satisfiable. The analysis is exact for label selectors (unlike
// OpenKruise's heuristic, which misses Exists against an unmentioned key).
func Overlap(a, b *appsv1beta1.SidecarSet) bool {
	return SelectorsOverlap(NamespaceSelector(a), NamespaceSelector(b)) &&
		SelectorsOverlap(a.Spec.Selector, b.Spec.Selector)
}

// SelectorsOverlap reports whether some label set satisfies both selectors.
// A nil selector matches everything. The requirements of both selectors are
// combined per key; the keys are independent, so the conjunction is
// satisfiable exactly when every key's combined constraint is.
func SelectorsOverlap(a, b *metav1.LabelSelector) bool {
	keys := map[string]*keyConstraint{}
	for _, sel := range []*metav1.LabelSelector{a, b} {
		if sel == nil {
			continue
		}
		for k, v := range sel.MatchLabels {
			constraintFor(keys, k).require(v)
		}
		for _, r := range sel.MatchExpressions {
			c := constraintFor(keys, r.Key)
			switch r.Operator {
			case metav1.LabelSelectorOpIn:
				c.require(r.Values...)
			case metav1.LabelSelectorOpNotIn:
				c.excluded.Insert(r.Values...)
			case metav1.LabelSelectorOpExists:
				c.mustExist = true
			case metav1.LabelSelectorOpDoesNotExist:
				c.mustNotExist = true
			default:
				// An unknown operator cannot be reasoned about: assume overlap.
			}
		}
	}
	for _, c := range keys {
		if !c.satisfiable() {
			return false
		}
	}
	return true
}

// keyConstraint is the combined constraint on one label key.
type keyConstraint struct {
	mustExist    bool
	mustNotExist bool
	allowed      sets.Set[string] // nil: any value
	excluded     sets.Set[string]
}

func constraintFor(keys map[string]*keyConstraint, key string) *keyConstraint {
	c, ok := keys[key]
	if !ok {
		c = &keyConstraint{excluded: sets.New[string]()}
		keys[key] = c
	}
	return c
}

func (c *keyConstraint) require(values ...string) {
	c.mustExist = true
	if c.allowed == nil {
		c.allowed = sets.New(values...)
		return
	}
	c.allowed = c.allowed.Intersection(sets.New(values...))
}

func (c *keyConstraint) satisfiable() bool {
	if c.mustNotExist {
		return !c.mustExist
	}
	if c.allowed == nil {
		return true // any value outside the (finite) excluded set will do
	}
	return c.allowed.Difference(c.excluded).Len() > 0
}
