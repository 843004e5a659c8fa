// Package resources computes the resources of a sidecar that carries a
// resourcesPolicy: it aggregates the pod's target containers' resources and
// evaluates the policy's calculator expressions over the aggregate.
//
// The calculator language has + - * /, parentheses, unary minus, the
// functions max(a, b, ...) and min(a, b, ...), plain numbers (42, 0.5, 1e3),
// percentages (50% is 0.5), Kubernetes quantities (50m, 100Mi, 1Gi) and one
// variable, cpu or memory, bound to the aggregate of the field being
// computed. Arithmetic is exact (rational numbers); the final result is
// rounded up to milli-units.
package resources

import (
	"fmt"
	"math/big"

	"k8s.io/apimachinery/pkg/api/resource"
)

// tokenKind classifies a token of the calculator language.
type tokenKind int

const (
	tokEOF tokenKind = iota
	tokNumber
	tokQuantity
	tokIdent
	tokPlus
	tokMinus
	tokStar
	tokSlash
	tokLParen
	tokRParen
	tokComma
)

// token is one lexical unit. value and format are set for numbers and
// quantities; value is in base units (cores or bytes) for quantities.
type token struct {
	kind   tokenKind
	col    int // 1-based byte column of the first character
	text   string
	value  *big.Rat
	format resource.Format
}

// describe names a token for error messages.
func (t token) describe() string {
	if t.kind == tokEOF {
		return "end of expression"
	}
	return fmt.Sprintf("%q", t.text)
}

// maxExponent bounds the decimal exponent of a number literal, so that a
// short expression cannot make exact arithmetic arbitrarily expensive.
const maxExponent = 64

// lexer splits an expression into tokens.
type lexer struct {
	src string
	pos int
}

// tokenize returns the tokens of src, ending with a tokEOF token.
func tokenize(src string) ([]token, error) {
	lx := &lexer{src: src}
	var toks []token
	for {
		t, err := lx.next()
		if err != nil {
			return nil, err
		}
		toks = append(toks, t)
		if t.kind == tokEOF {
			return toks, nil
		}
	}
}

var punctuation = map[byte]tokenKind{
	'+': tokPlus,
	'-': tokMinus,
	'*': tokStar,
	'/': tokSlash,
	'(': tokLParen,
	')': tokRParen,
	',': tokComma,
}

// next returns the next token.
func (lx *lexer) next() (token, error) {
	for lx.pos < len(lx.src) && isSpace(lx.src[lx.pos]) {
		lx.pos++
	}
	start := lx.pos
	if start == len(lx.src) {
		return token{kind: tokEOF, col: start + 1}, nil
	}
	c := lx.src[start]
	switch {
	case isDigit(c) || c == '.':
		return lx.number()
	case isLetter(c):
		for lx.pos < len(lx.src) && (isLetter(lx.src[lx.pos]) || isDigit(lx.src[lx.pos]) || lx.src[lx.pos] == '_') {
			lx.pos++
		}
		return token{kind: tokIdent, col: start + 1, text: lx.src[start:lx.pos]}, nil
	}
	if kind, ok := punctuation[c]; ok {
		lx.pos++
		return token{kind: kind, col: start + 1, text: string(c)}, nil
	}
	r := []rune(lx.src[start:])[0]
	return token{}, fmt.Errorf("unexpected character %q at column %d", r, start+1)
}

// number lexes a number, a percentage or a quantity.
func (lx *lexer) number() (token, error) {
	start := lx.pos
	intDigits := lx.digits()
	fracDigits := ""
	if lx.pos < len(lx.src) && lx.src[lx.pos] == '.' {
		lx.pos++
		fracDigits = lx.digits()
	}
	if intDigits == "" && fracDigits == "" {
		return token{}, fmt.Errorf("unexpected character '.' at column %d", start+1)
	}
	mantissa, _ := new(big.Int).SetString(intDigits+fracDigits, 10)
	value := new(big.Rat).SetFrac(mantissa, pow10(len(fracDigits)))

	if lx.atExponent() {
		lx.pos++ // e or E
		negative := false
		if c := lx.src[lx.pos]; c == '+' || c == '-' {
			negative = c == '-'
			lx.pos++
		}
		expDigits := lx.digits()
		exp := 0
		for _, d := range expDigits {
			exp = exp*10 + int(d-'0')
			if exp > maxExponent {
				return token{}, fmt.Errorf("exponent of %q at column %d is out of range (at most %d)",
					lx.src[start:lx.pos], start+1, maxExponent)
			}
		}
		scale := new(big.Rat).SetInt(pow10(exp))
		if negative {
			value.Quo(value, scale)
		} else {
			value.Mul(value, scale)
		}
		if lx.pos < len(lx.src) && (isLetter(lx.src[lx.pos]) || lx.src[lx.pos] == '%') {
			return token{}, fmt.Errorf("number %q at column %d has an exponent and cannot also have a unit or %%",
				lx.src[start:lx.pos], start+1)
		}
		return token{kind: tokNumber, col: start + 1, text: lx.src[start:lx.pos], value: value}, nil
	}

	if lx.pos < len(lx.src) && lx.src[lx.pos] == '%' {
		lx.pos++
		value.Quo(value, big.NewRat(100, 1))
		return token{kind: tokNumber, col: start + 1, text: lx.src[start:lx.pos], value: value}, nil
	}

	unitStart := lx.pos
	for lx.pos < len(lx.src) && isLetter(lx.src[lx.pos]) {
		lx.pos++
	}
	if unitStart == lx.pos {
		return token{kind: tokNumber, col: start + 1, text: lx.src[start:lx.pos], value: value}, nil
	}
	text := lx.src[start:lx.pos]
	q, err := resource.ParseQuantity(text)
	if err != nil {
		return token{}, fmt.Errorf("unknown unit %q in %q at column %d (want one of m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei)",
			lx.src[unitStart:lx.pos], text, start+1)
	}
	return token{kind: tokQuantity, col: start + 1, text: text, value: ratOf(q), format: q.Format}, nil
}

// atExponent reports whether an exponent (e or E followed by an optionally
// signed digit) starts at the current position. A lone E is the exa unit.
func (lx *lexer) atExponent() bool {
	i := lx.pos
	if i >= len(lx.src) || (lx.src[i] != 'e' && lx.src[i] != 'E') {
		return false
	}
	i++
	if i < len(lx.src) && (lx.src[i] == '+' || lx.src[i] == '-') {
		i++
	}
	return i < len(lx.src) && isDigit(lx.src[i])
}

// digits consumes a run of decimal digits and returns it.
func (lx *lexer) digits() string {
	start := lx.pos
	for lx.pos < len(lx.src) && isDigit(lx.src[lx.pos]) {
		lx.pos++
	}
	return lx.src[start:lx.pos]
}

func pow10(n int) *big.Int {
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil)
}

func isSpace(c byte) bool  { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isLetter(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }
