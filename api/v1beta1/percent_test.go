package v1beta1

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestScaledValue(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		value   intstr.IntOrString
		total   int
		want    int
		wantErr string
	}{
		{name: "an integer is used as is", value: intstr.FromInt32(3), total: 10, want: 3},
		{name: "an integer above the total is kept (the caller bounds it)", value: intstr.FromInt32(30), total: 10, want: 30},
		{name: "a negative integer counts as 0", value: intstr.FromInt32(-1), total: 10, want: 0},
		{name: "a percentage is of the total, rounded up", value: intstr.FromString("20%"), total: 3, want: 1},
		{name: "a percentage that divides exactly is exact", value: intstr.FromString("50%"), total: 10, want: 5},
		{name: "0% is 0", value: intstr.FromString("0%"), total: 10, want: 0},
		{name: "100% is the total", value: intstr.FromString("100%"), total: 7, want: 7},
		{name: "a non-zero percentage of a non-zero total is never 0", value: intstr.FromString("1%"), total: 1, want: 1},
		{name: "a percentage of no pod is 0", value: intstr.FromString("50%"), total: 0, want: 0},
		{name: "a percentage above 100 counts as 100%", value: intstr.FromString("150%"), total: 4, want: 4},
		{name: "a bare number is refused", value: intstr.FromString("50"), total: 10,
			wantErr: `"50" is neither an integer nor a percentage (N%)`},
		{name: "a negative percentage is refused", value: intstr.FromString("-5%"), total: 10, wantErr: `"-5%" is not a valid percentage`},
		{name: "a signed percentage is refused", value: intstr.FromString("+5%"), total: 10, wantErr: `"+5%" is not a valid percentage`},
		{name: "a fractional percentage is refused", value: intstr.FromString("2.5%"), total: 10, wantErr: `"2.5%" is not a valid percentage`},
		{name: "a leading zero is refused", value: intstr.FromString("05%"), total: 10, wantErr: `"05%" is not a valid percentage`},
		{name: "spaces are refused", value: intstr.FromString(" 5%"), total: 10, wantErr: `" 5%" is not a valid percentage`},
		{name: "a lone % is refused", value: intstr.FromString("%"), total: 10, wantErr: `"%" is not a valid percentage`},
		{name: "an empty string is refused", value: intstr.FromString(""), total: 10, wantErr: `"" is neither an integer nor a percentage (N%)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := ScaledValue(tc.value, tc.total)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("ScaledValue(%s, %d) = %d, want %d", tc.value.String(), tc.total, got, tc.want)
			}
		})
	}
}

// TestPercentPattern_IsTheCRDsAndAgreesWithParsePercent checks that the
// CRD's rules use PercentPattern, and that every percentage the pattern
// accepts parses to itself while every other form is refused or, above
// 100%, capped (objects stored before the rule).
func TestPercentPattern_IsTheCRDsAndAgreesWithParsePercent(t *testing.T) {
	t.Parallel()
	crd, err := os.ReadFile("../../config/crd/bases/apps.kruise.io_sidecarsets.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The YAML quotes the rule in single quotes, doubling the inner ones.
	rules := regexp.MustCompile(`self\.matches\('([^']*%\$)'\)`).FindAllStringSubmatch(strings.ReplaceAll(string(crd), "''", "'"), -1)
	// partition and maxUnavailable, in both served versions.
	if len(rules) != 4 {
		t.Fatalf("the CRD has %d percentage rules, want 4", len(rules))
	}
	for _, r := range rules {
		if r[1] != PercentPattern {
			t.Errorf("the CRD matches percentages with %s, want PercentPattern %s", r[1], PercentPattern)
		}
	}
	re := regexp.MustCompile(PercentPattern)
	inputs := []string{"", "%", "0", "5", "50", "0%", "00%", "05%", "1%", "9%", "10%", "99%", "100%", "101%", "150%", "1000%",
		"-1%", "+1%", "1.5%", " 1%", "1% ", "1%%", "a%"}
	for i := range 101 {
		inputs = append(inputs, strconv.Itoa(i)+"%")
	}
	for _, s := range inputs {
		p, err := ParsePercent(s)
		switch {
		case re.MatchString(s):
			if err != nil || strconv.Itoa(p)+"%" != s {
				t.Errorf("ParsePercent(%q) = %d, %v; the CRD accepts it as itself", s, p, err)
			}
		case err == nil && p != 100:
			t.Errorf("ParsePercent(%q) = %d; the CRD refuses it, and only a value above 100%% is read (as 100)", s, p)
		}
	}
}
