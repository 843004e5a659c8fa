package main

import (
	"k8s.io/component-base/featuregate"
)

// Feature gates of the operator, set with --feature-gates. They are resolved
// once here and passed to the components as plain booleans; business code
// never reads a gate.
const (
	// SidecarSetPatchPodMetadataDefaultsAllowed admits patchPodMetadata keys
	// when the kruise-configuration whitelist is missing or has no rule for
	// the SidecarSet (OpenKruise's gate of the same name).
	// owner: sidecarset-operator; alpha; default off.
	SidecarSetPatchPodMetadataDefaultsAllowed featuregate.Feature = "SidecarSetPatchPodMetadataDefaultsAllowed"

	// EnableSortSidecarContainerByName orders the injected containers of
	// several SidecarSets by container name instead of by SidecarSet name
	// then spec order (OpenKruise's gate of the same name; both orders are
	// deterministic here).
	// owner: sidecarset-operator; alpha; default off.
	EnableSortSidecarContainerByName featuregate.Feature = "EnableSortSidecarContainerByName"
)

func newFeatureGate() featuregate.MutableFeatureGate {
	gate := featuregate.NewFeatureGate()
	if err := gate.Add(map[featuregate.Feature]featuregate.FeatureSpec{
		SidecarSetPatchPodMetadataDefaultsAllowed: {Default: false, PreRelease: featuregate.Alpha},
		EnableSortSidecarContainerByName:          {Default: false, PreRelease: featuregate.Alpha},
	}); err != nil {
		panic(err) // only on a programming error: a duplicate gate
	}
	return gate
}
