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
)

func newFeatureGate() featuregate.MutableFeatureGate {
	gate := featuregate.NewFeatureGate()
	if err := gate.Add(map[featuregate.Feature]featuregate.FeatureSpec{
		SidecarSetPatchPodMetadataDefaultsAllowed: {Default: false, PreRelease: featuregate.Alpha},
	}); err != nil {
		panic(err) // only on a programming error: a duplicate gate
	}
	return gate
}
