// Package policy holds the operator's compiled policies: the CEL rules that
// validate SidecarSets and the patchPodMetadata whitelist of the
// kruise-configuration ConfigMap. Policies compile once, when they load, and
// are evaluated from an immutable snapshot. What patchPodMetadata writes on
// a pod, under the whitelist's decision (Keys), is policy/podmeta's.
package policy
