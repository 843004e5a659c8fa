package policy

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// TestHotUpgradeRules_AgreeWithTheAPI checks the CEL rules on hot-upgrade
// twins against their Go home, appsv1beta1: the rule text states the same
// suffixes and limit, and the rules accept exactly the names the constants
// allow.
func TestHotUpgradeRules_AgreeWithTheAPI(t *testing.T) {
	t.Parallel()
	src, err := embeddedRules.ReadFile("rules/sidecarset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	limit := strconv.Itoa(appsv1beta1.MaxHotUpgradeNameLength)
	for _, want := range []string{
		"size(c.name) > " + limit,
		"h.name + '" + appsv1beta1.HotUpgradeFirstTwinSuffix + "'",
		"h.name + '" + appsv1beta1.HotUpgradeSecondTwinSuffix + "'",
		"at most " + limit + " characters",
		"longer than " + limit + " characters",
	} {
		if !strings.Contains(string(src), want) {
			t.Errorf("rules/sidecarset.yaml does not say %q", want)
		}
	}

	hotNamed := func(name string) *appsv1beta1.SidecarSet {
		return withSidecarSet(func(s *appsv1beta1.SidecarSet) {
			s.Spec.Containers[0].Name = name
			s.Spec.Containers[0].UpgradeStrategy = appsv1beta1.SidecarContainerUpgradeStrategy{
				UpgradeType: appsv1beta1.SidecarContainerHotUpgrade, HotUpgradeEmptyImage: "empty:1",
			}
		})
	}
	withContainer := func(s *appsv1beta1.SidecarSet, name string) *appsv1beta1.SidecarSet {
		s.Spec.Containers = append(s.Spec.Containers, appsv1beta1.SidecarContainer{Container: corev1.Container{Name: name, Image: "x:1"}})
		return s
	}
	longest := strings.Repeat("a", appsv1beta1.MaxHotUpgradeNameLength)
	first, second := appsv1beta1.HotUpgradeTwins("proxy")
	tests := []struct {
		name      string
		obj       *appsv1beta1.SidecarSet
		wantRules []string
	}{
		{name: "the longest name the API allows is accepted", obj: hotNamed(longest)},
		{name: "one character more is refused", obj: hotNamed(longest + "a"), wantRules: []string{"hot-upgrade-names-fit-twins"}},
		{name: "a container named as the first twin is refused", obj: withContainer(hotNamed("proxy"), first),
			wantRules: []string{"hot-upgrade-twin-names-unique"}},
		{name: "a container named as the second twin is refused", obj: withContainer(hotNamed("proxy"), second),
			wantRules: []string{"hot-upgrade-twin-names-unique"}},
		{name: "a container named otherwise is accepted", obj: withContainer(hotNamed("proxy"), "proxy-3")},
	}
	rules := mustShippedRules(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := rules.Evaluate(t.Context(), tc.obj, nil)
			if err != nil {
				t.Fatal(err)
			}
			var fired []string
			for _, e := range got.Errors {
				fired = append(fired, strings.TrimPrefix(e.Origin, "sidecarset/"))
			}
			if diff := cmp.Diff(tc.wantRules, fired); diff != "" {
				t.Errorf("rules that refused it (-want +got):\n%s", diff)
			}
		})
	}
}
