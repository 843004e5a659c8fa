package resources

import (
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
)

// evalCase is one calculator evaluation: the result's canonical string, or
// the error message.
type evalCase struct {
	name     string
	expr     string
	variable string
	value    string // the variable's value; "" binds the zero quantity
	want     string
	wantErr  string
}

func runEvalCases(t *testing.T, tests []evalCase) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var v resource.Quantity
			if tc.value != "" {
				v = resource.MustParse(tc.value)
			}
			var gotErr, got string
			e, err := Parse(tc.expr, tc.variable)
			if err == nil {
				var q resource.Quantity
				q, err = e.Eval(v)
				got = q.String()
			}
			if err != nil {
				gotErr, got = err.Error(), ""
			}
			if diff := cmp.Diff(tc.wantErr, gotErr); diff != "" {
				t.Errorf("%s = %s: error mismatch (-want +got):\n%s", tc.expr, tc.value, diff)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s with %s = %s: result mismatch (-want +got):\n%s", tc.expr, tc.variable, tc.value, diff)
			}
		})
	}
}

// TestEval_WorkedExamples reproduces the calculator rows of behavior.md 2.8.
func TestEval_WorkedExamples(t *testing.T) {
	t.Parallel()
	runEvalCases(t, []evalCase{
		{name: "half the cpu plus 100m over 600m is 400m", expr: "cpu*50% + 100m", variable: "cpu", value: "600m", want: "400m"},
		{name: "a floored memory share over 1000Mi is 300Mi", expr: "max(memory*20% + 100Mi, 200Mi)", variable: "memory", value: "1000Mi", want: "300Mi"},
		{name: "cpu plus 50m over 100m is 150m", expr: "cpu + 50m", variable: "cpu", value: "100m", want: "150m"},
		{name: "a constant 500m is 500m", expr: "500m", variable: "cpu", value: "1", want: "500m"},
		{name: "a constant 1Gi is 1Gi", expr: "1Gi", variable: "memory", value: "1Mi", want: "1Gi"},
		{name: "an unknown identifier is an error", expr: "cpu * invalid", variable: "cpu", value: "1",
			wantErr: `unknown identifier "invalid" at column 7 (the only variable is cpu)`},
		// The "empty expression" row is a Compute concern: see TestCompute_WorkedExamples.
	})
}

func TestEval_Semantics(t *testing.T) {
	t.Parallel()
	runEvalCases(t, []evalCase{
		{name: "a number result for cpu means cores", expr: "0.5", variable: "cpu", want: "500m"},
		{name: "a whole number result for cpu means cores", expr: "2", variable: "cpu", want: "2"},
		{name: "a number result for memory means bytes", expr: "1024", variable: "memory", want: "1024"},
		{name: "a number plus a quantity counts as base units", expr: "cpu + 1", variable: "cpu", value: "500m", want: "1500m"},
		{name: "a percentage of a quantity keeps the quantity's format", expr: "memory*30%", variable: "memory", value: "600Mi", want: "180Mi"},
		{name: "a number times a quantity scales it", expr: "3 * memory", variable: "memory", value: "1Gi", want: "3Gi"},
		{name: "division by a number is exact", expr: "cpu / 4", variable: "cpu", value: "1", want: "250m"},
		{name: "arithmetic is exact, with no floating-point drift", expr: "cpu*30%", variable: "cpu", value: "150m", want: "45m"},
		{
			// Kruise truncates each step to milli-units and returns 33m.
			name: "a sub-milli result is rounded up to the next milli-unit", expr: "cpu / 3", variable: "cpu", value: "100m", want: "34m",
		},
		{name: "an exact milli result is not rounded", expr: "cpu / 2", variable: "cpu", value: "100m", want: "50m"},
		{name: "fractional bytes are kept in milli-units", expr: "memory / 2", variable: "memory", value: "1", want: "500m"},
		{name: "max picks the larger quantity", expr: "max(cpu*50%, 50m)", variable: "cpu", value: "400m", want: "200m"},
		{name: "max picks the floor when the share is small", expr: "max(cpu*50%, 50m)", variable: "cpu", value: "40m", want: "50m"},
		{name: "min picks the smaller quantity", expr: "min(memory, 1Gi)", variable: "memory", value: "4Gi", want: "1Gi"},
		{name: "max of a number and a quantity compares base units", expr: "max(cpu, 1)", variable: "cpu", value: "500m", want: "1"},
		{name: "max of numbers is a number", expr: "max(1, 2, 3) * 100m", variable: "cpu", want: "300m"},
		{name: "a winning number in max takes the quantity's format", expr: "max(memory, 2048)", variable: "memory", value: "1Ki", want: "2Ki"},
		{name: "the first quantity's format wins in a sum", expr: "memory + 1G", variable: "memory", value: "1Gi", want: "2073741824"},
		{name: "a decimal quantity first gives a decimal result", expr: "1G + memory", variable: "memory", value: "1G", want: "2G"},
		{name: "a zero variable gives zero", expr: "cpu*50%", variable: "cpu", want: "0"},
		{name: "a zero variable and a floor gives the floor", expr: "max(cpu*50%, 50m)", variable: "cpu", want: "50m"},
		{name: "unary minus is allowed inside a non-negative result", expr: "-(50m) + cpu", variable: "cpu", value: "100m", want: "50m"},
		{name: "a negative result is an error", expr: "cpu - 100m", variable: "cpu", value: "40m", wantErr: "result is negative: -60m"},
		{name: "a tiny negative result shows its rounded magnitude", expr: "cpu - 1n", variable: "cpu", wantErr: "result is negative: -1m"},
		{name: "uppercase identifiers are accepted", expr: "MAX(CPU*50%, 50m)", variable: "cpu", value: "1", want: "500m"},
		{name: "an exa-scale memory value fits", expr: "memory / 1000", variable: "memory", value: "8E", want: "8P"},
		{name: "a result beyond the int64 milli range is an error", expr: "memory * 1000", variable: "memory", value: "8E",
			wantErr: "result is too large (more than 9223372036854775807m)"},
	})
}

func TestEval_CanonicalRepresentation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		expr     string
		variable string
		value    string
		want     string
	}{
		{name: "a cpu result equals the parsed canonical string", expr: "cpu*50%", variable: "cpu", value: "600m", want: "300m"},
		{name: "a binary memory result equals the parsed canonical string", expr: "memory*30%", variable: "memory", value: "600Mi", want: "180Mi"},
		{name: "a whole-core result equals the parsed canonical string", expr: "cpu*2", variable: "cpu", value: "500m", want: "1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, err := Parse(tc.expr, tc.variable)
			if err != nil {
				t.Fatalf("Parse(%q) error: %v", tc.expr, err)
			}
			got, err := e.Eval(resource.MustParse(tc.value))
			if err != nil {
				t.Fatalf("Eval error: %v", err)
			}
			want := resource.MustParse(tc.want)
			// reflect.DeepEqual, not Quantity.Equal: the representation
			// matters to callers that compare pods structurally.
			if !reflect.DeepEqual(want, got) {
				t.Errorf("Eval = %#v, want the representation of resource.MustParse(%q) %#v", got, tc.want, want)
			}
		})
	}
}

func TestEval_DoesNotMutateInputs(t *testing.T) {
	t.Parallel()
	e, err := Parse("max(cpu*50%, 50m) + 1", "cpu")
	if err != nil {
		t.Fatalf("Parse error: %v", err)
	}
	v := resource.MustParse("600m")
	first, err := e.Eval(v)
	if err != nil {
		t.Fatalf("first Eval error: %v", err)
	}
	second, err := e.Eval(v)
	if err != nil {
		t.Fatalf("second Eval error: %v", err)
	}
	if diff := cmp.Diff(first.String(), second.String()); diff != "" {
		t.Errorf("repeated Eval differs (-first +second):\n%s", diff)
	}
	if diff := cmp.Diff("600m", v.String()); diff != "" {
		t.Errorf("the variable's quantity changed (-want +got):\n%s", diff)
	}
}
