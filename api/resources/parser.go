package resources

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Grammar (recursive descent, one function per rule):
//
//	expression = term { ("+" | "-") term }
//	term       = unary { ("*" | "/") unary }
//	unary      = "-" unary | primary
//	primary    = NUMBER | QUANTITY | "(" expression ")"
//	           | IDENT                                    (the variable)
//	           | IDENT "(" expression "," expression { "," expression } ")"   (max, min)
//
// Identifiers are case-insensitive, as in Kruise.

const (
	// VariableCPU is the variable of cpu expressions.
	VariableCPU = "cpu"
	// VariableMemory is the variable of memory expressions.
	VariableMemory = "memory"

	// maxExprLen bounds the length of an expression (the API allows 256).
	maxExprLen = 1024
	// maxDepth bounds the nesting of parentheses, calls and unary minus.
	maxDepth = 64
)

// otherVariable maps each variable to the one it excludes.
var otherVariable = map[string]string{
	VariableCPU:    VariableMemory,
	VariableMemory: VariableCPU,
}

// valueKind is the static type of a subexpression.
type valueKind int

const (
	// kindNumber is a dimensionless number (42, 0.5, 50%).
	kindNumber valueKind = iota
	// kindQuantity is an amount of the resource (50m, 1Gi, the variable).
	kindQuantity
)

// opKind is the operation of an expression tree node.
type opKind int

const (
	opLiteral opKind = iota
	opVariable
	opNeg
	opAdd
	opSub
	opMul
	opDiv
	opMax
	opMin
)

// node is one node of an expression tree. Its kind is known at parse time:
// the variable is a quantity and literals have a fixed kind, so every
// number-typed node is a constant.
type node struct {
	op   opKind
	kind valueKind
	lit  value   // opLiteral only
	args []*node // operands, in order
	col  int     // column of the operator or literal, for errors
}

// Expr is a parsed resource expression.
type Expr struct {
	source   string
	variable string
	root     *node
	constant bool
}

// String returns the expression's source text.
func (e *Expr) String() string { return e.source }

// Variable returns the variable the expression may use: cpu or memory.
func (e *Expr) Variable() string { return e.variable }

// Constant reports whether the expression does not use its variable.
func (e *Expr) Constant() bool { return e.constant }

// Parse parses an expression of the calculator language. variable is
// "cpu" for cpu expressions and "memory" for memory ones; the expression
// may use only that variable. Parse also rejects every error that does not
// depend on the variable's value: type errors (a quantity times a quantity,
// a division by a quantity), divisions by zero and, for constant
// expressions, a negative or out-of-range result.
func Parse(expr string, variable string) (*Expr, error) {
	if _, ok := otherVariable[variable]; !ok {
		return nil, fmt.Errorf("unsupported variable %q (want %q or %q)", variable, VariableCPU, VariableMemory)
	}
	if len(expr) > maxExprLen {
		return nil, fmt.Errorf("expression is too long (%d characters, at most %d)", len(expr), maxExprLen)
	}
	if strings.TrimSpace(expr) == "" {
		return nil, errors.New("expression is empty")
	}
	toks, err := tokenize(expr)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks, variable: variable}
	root, err := p.expression()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tokEOF {
		return nil, fmt.Errorf("unexpected %s at column %d", t.describe(), t.col)
	}
	e := &Expr{source: expr, variable: variable, root: root, constant: !p.sawVariable}
	// Divisors are number-typed, hence constant: a dry run with any value of
	// the variable finds every division by zero.
	if _, err := root.eval(value{rat: zeroRat(), qty: true}); err != nil {
		return nil, err
	}
	if e.constant {
		if _, err := e.Eval(resource.Quantity{}); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// parser holds the state of one Parse call.
type parser struct {
	toks        []token
	pos         int
	variable    string
	depth       int
	sawVariable bool
}

func (p *parser) peek() token { return p.toks[p.pos] }

func (p *parser) advance() token {
	t := p.toks[p.pos]
	if t.kind != tokEOF {
		p.pos++
	}
	return t
}

// enter guards against deep nesting; the caller must defer p.leave().
func (p *parser) enter(col int) error {
	p.depth++
	if p.depth > maxDepth {
		return fmt.Errorf("expression is nested too deeply at column %d (at most %d levels)", col, maxDepth)
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

// expression = term { ("+" | "-") term }
func (p *parser) expression() (*node, error) {
	if err := p.enter(p.peek().col); err != nil {
		return nil, err
	}
	defer p.leave()
	left, err := p.term()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		if t.kind != tokPlus && t.kind != tokMinus {
			return left, nil
		}
		p.advance()
		right, err := p.term()
		if err != nil {
			return nil, err
		}
		op := opAdd
		if t.kind == tokMinus {
			op = opSub
		}
		left = &node{op: op, kind: widest(left, right), args: []*node{left, right}, col: t.col}
	}
}

// term = unary { ("*" | "/") unary }
func (p *parser) term() (*node, error) {
	left, err := p.unary()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		if t.kind != tokStar && t.kind != tokSlash {
			return left, nil
		}
		p.advance()
		right, err := p.unary()
		if err != nil {
			return nil, err
		}
		op := opMul
		if t.kind == tokSlash {
			op = opDiv
		}
		switch {
		case op == opMul && left.kind == kindQuantity && right.kind == kindQuantity:
			return nil, fmt.Errorf("cannot multiply a quantity by a quantity at column %d (one side must be a number)", t.col)
		case op == opDiv && right.kind == kindQuantity:
			return nil, fmt.Errorf("cannot divide by a quantity at column %d (the divisor must be a number)", t.col)
		}
		left = &node{op: op, kind: widest(left, right), args: []*node{left, right}, col: t.col}
	}
}

// unary = "-" unary | primary
func (p *parser) unary() (*node, error) {
	t := p.peek()
	if t.kind != tokMinus {
		return p.primary()
	}
	if err := p.enter(t.col); err != nil {
		return nil, err
	}
	defer p.leave()
	p.advance()
	x, err := p.unary()
	if err != nil {
		return nil, err
	}
	return &node{op: opNeg, kind: x.kind, args: []*node{x}, col: t.col}, nil
}

// primary = NUMBER | QUANTITY | "(" expression ")" | IDENT | IDENT "(" args ")"
func (p *parser) primary() (*node, error) {
	t := p.advance()
	switch t.kind {
	case tokNumber:
		return &node{op: opLiteral, kind: kindNumber, lit: value{rat: t.value}, col: t.col}, nil
	case tokQuantity:
		return &node{op: opLiteral, kind: kindQuantity, lit: value{rat: t.value, qty: true, format: t.format}, col: t.col}, nil
	case tokLParen:
		x, err := p.expression()
		if err != nil {
			return nil, err
		}
		if err := p.expect(tokRParen, `")"`); err != nil {
			return nil, err
		}
		return x, nil
	case tokIdent:
		if p.peek().kind == tokLParen {
			return p.call(t)
		}
		return p.variableRef(t)
	default:
		return nil, fmt.Errorf("expected a number, a quantity, %s or \"(\" at column %d, found %s",
			p.variable, t.col, t.describe())
	}
}

// call parses the argument list of max or min; name is the function token.
func (p *parser) call(name token) (*node, error) {
	var op opKind
	switch strings.ToLower(name.text) {
	case "max":
		op = opMax
	case "min":
		op = opMin
	default:
		return nil, fmt.Errorf("unknown function %q at column %d (want max or min)", name.text, name.col)
	}
	p.advance() // "("
	n := &node{op: op, kind: kindNumber, col: name.col}
	for {
		arg, err := p.expression()
		if err != nil {
			return nil, err
		}
		n.args = append(n.args, arg)
		if arg.kind == kindQuantity {
			n.kind = kindQuantity
		}
		if p.peek().kind != tokComma {
			break
		}
		p.advance()
	}
	if err := p.expect(tokRParen, `"," or ")"`); err != nil {
		return nil, err
	}
	if len(n.args) < 2 {
		return nil, fmt.Errorf("%s at column %d needs at least 2 arguments, got %d", name.text, name.col, len(n.args))
	}
	return n, nil
}

// variableRef resolves an identifier that is not a call.
func (p *parser) variableRef(t token) (*node, error) {
	name := strings.ToLower(t.text)
	switch name {
	case p.variable:
		p.sawVariable = true
		return &node{op: opVariable, kind: kindQuantity, col: t.col}, nil
	case otherVariable[p.variable]:
		return nil, fmt.Errorf("a %s expression cannot use %q at column %d (the only variable is %s)",
			p.variable, t.text, t.col, p.variable)
	case "max", "min":
		return nil, fmt.Errorf("function %s at column %d must be called, as in %s(a, b)", t.text, t.col, name)
	default:
		return nil, fmt.Errorf("unknown identifier %q at column %d (the only variable is %s)", t.text, t.col, p.variable)
	}
}

// expect consumes a token of the given kind or fails naming what was wanted.
func (p *parser) expect(kind tokenKind, want string) error {
	t := p.advance()
	if t.kind != kind {
		return fmt.Errorf("expected %s at column %d, found %s", want, t.col, t.describe())
	}
	return nil
}

// widest is the kind of an additive or multiplicative combination: a
// quantity if either operand is one.
func widest(a, b *node) valueKind {
	if a.kind == kindQuantity || b.kind == kindQuantity {
		return kindQuantity
	}
	return kindNumber
}
