package resources

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

// FuzzParse checks that Parse never panics and that, when it succeeds,
// evaluation never panics, is deterministic and never returns a negative
// quantity. The seed corpus is in testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{"cpu*50%", "max(memory*20% + 100Mi, 200Mi)", "1Gi"} {
		f.Add(seed)
	}
	values := []resource.Quantity{
		{},
		resource.MustParse("0"),
		resource.MustParse("1m"),
		resource.MustParse("600m"),
		resource.MustParse("1Gi"),
		resource.MustParse("8E"),
	}
	f.Fuzz(func(t *testing.T, expr string) {
		for _, variable := range []string{VariableCPU, VariableMemory} {
			e, err := Parse(expr, variable)
			if err != nil {
				continue
			}
			for _, v := range values {
				got, err := e.Eval(v)
				if err != nil {
					continue
				}
				if got.Sign() < 0 {
					t.Errorf("Parse(%q, %q).Eval(%s) = %s, a negative quantity", expr, variable, v.String(), got.String())
				}
				again, err := e.Eval(v)
				if err != nil || !again.Equal(got) {
					t.Errorf("Parse(%q, %q).Eval(%s) is not deterministic: %s then %s (%v)",
						expr, variable, v.String(), got.String(), again.String(), err)
				}
			}
		}
	})
}
