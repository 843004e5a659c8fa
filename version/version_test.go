package version

import (
	"strings"
	"testing"
)

func TestCanonical(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":             DevelVersion,
		"0.1.0":        "v0.1.0",
		"v0.1.0":       "v0.1.0",
		"1.2.3+build":  "v1.2.3+build",
		"1.2.3-rc.1":   "v1.2.3-rc.1",
		"1.2":          "1.2",
		"v1.2.3.4":     "1.2.3.4",
		"not-a-number": "not-a-number",
	} {
		if got := Canonical(in); got != want {
			t.Errorf("Canonical(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestInfo_Devel(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]bool{"v0.1.0": false, "v1.0.0-rc.1": false, DevelVersion: true, "1.2": true, "0.1.0": true} {
		if got := (Info{Version: v}).Devel(); got != want {
			t.Errorf("Info{%q}.Devel() = %v, want %v", v, got, want)
		}
	}
}

func TestAnnotations_RoundTrip(t *testing.T) {
	t.Parallel()
	in := Info{Version: "v0.2.1", Revision: "0123abc"}
	got, ok := FromAnnotations(in.Annotations())
	if !ok || got != in {
		t.Fatalf("FromAnnotations(Annotations()) = %+v, %v; want %+v, true", got, ok, in)
	}
	if _, ok := FromAnnotations(map[string]string{"other": "x"}); ok {
		t.Error("FromAnnotations without the version annotation found one")
	}
	if _, ok := FromAnnotations(map[string]string{Annotation: ""}); ok {
		t.Error("FromAnnotations with an empty version found one")
	}
}

func TestLDFlags_NameThisPackage(t *testing.T) {
	t.Parallel()
	got := strings.Join(LDFlags("0.1.0", "abc"), " ")
	want := "-X github.com/sidecarset-operator/sidecarset-operator/version.version=0.1.0 " +
		"-X github.com/sidecarset-operator/sidecarset-operator/version.revision=abc"
	if got != want {
		t.Errorf("LDFlags = %q, want %q", got, want)
	}
}

// A test binary is built without the release ldflags.
func TestGet_WithoutLDFlagsIsDevel(t *testing.T) {
	t.Parallel()
	if got := Get(); got.Version != DevelVersion || !got.Devel() {
		t.Errorf("Get() = %+v, want the development version", got)
	}
}

func TestCompare(t *testing.T) {
	t.Parallel()
	v := func(s, rev string) Info { return Info{Version: s, Revision: rev} }
	for _, c := range []struct {
		name             string
		plugin, operator Info
		found            bool
		want             SkewLevel
	}{
		{"same release and commit", v("v0.1.0", "a"), v("v0.1.0", "a"), true, SkewNone},
		{"same release, one commit unknown", v("v0.1.0", ""), v("v0.1.0", "a"), true, SkewNone},
		{"same release, other commits", v("v0.1.0", "a"), v("v0.1.0", "b"), true, SkewPatch},
		{"other patch", v("v0.1.1", "a"), v("v0.1.0", "a"), true, SkewPatch},
		{"other pre-release", v("v0.2.0-rc.1", ""), v("v0.2.0", ""), true, SkewPatch},
		{"older minor", v("v0.1.0", ""), v("v0.2.0", ""), true, SkewMinor},
		{"newer minor", v("v0.3.0", ""), v("v0.2.5", ""), true, SkewMinor},
		{"other major", v("v1.2.0", ""), v("v2.2.0", ""), true, SkewMinor},
		{"operator not read", v("v0.1.0", ""), Info{}, false, SkewUnknown},
		{"development plugin", v(DevelVersion, ""), v("v0.1.0", ""), true, SkewUnknown},
		{"development operator", v("v0.1.0", ""), v(DevelVersion, ""), true, SkewUnknown},
		{"both development builds", v(DevelVersion, ""), v(DevelVersion, ""), true, SkewUnknown},
		{"operator version not semantic", v("v0.1.0", ""), v("latest", ""), true, SkewUnknown},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := Compare(c.plugin, c.operator, c.found)
			if got.Level != c.want {
				t.Fatalf("Compare(%+v, %+v, %v) = %+v, want level %s", c.plugin, c.operator, c.found, got, c.want)
			}
			if (got.Message == "") != (c.want == SkewNone) {
				t.Errorf("message %q for level %s", got.Message, got.Level)
			}
			if got.Warn() != (c.want == SkewPatch || c.want == SkewMinor) {
				t.Errorf("Warn() = %v for level %s", got.Warn(), got.Level)
			}
		})
	}
}
