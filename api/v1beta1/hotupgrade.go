package v1beta1

import (
	"k8s.io/apimachinery/pkg/util/validation"
)

// A hot-upgrade sidecar X is injected as two containers, its twins: X-1,
// which starts as the working one with the real image, and X-2, which
// starts idle with the empty image; an upgrade swaps their roles. X itself
// keys the twins' annotations.
const (
	// HotUpgradeFirstTwinSuffix names the first twin, X-1.
	HotUpgradeFirstTwinSuffix = "-1"
	// HotUpgradeSecondTwinSuffix names the second twin, X-2.
	HotUpgradeSecondTwinSuffix = "-2"
	// MaxHotUpgradeNameLength is the longest name of a hot-upgrade sidecar:
	// its twins' names must be container names (DNS-1123 labels, at most
	// 63 characters). The policy rule hot-upgrade-names-fit-twins
	// (policy/rules) enforces it; a test checks the two agree.
	MaxHotUpgradeNameLength = validation.DNS1123LabelMaxLength - len(HotUpgradeFirstTwinSuffix)
)

// HotUpgradeTwins returns the names of the two containers a hot-upgrade
// sidecar is injected as: X-1, then X-2.
func HotUpgradeTwins(name string) (first, second string) {
	return name + HotUpgradeFirstTwinSuffix, name + HotUpgradeSecondTwinSuffix
}

// IsHotUpgrade reports whether a sidecar is injected as twins: its
// upgradeType is HotUpgrade and it keeps running (a container, or an init
// container that is a native sidecar; a plain init container runs once and
// is injected under its own name).
func IsHotUpgrade(c *SidecarContainer, isInit bool) bool {
	return c.UpgradeStrategy.UpgradeType == SidecarContainerHotUpgrade && (!isInit || IsNativeSidecar(&c.Container))
}

// InjectedNames returns the names of the containers a sidecar is injected
// as: its twins when IsHotUpgrade, else its own name.
func InjectedNames(c *SidecarContainer, isInit bool) []string {
	if IsHotUpgrade(c, isInit) {
		first, second := HotUpgradeTwins(c.Name)
		return []string{first, second}
	}
	return []string{c.Name}
}
