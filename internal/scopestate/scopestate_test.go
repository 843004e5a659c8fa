package scopestate

import (
	"slices"
	"testing"
	"time"
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

func TestState_WrittenKeepsTheFirstTimeOfAGeneration(t *testing.T) {
	var s State
	if _, ok := s.WrittenAt("a", 1); ok {
		t.Fatal("an empty state reports a written generation")
	}
	t1 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	t2 := t1.Add(time.Minute)
	s.Written(map[string]int64{"a": 1, "b": 3}, time.Time{})
	if at, ok := s.WrittenAt("a", 1); !ok || !at.IsZero() {
		t.Fatalf("a: %v %v, want written with no time (no write was needed)", at, ok)
	}
	s.Written(map[string]int64{"a": 2, "b": 3}, t1)
	s.Written(map[string]int64{"a": 2, "b": 3}, t2)
	if at, ok := s.WrittenAt("a", 2); !ok || !at.Equal(t1) {
		t.Fatalf("a: %v %v, want generation 2 written at %v", at, ok, t1)
	}
	if _, ok := s.WrittenAt("a", 1); ok {
		t.Fatal("a's former generation is still reported")
	}
	if at, ok := s.WrittenAt("b", 3); !ok || !at.IsZero() {
		t.Fatalf("b: %v %v, want its first record kept", at, ok)
	}
	s.Written(map[string]int64{"a": 2}, t2)
	if _, ok := s.WrittenAt("b", 3); ok {
		t.Fatal("a deleted SidecarSet is still reported")
	}
}
