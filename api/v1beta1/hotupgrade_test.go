package v1beta1

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

func TestInjectedNames_HotUpgradeTwins(t *testing.T) {
	t.Parallel()
	hot := func(name string, native bool) *SidecarContainer {
		c := &SidecarContainer{Container: corev1.Container{Name: name},
			UpgradeStrategy: SidecarContainerUpgradeStrategy{UpgradeType: SidecarContainerHotUpgrade, HotUpgradeEmptyImage: "empty"}}
		if native {
			c.RestartPolicy = new(corev1.ContainerRestartPolicyAlways)
		}
		return c
	}
	tests := []struct {
		name    string
		sc      *SidecarContainer
		isInit  bool
		want    []string
		wantHot bool
	}{
		{name: "a cold container keeps its name", sc: &SidecarContainer{Container: corev1.Container{Name: "cold"}}, want: []string{"cold"}},
		{name: "a hot-upgrade container becomes two twins, -1 then -2", sc: hot("envoy", false), want: []string{"envoy-1", "envoy-2"}, wantHot: true},
		{name: "a hot-upgrade native sidecar becomes two twins", sc: hot("envoy", true), isInit: true, want: []string{"envoy-1", "envoy-2"}, wantHot: true},
		{name: "a hot-upgrade plain init container is not doubled", sc: hot("setup", false), isInit: true, want: []string{"setup"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := IsHotUpgrade(tc.sc, tc.isInit); got != tc.wantHot {
				t.Errorf("IsHotUpgrade = %v, want %v", got, tc.wantHot)
			}
			if diff := cmp.Diff(tc.want, InjectedNames(tc.sc, tc.isInit)); diff != "" {
				t.Errorf("names (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMaxHotUpgradeNameLength_TwinsAreContainerNames checks the limit
// against the API server's rule for container names: the longest allowed
// name's twins are valid, one character more is not.
func TestMaxHotUpgradeNameLength_TwinsAreContainerNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		length    int
		wantValid bool
	}{
		{name: "the longest allowed name has valid twins", length: MaxHotUpgradeNameLength, wantValid: true},
		{name: "one character more makes twins too long", length: MaxHotUpgradeNameLength + 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			first, second := HotUpgradeTwins(strings.Repeat("a", tc.length))
			for _, twin := range []string{first, second} {
				if valid := len(validation.IsDNS1123Label(twin)) == 0; valid != tc.wantValid {
					t.Errorf("twin of %d characters valid = %v, want %v", len(twin), valid, tc.wantValid)
				}
			}
		})
	}
}
