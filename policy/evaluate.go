package policy

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// Result is what Evaluate found.
type Result struct {
	// Errors are the failed validations, each with its field path. Origin
	// names the validation: <policy>/<validation>.
	Errors field.ErrorList
	// Warnings are the failed warnings, each "<field path>: <message>".
	Warnings []string
	// Cost is the actual CEL cost spent.
	Cost int64
}

// Validate evaluates every policy against a SidecarSet and, on update, its
// previous version (old is nil on create), and returns the field errors and
// the warnings. See Evaluate, which also reports the cost.
func (r *Rules) Validate(ctx context.Context, obj, old *appsv1beta1.SidecarSet) (field.ErrorList, []string, error) {
	res, err := r.Evaluate(ctx, obj, old)
	return res.Errors, res.Warnings, err
}

// Evaluate evaluates every policy against a SidecarSet and, on update, its
// previous version (old is nil on create). An error means the evaluation
// itself failed (a cost limit, wrapping ErrOutOfBudget; a cancelled
// context; a runtime error), and the Result then holds what was found
// before. The cost budget bounds the work in CEL units, not in time: pass a
// context with a deadline shorter than the webhook timeout.
func (r *Rules) Evaluate(ctx context.Context, obj, old *appsv1beta1.SidecarSet) (Result, error) {
	objVal, err := r.toValue(obj)
	if err != nil {
		return Result{}, fmt.Errorf("converting the SidecarSet: %w", err)
	}
	oldVal := ref.Val(types.NullValue)
	if old != nil {
		if oldVal, err = r.toValue(old); err != nil {
			return Result{}, fmt.Errorf("converting the old SidecarSet: %w", err)
		}
	}
	st := &evalState{ctx: ctx, budget: r.budget}
	var res Result
	for _, p := range r.policies {
		err = st.evaluatePolicy(p, objVal, oldVal, &res)
		if err != nil {
			break
		}
	}
	res.Cost = st.spent
	return res, err
}

func (r *Rules) toValue(obj *appsv1beta1.SidecarSet) (ref.Val, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	normalize(u, r.root)
	return toCEL(u), nil
}

// toCEL converts an unstructured value into CEL values once, so that
// evaluations do not adapt the same Go values again at each access.
func toCEL(v any) ref.Val {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[ref.Val]ref.Val, len(v))
		for k, item := range v {
			m[types.String(k)] = toCEL(item)
		}
		return types.NewRefValMap(types.DefaultTypeAdapter, m)
	case []any:
		l := make([]ref.Val, len(v))
		for i, item := range v {
			l[i] = toCEL(item)
		}
		return types.NewRefValList(types.DefaultTypeAdapter, l)
	case string:
		return types.String(v)
	case int64:
		return types.Int(v)
	case float64:
		return types.Double(v)
	case bool:
		return types.Bool(v)
	case nil:
		return types.NullValue
	default:
		return types.DefaultTypeAdapter.NativeToValue(v)
	}
}

// evalState is the state of one Evaluate call: the context and the shared
// cost budget.
type evalState struct {
	ctx    context.Context
	budget int64
	spent  int64
	err    error // the first budget or cancellation error; ends the evaluation
}

func (st *evalState) evaluatePolicy(p *compiledPolicy, object, oldObject ref.Val, res *Result) error {
	act := map[string]any{"object": object, "oldObject": oldObject}
	for _, v := range p.variables {
		var once sync.Once
		var value ref.Val
		act["variables."+v.name] = func() ref.Val {
			once.Do(func() {
				out, err := st.eval(v.expr, act)
				if err != nil {
					value = types.WrapErr(err)
					return
				}
				value = out
			})
			return value
		}
	}
	for _, m := range p.matchConditions {
		ok, err := st.evalBool(m, act)
		if err != nil || !ok {
			return err
		}
	}
	for _, v := range p.validations {
		f, err := st.check(v, act)
		if err != nil {
			return err
		}
		if f != nil {
			res.Errors = append(res.Errors, &field.Error{
				Type: v.errorType, Field: f.path.String(), BadValue: field.OmitValueType{}, Detail: f.message, Origin: v.name,
			})
		}
	}
	for _, v := range p.warnings {
		f, err := st.check(v, act)
		if err != nil {
			return err
		}
		if f != nil {
			res.Warnings = append(res.Warnings, f.path.String()+": "+f.message)
		}
	}
	return nil
}

// failure is what a failed validation reports.
type failure struct {
	message string
	path    *field.Path
}

// check evaluates a validation; when it fails (a non-nil failure), it also
// evaluates its message and field path, falling back to the static ones
// when the expressions give nothing usable.
func (st *evalState) check(v *compiledValidation, act map[string]any) (*failure, error) {
	ok, err := st.evalBool(v.expr, act)
	if err != nil || ok {
		return nil, err
	}
	msg, path := v.message, v.fieldPath
	if v.messageExpr != nil {
		out, err := st.evalOptional(v.messageExpr, act)
		if err != nil {
			return nil, err
		}
		if s, ok := out.(types.String); ok {
			if m := strings.TrimSpace(string(s)); m != "" && len(m) <= maxMessageLength && !strings.ContainsAny(m, "\r\n") {
				msg = m
			}
		}
	}
	if v.fieldPathExpr != nil {
		out, err := st.evalOptional(v.fieldPathExpr, act)
		if err != nil {
			return nil, err
		}
		if s, ok := out.(types.String); ok {
			if p, err := parseFieldPath(string(s)); err == nil {
				path = p
			}
		}
	}
	return &failure{message: msg, path: path}, nil
}

func (st *evalState) evalBool(e *compiledExpr, act map[string]any) (bool, error) {
	out, err := st.eval(e, act)
	if err != nil {
		return false, err
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, fmt.Errorf("%s returned %s, want bool", e.where, out.Type().TypeName())
	}
	return bool(b), nil
}

// evalOptional evaluates a message or field path expression, whose runtime
// errors fall back to the static value; only budget and cancellation errors
// are returned.
func (st *evalState) evalOptional(e *compiledExpr, act map[string]any) (ref.Val, error) {
	out, err := st.eval(e, act)
	if err != nil && st.err == nil {
		return nil, nil
	}
	return out, err
}

// eval runs one program and charges its cost to the budget.
func (st *evalState) eval(e *compiledExpr, act map[string]any) (ref.Val, error) {
	if st.err == nil && st.ctx.Err() != nil {
		st.err = fmt.Errorf("%s: %w", e.where, context.Cause(st.ctx))
	}
	if st.err != nil {
		return nil, st.err
	}
	// cel-go checks the context every CheckFrequency comprehension
	// iterations; the check above covers the other expressions.
	out, details, err := e.program.ContextEval(st.ctx, act)
	cost := uint64(PerCallLimit) // what a cancelled evaluation may have spent
	if details != nil && details.ActualCost() != nil {
		cost = *details.ActualCost()
	}
	st.spent += int64(min(cost, uint64(math.MaxInt64-st.spent)))
	var cancelled interpreter.EvalCancelledError
	switch {
	case st.err != nil:
		// A variable this expression read ran out of budget or was cancelled.
	case err != nil && errors.As(err, &cancelled) && cancelled.Cause == interpreter.CostLimitExceeded:
		st.err = fmt.Errorf("%s: %w: the expression exceeded the per-call limit of %d", e.where, ErrOutOfBudget, PerCallLimit)
	case err != nil && st.ctx.Err() != nil:
		st.err = fmt.Errorf("%s: %w", e.where, context.Cause(st.ctx))
	case st.spent > st.budget:
		st.err = fmt.Errorf("%s: %w: the request spent %d of its budget of %d", e.where, ErrOutOfBudget, st.spent, st.budget)
	case err != nil:
		return nil, fmt.Errorf("%s: evaluation failed: %w", e.where, err)
	}
	if st.err != nil {
		return nil, st.err
	}
	return out, nil
}
