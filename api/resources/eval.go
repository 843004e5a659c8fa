package resources

import (
	"fmt"
	"math"
	"math/big"

	"k8s.io/apimachinery/pkg/api/resource"
)

// value is an intermediate result: an exact rational, in base units (cores
// or bytes) for quantities. A number mixed with a quantity in +, -, max or
// min counts as that many base units. format is the Kubernetes format a
// quantity result is rendered in.
type value struct {
	rat    *big.Rat
	qty    bool
	format resource.Format
}

// Eval evaluates the expression with its variable bound to v and returns
// the result as a quantity in canonical form.
//
// A quantity result keeps the format of the quantity it derives from (the
// first one, for + and -; the chosen one, for max and min). A number result
// N means N base units: N cores (N*1000m) for cpu, N bytes for memory,
// rendered in DecimalSI. The result is rounded up to milli-units, as
// Kubernetes defaulting does. A negative result is an error.
func (e *Expr) Eval(v resource.Quantity) (resource.Quantity, error) {
	format := v.Format
	if format == "" {
		format = resource.DecimalSI
	}
	r, err := e.root.eval(value{rat: ratOf(v), qty: true, format: format})
	if err != nil {
		return resource.Quantity{}, err
	}
	return toQuantity(r)
}

// eval computes the node's value; literal rationals are shared and never
// mutated.
func (n *node) eval(v value) (value, error) {
	switch n.op {
	case opLiteral:
		return n.lit, nil
	case opVariable:
		return v, nil
	case opNeg:
		x, err := n.args[0].eval(v)
		if err != nil {
			return value{}, err
		}
		return value{rat: new(big.Rat).Neg(x.rat), qty: x.qty, format: x.format}, nil
	case opMax, opMin:
		return n.evalExtreme(v)
	}

	l, err := n.args[0].eval(v)
	if err != nil {
		return value{}, err
	}
	r, err := n.args[1].eval(v)
	if err != nil {
		return value{}, err
	}
	out := value{rat: new(big.Rat), qty: l.qty || r.qty, format: firstFormat(l, r)}
	switch n.op {
	case opAdd:
		out.rat.Add(l.rat, r.rat)
	case opSub:
		out.rat.Sub(l.rat, r.rat)
	case opMul:
		out.rat.Mul(l.rat, r.rat)
	case opDiv:
		if r.rat.Sign() == 0 {
			return value{}, fmt.Errorf("division by zero at column %d", n.col)
		}
		out.rat.Quo(l.rat, r.rat)
	default:
		return value{}, fmt.Errorf("internal error: unknown operation %d", n.op)
	}
	return out, nil
}

// evalExtreme computes max or min; the first of equal extremes wins.
func (n *node) evalExtreme(v value) (value, error) {
	var best value
	var fallback resource.Format
	for i, arg := range n.args {
		x, err := arg.eval(v)
		if err != nil {
			return value{}, err
		}
		if x.qty && fallback == "" {
			fallback = x.format
		}
		c := 0
		if i > 0 {
			c = x.rat.Cmp(best.rat)
		}
		if i == 0 || (n.op == opMax && c > 0) || (n.op == opMin && c < 0) {
			best = x
		}
	}
	out := value{rat: best.rat, qty: n.kind == kindQuantity, format: best.format}
	if out.qty && !best.qty {
		out.format = fallback
	}
	return out, nil
}

// firstFormat is the format of the first quantity operand.
func firstFormat(l, r value) resource.Format {
	if l.qty {
		return l.format
	}
	return r.format
}

// toQuantity rounds a final result up to milli-units and renders it.
func toQuantity(r value) (resource.Quantity, error) {
	format := resource.DecimalSI
	if r.qty && r.format != "" {
		format = r.format
	}
	if r.rat.Sign() < 0 {
		magnitude, ok := ceilMilli(new(big.Rat).Neg(r.rat))
		if !ok {
			return resource.Quantity{}, fmt.Errorf("result is negative")
		}
		shown := render(magnitude, format)
		return resource.Quantity{}, fmt.Errorf("result is negative: -%s", shown.String())
	}
	milli, ok := ceilMilli(r.rat)
	if !ok {
		limit := render(math.MaxInt64, format)
		return resource.Quantity{}, fmt.Errorf("result is too large (more than %s)", limit.String())
	}
	return render(milli, format), nil
}

// ceilMilli returns ceil(r*1000) if it fits an int64; r is not negative.
func ceilMilli(r *big.Rat) (int64, bool) {
	scaled := new(big.Rat).Mul(r, big.NewRat(1000, 1))
	q, rem := new(big.Int).QuoRem(scaled.Num(), scaled.Denom(), new(big.Int))
	if rem.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsInt64() {
		return 0, false
	}
	return q.Int64(), true
}

// render builds the canonical quantity of milli milli-units: the same value
// and representation resource.ParseQuantity gives for its string.
func render(milli int64, format resource.Format) resource.Quantity {
	q := resource.NewMilliQuantity(milli, format)
	canonical, err := resource.ParseQuantity(q.String())
	if err != nil {
		return *q
	}
	return canonical
}

// ratOf converts a quantity to an exact rational.
func ratOf(q resource.Quantity) *big.Rat {
	c := q.DeepCopy()
	d := c.AsDec()
	unscaled := new(big.Int).Set(d.UnscaledBig())
	scale := int(d.Scale())
	if scale >= 0 {
		return new(big.Rat).SetFrac(unscaled, pow10(scale))
	}
	return new(big.Rat).SetInt(unscaled.Mul(unscaled, pow10(-scale)))
}

func zeroRat() *big.Rat { return new(big.Rat) }
