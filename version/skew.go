package version

import "fmt"

// SkewLevel grades how far a plugin is from the operator it talks to.
type SkewLevel string

// The skew levels.
const (
	// SkewNone: the same release (and, when both are known, the same commit).
	SkewNone SkewLevel = "None"
	// SkewUnknown: the operator's version could not be read, or one side is
	// a development build: nothing can be said.
	SkewUnknown SkewLevel = "Unknown"
	// SkewPatch: the same MAJOR.MINOR, another patch release or commit.
	SkewPatch SkewLevel = "Patch"
	// SkewMinor: another MAJOR.MINOR.
	SkewMinor SkewLevel = "Minor"
)

// Skew is what Compare finds.
type Skew struct {
	Level SkewLevel `json:"level"`
	// Message says it to the user; empty for SkewNone.
	Message string `json:"message,omitempty"`
}

// Warn reports whether the skew deserves a warning: the plugin runs the
// webhook's and the controller's code as built into it, so any other
// release than the operator's can decide differently.
func (s Skew) Warn() bool { return s.Level == SkewPatch || s.Level == SkewMinor }

// Compare grades the plugin's version against the operator's; found is
// false when the operator's version was not read.
func Compare(plugin, operator Info, found bool) Skew {
	switch {
	case !found:
		return Skew{Level: SkewUnknown, Message: "the operator's version is unknown: explain, inject and plan run the plugin's code"}
	case plugin.Devel() || operator.Devel():
		return Skew{Level: SkewUnknown, Message: fmt.Sprintf(
			"the plugin (%s) or the operator (%s) is a development build: their versions cannot be compared", plugin, operator)}
	}
	p, _ := parse(plugin.Version)
	o, _ := parse(operator.Version)
	switch {
	case p.Major() != o.Major() || p.Minor() != o.Minor():
		return Skew{Level: SkewMinor, Message: fmt.Sprintf(
			"the plugin is %s and the operator %s: explain, inject and plan may decide differently from the operator; "+
				"install the plugin of the operator's release", plugin.Version, operator.Version)}
	case p.Patch() != o.Patch() || p.PreRelease() != o.PreRelease():
		return Skew{Level: SkewPatch, Message: fmt.Sprintf(
			"the plugin is %s and the operator %s: a patch release can change what explain, inject and plan decide; "+
				"install the plugin of the operator's release", plugin.Version, operator.Version)}
	case plugin.Revision != "" && operator.Revision != "" && plugin.Revision != operator.Revision:
		return Skew{Level: SkewPatch, Message: fmt.Sprintf(
			"the plugin and the operator are both %s but built from different commits (%s, %s)",
			plugin.Version, plugin.Revision, operator.Revision)}
	}
	return Skew{Level: SkewNone}
}
