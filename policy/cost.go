package policy

import (
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/overloads"

	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/library"
)

// sizeEstimator bounds the size of the values an expression reads, from the
// bounds declared in objectType, for the static cost estimate.
//
// A path rooted at object or oldObject is walked field by field. cel-go loses
// the root of a path when a value goes through a computation (a list
// concatenation, a cel.bind, an index into a computed list); such a path is
// resolved from its first field name instead, taking the largest bound among
// the declared fields of that name. As every object the rules see comes
// from objectType, this is still an upper bound.
type sizeEstimator struct {
	roots  map[string]*apiservercel.DeclType
	fields map[string][]*apiservercel.DeclType
	lib    *library.CostEstimator
}

var _ checker.CostEstimator = (*sizeEstimator)(nil)

func newSizeEstimator(root *apiservercel.DeclType, rootNames ...string) *sizeEstimator {
	e := &sizeEstimator{
		roots:  map[string]*apiservercel.DeclType{},
		fields: map[string][]*apiservercel.DeclType{},
	}
	for _, n := range rootNames {
		e.roots[n] = root
	}
	seen := map[*apiservercel.DeclType]bool{}
	var index func(t *apiservercel.DeclType)
	index = func(t *apiservercel.DeclType) {
		if t == nil || seen[t] {
			return
		}
		seen[t] = true
		for name, f := range t.Fields {
			e.fields[name] = append(e.fields[name], f.Type)
			index(f.Type)
		}
		index(t.ElemType)
	}
	index(root)
	e.lib = &library.CostEstimator{SizeEstimator: e}
	return e
}

// EstimateSize implements checker.CostEstimator.
func (e *sizeEstimator) EstimateSize(node checker.AstNode) *checker.SizeEstimate {
	path := node.Path()
	if len(path) == 0 {
		return nil
	}
	if root, ok := e.roots[path[0]]; ok {
		return sizeOf(walk(root, path[1:]))
	}
	for i, segment := range path {
		if segment == "" || segment[0] == '@' {
			continue
		}
		var largest *checker.SizeEstimate
		for _, candidate := range e.fields[segment] {
			size := sizeOf(walk(candidate, path[i+1:]))
			if size != nil && (largest == nil || size.Max > largest.Max) {
				largest = size
			}
		}
		return largest
	}
	return nil
}

// EstimateCallCost implements checker.CostEstimator: the Kubernetes library
// estimates, plus a bound on string(int), which cel-go leaves unbounded and
// which the rules use to build field paths.
func (e *sizeEstimator) EstimateCallCost(function, overloadID string, target *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
	if overloadID == overloads.IntToString {
		const maxIntDigits = 20 // len("-9223372036854775808")
		size := checker.SizeEstimate{Min: 1, Max: maxIntDigits}
		return &checker.CallEstimate{CostEstimate: checker.CostEstimate{Min: 1, Max: 1}, ResultSize: &size}
	}
	return e.lib.EstimateCallCost(function, overloadID, target, args)
}

// walk follows a cel-go estimator path (field names, @items, @values,
// @keys, @indices) from t; nil if the path leaves the declared types.
func walk(t *apiservercel.DeclType, path []string) *apiservercel.DeclType {
	for _, segment := range path {
		if t == nil {
			return nil
		}
		switch segment {
		case "@items", "@values":
			t = t.ElemType
		case "@keys":
			t = t.KeyType
		case "@indices":
			return apiservercel.IntType
		default:
			f, ok := t.Fields[segment]
			if !ok {
				return nil
			}
			t = f.Type
		}
	}
	return t
}

func sizeOf(t *apiservercel.DeclType) *checker.SizeEstimate {
	if t == nil {
		return nil
	}
	if t.IsList() || t.IsMap() || t.MaxElements > 0 {
		return &checker.SizeEstimate{Min: 0, Max: uint64(t.MaxElements)}
	}
	return nil
}
