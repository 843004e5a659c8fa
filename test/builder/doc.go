// Package builder holds the wrappers that build the objects the integration
// and end-to-end tests create, in the style of kueue's and jobset's testing
// wrappers: MakeX fills sane defaults, the setters chain, Obj returns the
// object and Clone makes an independent variant. Builders never call the API.
package builder
