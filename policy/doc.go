// Package policy holds the operator's compiled policies: the CEL rules that
// validate SidecarSets, the patchPodMetadata whitelist of the
// kruise-configuration ConfigMap, and the patchPodMetadata semantics.
// Policies compile once, when they load, and are evaluated from an immutable
// snapshot.
package policy
