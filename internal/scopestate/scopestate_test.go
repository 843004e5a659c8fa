package scopestate

import (
	"slices"
	"testing"
)

func TestState_NotifiesEachChange(t *testing.T) {
	var s State
	if _, ok := s.Degraded("a"); ok {
		t.Fatal("an empty state reports a degraded SidecarSet")
	}
	var got []string
	s.OnChange(func(name string) { got = append(got, name) })
	step := func(degraded map[string]string, want ...string) {
		t.Helper()
		got = nil
		s.Set(degraded)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("notified %v, want %v", got, want)
		}
	}
	step(map[string]string{"a": "x", "b": "x"}, "a", "b")
	step(map[string]string{"a": "x", "b": "x"})
	step(map[string]string{"a": "y", "c": "x"}, "a", "b", "c")
	if msg, ok := s.Degraded("a"); !ok || msg != "y" {
		t.Fatalf("a: %q %v", msg, ok)
	}
	step(nil, "a", "c")
	if _, ok := s.Degraded("a"); ok {
		t.Fatal("a cleared entry is still reported")
	}
}
