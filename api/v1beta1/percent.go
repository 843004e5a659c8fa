package v1beta1

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// PercentPattern is the form of a percentage that the CRD accepts in
// updateStrategy.partition and updateStrategy.maxUnavailable (their
// x-kubernetes-validations rules): "0%" to "100%", no sign, no leading
// zero, no bare number.
const PercentPattern = `^(100|[1-9]?[0-9])%$`

// ParsePercent returns the number of a percentage "N%", N a non-negative
// integer. A value above 100, which the CRD refuses but an object stored
// before its rule may hold, counts as 100. A leading zero, a sign, a bare
// number (which OpenKruise's
// pod webhook reads as a percentage and its controller refuses) or anything
// else is an error: the CRD refuses it, and no reader guesses.
func ParsePercent(s string) (int, error) {
	digits, ok := strings.CutSuffix(s, "%")
	if !ok {
		return 0, fmt.Errorf("%q is neither an integer nor a percentage (N%%)", s)
	}
	p, err := strconv.Atoi(digits)
	if err != nil || p < 0 || strconv.Itoa(p) != digits {
		return 0, fmt.Errorf("%q is not a valid percentage", s)
	}
	return min(p, 100), nil
}

// ScaledValue resolves an integer or a percentage against a total, as
// partition and maxUnavailable are: an integer as is (a negative one as 0),
// a percentage (ParsePercent) of the total, rounded up.
func ScaledValue(v intstr.IntOrString, total int) (int, error) {
	if v.Type == intstr.Int {
		return max(0, v.IntValue()), nil
	}
	p, err := ParsePercent(v.StrVal)
	if err != nil {
		return 0, err
	}
	capped := intstr.FromString(strconv.Itoa(p) + "%")
	return intstr.GetScaledValueFromIntOrPercent(&capped, total, true)
}
