package resources

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse_Accepts(t *testing.T) {
	t.Parallel()
	type result struct {
		Variable string
		Constant bool
	}
	tests := []struct {
		name     string
		expr     string
		variable string
		want     result
	}{
		{name: "a percentage of cpu", expr: "cpu*50%", variable: "cpu", want: result{Variable: "cpu"}},
		{name: "a percentage of memory", expr: "memory*30%", variable: "memory", want: result{Variable: "memory"}},
		{name: "max with a floor", expr: "max(cpu*50%, 50m)", variable: "cpu", want: result{Variable: "cpu"}},
		{name: "max with three arguments", expr: "max(cpu*50%, 50m, 1/10)", variable: "cpu", want: result{Variable: "cpu"}},
		{name: "nested min and max", expr: "min(max(memory*20% + 100Mi, 200Mi), 1Gi)", variable: "memory", want: result{Variable: "memory"}},
		{name: "a constant quantity", expr: "200Mi", variable: "memory", want: result{Variable: "memory", Constant: true}},
		{name: "a constant number", expr: "0.5", variable: "cpu", want: result{Variable: "cpu", Constant: true}},
		{name: "identifiers are case-insensitive", expr: "MAX(CPU * 50%, 50m)", variable: "cpu", want: result{Variable: "cpu"}},
		{name: "unary minus inside a non-negative result", expr: "-50m + cpu", variable: "cpu", want: result{Variable: "cpu"}},
		{name: "a number divided by a number", expr: "cpu * (1/3)", variable: "cpu", want: result{Variable: "cpu"}},
		{name: "a quantity divided by a number", expr: "cpu / 4", variable: "cpu", want: result{Variable: "cpu"}},
		{name: "a number times a quantity", expr: "2 * memory", variable: "memory", want: result{Variable: "memory"}},
		{name: "parentheses and whitespace", expr: " ( cpu + 100m ) * 2 ", variable: "cpu", want: result{Variable: "cpu"}},
		{name: "a variable expression that is negative for small values", expr: "cpu - 100m", variable: "cpu", want: result{Variable: "cpu"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, err := Parse(tc.expr, tc.variable)
			if err != nil {
				t.Fatalf("Parse(%q, %q) error: %v", tc.expr, tc.variable, err)
			}
			got := result{Variable: e.Variable(), Constant: e.Constant()}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Parse(%q, %q) mismatch (-want +got):\n%s", tc.expr, tc.variable, diff)
			}
			if e.String() != tc.expr {
				t.Errorf("String() = %q, want the source %q", e.String(), tc.expr)
			}
		})
	}
}

func TestParse_Errors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		expr     string
		variable string
		wantErr  string
	}{
		{
			name: "an unknown identifier is rejected", expr: "cpu * invalid", variable: "cpu",
			wantErr: `unknown identifier "invalid" at column 7 (the only variable is cpu)`,
		},
		{
			name: "a cpu expression that mentions memory is rejected", expr: "memory*50%", variable: "cpu",
			wantErr: `a cpu expression cannot use "memory" at column 1 (the only variable is cpu)`,
		},
		{
			name: "a memory expression that mentions cpu is rejected", expr: "max(cpu, 100Mi)", variable: "memory",
			wantErr: `a memory expression cannot use "cpu" at column 5 (the only variable is memory)`,
		},
		{
			name: "an unsupported variable is rejected", expr: "1", variable: "gpu",
			wantErr: `unsupported variable "gpu" (want "cpu" or "memory")`,
		},
		{
			name: "an empty expression is rejected", expr: "  ", variable: "cpu",
			wantErr: `expression is empty`,
		},
		{
			name: "an over-long expression is rejected", expr: strings.Repeat("1+", 512) + "1", variable: "cpu",
			wantErr: `expression is too long (1025 characters, at most 1024)`,
		},
		{
			name: "a dangling operator is rejected", expr: "cpu *", variable: "cpu",
			wantErr: `expected a number, a quantity, cpu or "(" at column 6, found end of expression`,
		},
		{
			name: "an unclosed parenthesis is rejected", expr: "(cpu + 1m", variable: "cpu",
			wantErr: `expected ")" at column 10, found end of expression`,
		},
		{
			name: "a trailing token is rejected", expr: "cpu 50m", variable: "cpu",
			wantErr: `unexpected "50m" at column 5`,
		},
		{
			name: "a product of two quantities is rejected", expr: "cpu * 50m", variable: "cpu",
			wantErr: `cannot multiply a quantity by a quantity at column 5 (one side must be a number)`,
		},
		{
			name: "a division by a quantity is rejected", expr: "100m / cpu", variable: "cpu",
			wantErr: `cannot divide by a quantity at column 6 (the divisor must be a number)`,
		},
		{
			name: "a division by a zero constant is rejected", expr: "cpu / (1 - 100%)", variable: "cpu",
			wantErr: `division by zero at column 5`,
		},
		{
			name: "a negative constant is rejected", expr: "100m - 200m", variable: "cpu",
			wantErr: `result is negative: -100m`,
		},
		{
			name: "a too large constant is rejected", expr: "10000P", variable: "memory",
			wantErr: `result is too large (more than 9223372036854775807m)`,
		},
		{
			name: "an unknown function is rejected", expr: "avg(cpu, 1m)", variable: "cpu",
			wantErr: `unknown function "avg" at column 1 (want max or min)`,
		},
		{
			name: "max with one argument is rejected", expr: "max(cpu)", variable: "cpu",
			wantErr: `max at column 1 needs at least 2 arguments, got 1`,
		},
		{
			name: "max with no argument is rejected", expr: "max()", variable: "cpu",
			wantErr: `expected a number, a quantity, cpu or "(" at column 5, found ")"`,
		},
		{
			name: "a function name used as a variable is rejected", expr: "min + 1", variable: "cpu",
			wantErr: `function min at column 1 must be called, as in min(a, b)`,
		},
		{
			name: "a missing comma is rejected", expr: "max(cpu 1m)", variable: "cpu",
			wantErr: `expected "," or ")" at column 9, found "1m"`,
		},
		{
			name: "deep nesting is rejected", expr: strings.Repeat("(", 70) + "cpu" + strings.Repeat(")", 70), variable: "cpu",
			wantErr: `expression is nested too deeply at column 65 (at most 64 levels)`,
		},
		{
			name: "a long chain of unary minus is rejected", expr: strings.Repeat("-", 80) + "cpu", variable: "cpu",
			wantErr: `expression is nested too deeply at column 64 (at most 64 levels)`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, err := Parse(tc.expr, tc.variable)
			if err == nil {
				t.Fatalf("Parse(%q, %q) = %v, want error %q", tc.expr, tc.variable, e, tc.wantErr)
			}
			if diff := cmp.Diff(tc.wantErr, err.Error()); diff != "" {
				t.Errorf("Parse(%q, %q) error mismatch (-want +got):\n%s", tc.expr, tc.variable, diff)
			}
		})
	}
}
