package resources

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
)

// lexed is a comparable view of a token.
type lexed struct {
	Kind   tokenKind
	Col    int
	Text   string
	Value  string // exact rational, "" when not a literal
	Format resource.Format
}

func lexAll(t *testing.T, src string) ([]lexed, error) {
	t.Helper()
	toks, err := tokenize(src)
	if err != nil {
		return nil, err
	}
	out := make([]lexed, 0, len(toks))
	for _, tk := range toks {
		l := lexed{Kind: tk.kind, Col: tk.col, Text: tk.text, Format: tk.format}
		if tk.value != nil {
			l.Value = tk.value.RatString()
		}
		out = append(out, l)
	}
	return out, nil
}

func TestTokenize_Literals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string
		want []lexed
	}{
		{
			name: "an integer is a number",
			src:  "42",
			want: []lexed{{Kind: tokNumber, Col: 1, Text: "42", Value: "42"}, {Kind: tokEOF, Col: 3}},
		},
		{
			name: "a decimal without unit is a number, not a quantity",
			src:  "0.5",
			want: []lexed{{Kind: tokNumber, Col: 1, Text: "0.5", Value: "1/2"}, {Kind: tokEOF, Col: 4}},
		},
		{
			name: "a leading dot is accepted",
			src:  ".25",
			want: []lexed{{Kind: tokNumber, Col: 1, Text: ".25", Value: "1/4"}, {Kind: tokEOF, Col: 4}},
		},
		{
			name: "a percentage is a number divided by 100",
			src:  "12.5%",
			want: []lexed{{Kind: tokNumber, Col: 1, Text: "12.5%", Value: "1/8"}, {Kind: tokEOF, Col: 6}},
		},
		{
			name: "an exponent scales a number",
			src:  "2e3 + 5E-1",
			want: []lexed{
				{Kind: tokNumber, Col: 1, Text: "2e3", Value: "2000"},
				{Kind: tokPlus, Col: 5, Text: "+"},
				{Kind: tokNumber, Col: 7, Text: "5E-1", Value: "1/2"},
				{Kind: tokEOF, Col: 11},
			},
		},
		{
			name: "milli is a decimal quantity in base units",
			src:  "50m",
			want: []lexed{{Kind: tokQuantity, Col: 1, Text: "50m", Value: "1/20", Format: resource.DecimalSI}, {Kind: tokEOF, Col: 4}},
		},
		{
			name: "Mi is a binary quantity",
			src:  "100Mi",
			want: []lexed{{Kind: tokQuantity, Col: 1, Text: "100Mi", Value: "104857600", Format: resource.BinarySI}, {Kind: tokEOF, Col: 6}},
		},
		{
			name: "a fractional Gi is exact",
			src:  "1.5Gi",
			want: []lexed{{Kind: tokQuantity, Col: 1, Text: "1.5Gi", Value: "1610612736", Format: resource.BinarySI}, {Kind: tokEOF, Col: 6}},
		},
		{
			name: "a lone E is the exa unit, not an exponent",
			src:  "2E",
			want: []lexed{{Kind: tokQuantity, Col: 1, Text: "2E", Value: "2000000000000000000", Format: resource.DecimalSI}, {Kind: tokEOF, Col: 3}},
		},
		{
			name: "every suffix a Kubernetes quantity accepts is a unit (nano, micro, kilo, kibi)",
			src:  "5n 3u 2k 1Ki",
			want: []lexed{
				{Kind: tokQuantity, Col: 1, Text: "5n", Value: "1/200000000", Format: resource.DecimalSI},
				{Kind: tokQuantity, Col: 4, Text: "3u", Value: "3/1000000", Format: resource.DecimalSI},
				{Kind: tokQuantity, Col: 7, Text: "2k", Value: "2000", Format: resource.DecimalSI},
				{Kind: tokQuantity, Col: 10, Text: "1Ki", Value: "1024", Format: resource.BinarySI},
				{Kind: tokEOF, Col: 13},
			},
		},
		{
			name: "identifiers, operators and whitespace",
			src:  " max(CPU*50%,\t1)\n",
			want: []lexed{
				{Kind: tokIdent, Col: 2, Text: "max"},
				{Kind: tokLParen, Col: 5, Text: "("},
				{Kind: tokIdent, Col: 6, Text: "CPU"},
				{Kind: tokStar, Col: 9, Text: "*"},
				{Kind: tokNumber, Col: 10, Text: "50%", Value: "1/2"},
				{Kind: tokComma, Col: 13, Text: ","},
				{Kind: tokNumber, Col: 15, Text: "1", Value: "1"},
				{Kind: tokRParen, Col: 16, Text: ")"},
				{Kind: tokEOF, Col: 18},
			},
		},
		{
			name: "minus and slash are operators",
			src:  "cpu-1/2",
			want: []lexed{
				{Kind: tokIdent, Col: 1, Text: "cpu"},
				{Kind: tokMinus, Col: 4, Text: "-"},
				{Kind: tokNumber, Col: 5, Text: "1", Value: "1"},
				{Kind: tokSlash, Col: 6, Text: "/"},
				{Kind: tokNumber, Col: 7, Text: "2", Value: "2"},
				{Kind: tokEOF, Col: 8},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := lexAll(t, tc.src)
			if err != nil {
				t.Fatalf("tokenize(%q) error: %v", tc.src, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("tokenize(%q) mismatch (-want +got):\n%s", tc.src, diff)
			}
		})
	}
}

func TestTokenize_Errors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		src     string
		wantErr string
	}{
		{
			name:    "an unknown unit is rejected",
			src:     "100MB",
			wantErr: `unknown unit "MB" in "100MB" at column 1 (want one of m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei)`,
		},
		{
			name:    "implicit multiplication by the variable is rejected as a unit",
			src:     "2cpu",
			wantErr: `unknown unit "cpu" in "2cpu" at column 1 (want one of m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei)`,
		},
		{
			name:    "a lowercase e without digits is not a unit",
			src:     "1e",
			wantErr: `unknown unit "e" in "1e" at column 1 (want one of m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei)`,
		},
		{
			name:    "an exponent with a unit is rejected",
			src:     "1e3Mi",
			wantErr: `number "1e3" at column 1 has an exponent and cannot also have a unit or %`,
		},
		{
			name:    "a huge exponent is rejected",
			src:     "1e65",
			wantErr: `exponent of "1e65" at column 1 is out of range (at most 64)`,
		},
		{
			name:    "a lone dot is rejected",
			src:     "cpu * .",
			wantErr: `unexpected character '.' at column 7`,
		},
		{
			name:    "a stray percent sign is rejected",
			src:     "cpu * %",
			wantErr: `unexpected character '%' at column 7`,
		},
		{
			name:    "a non-ASCII character is rejected",
			src:     "cpu × 2",
			wantErr: `unexpected character '×' at column 5`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := tokenize(tc.src)
			if err == nil {
				t.Fatalf("tokenize(%q) succeeded, want error %q", tc.src, tc.wantErr)
			}
			if diff := cmp.Diff(tc.wantErr, err.Error()); diff != "" {
				t.Errorf("tokenize(%q) error mismatch (-want +got):\n%s", tc.src, diff)
			}
		})
	}
}
