package podstate

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/api/validate/content"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// The cache's compact form decodes to the state the annotations decode to
// (an empty map may be nil), and encodes back to the same bytes: the controller rewrites
// other SidecarSets' entries as OpenKruise wrote them.
func TestCompact_DecodesAsTheAnnotations(t *testing.T) {
	t.Parallel()
	cases := map[string]map[string]string{
		"injected by the webhook": {
			appsv1beta1.SidecarSetHashAnnotation:             `{"agent":{"updateTimestamp":"2026-11-24T10:00:00Z","hash":"w6z2f8x4c9d7v5b2","sidecarSetName":"agent","sidecarList":["agent","log"],"controllerRevision":"agent-6c9f8b7d5"},"mesh":{"updateTimestamp":"2026-11-24T10:00:07Z","hash":"8b7x4d9v","sidecarSetName":"mesh","sidecarList":["proxy"]}}`,
			appsv1beta1.SidecarSetHashWithoutImageAnnotation: `{"agent":{"updateTimestamp":"2026-11-24T10:00:00Z","hash":"v8b6x2w4","sidecarSetName":"agent","sidecarList":["agent","log"]}}`,
			appsv1beta1.SidecarSetListAnnotation:             "agent,mesh",
			"team.example.com/owner":                         "payments",
		},
		"OpenKruise's legacy hashes, a null and an empty sidecarList": {
			appsv1beta1.SidecarSetHashAnnotation:             `{"agent":"abc","mesh":"def"}`,
			appsv1beta1.SidecarSetHashWithoutImageAnnotation: `{"agent":{"updateTimestamp":null,"hash":"x","sidecarSetName":"","sidecarList":null},"mesh":{"updateTimestamp":"2026-11-24T10:00:00.5Z","hash":"y","sidecarSetName":"mesh","sidecarList":[]}}`,
		},
		"upgraded in place, hot-upgrade twins": {
			appsv1beta1.SidecarSetHashAnnotation:             `{"hot":{"updateTimestamp":"2026-11-24T10:00:00Z","hash":"h2","sidecarSetName":"hot","sidecarList":["sidecar"],"controllerRevision":"hot-2"}}`,
			appsv1beta1.InPlaceUpdateStateAnnotation:         `{"hot":{"revision":"h2","updateTimestamp":"2026-11-24T11:00:00Z","lastContainerStatuses":{"sidecar-1":{"imageID":"docker-pullable://busybox@sha256:4be4"},"sidecar-2":{}}},"other":{"revision":"o1","updateTimestamp":"2026-11-24T11:00:00Z","lastContainerStatuses":null}}`,
			appsv1beta1.WorkingHotUpgradeContainerAnnotation: `{"sidecar":"sidecar-2"}`,
			appsv1beta1.SidecarSetListAnnotation:             "hot",
		},
	}
	for name, annotations := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			want, err := Read(annotations)
			if err != nil {
				t.Fatal(err)
			}
			cached, ok := Compact(annotations)
			if !ok {
				t.Fatal("not compacted")
			}
			for _, k := range cachedKeys {
				if _, left := cached[k]; left {
					t.Errorf("the cached pod keeps %s", k)
				}
			}
			if cached["team.example.com/owner"] != annotations["team.example.com/owner"] ||
				cached[appsv1beta1.SidecarSetListAnnotation] != annotations[appsv1beta1.SidecarSetListAnnotation] {
				t.Errorf("other annotations changed: %v", cached)
			}
			got, err := Read(cached)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("decoded from the cache (-annotations +cache):\n%s", diff)
			}
			if encodeAll(got) != encodeAll(want) {
				t.Errorf("encodes differently once cached:\n%s\n%s", encodeAll(got), encodeAll(want))
			}
			injection, err := ReadInjection(cached)
			if err != nil || !cmp.Equal(injection.Hashes, want.Hashes, cmpopts.EquateEmpty()) || !cmp.Equal(injection.WorkingHotUpgrade, want.WorkingHotUpgrade, cmpopts.EquateEmpty()) {
				t.Errorf("ReadInjection of the cached pod: %v, %v", injection, err)
			}
		})
	}
}

// What the compact form cannot carry, and what does not decode, stays as
// the API server sent it: Read decodes or reports it as before.
func TestCompact_KeepsWhatItCannotCarry(t *testing.T) {
	t.Parallel()
	cases := map[string]map[string]string{
		"no state":  {appsv1beta1.SidecarSetListAnnotation: "agent", "a": "b"},
		"malformed": {appsv1beta1.SidecarSetHashAnnotation: `{"agent":`},
		"a separator in a value": {
			appsv1beta1.SidecarSetHashAnnotation: `{"agent":{"hash":"a\u001fb","sidecarSetName":"agent","sidecarList":["x"]}}`,
		},
		"an empty sidecar name": {
			appsv1beta1.SidecarSetHashAnnotation: `{"agent":{"hash":"a","sidecarSetName":"agent","sidecarList":[""]}}`,
		},
		"a null in-place entry": {appsv1beta1.InPlaceUpdateStateAnnotation: `{"agent":null}`},
	}
	for name, annotations := range cases {
		if got, ok := Compact(annotations); ok || !cmp.Equal(got, annotations) {
			t.Errorf("%s: compacted to %v", name, got)
		}
	}
}

// A pod cannot bring its own compact state: the key is no valid annotation
// key, so the API server refuses it before the cache ever sees it.
func TestCachedKey_IsNoAnnotationKey(t *testing.T) {
	t.Parallel()
	if errs := content.IsLabelKey(CachedKey); len(errs) == 0 {
		t.Errorf("%q is a valid annotation key", CachedKey)
	}
}

// The pods of a rollout hold a few distinct states, which every plan reads:
// a state read again is not decoded again, and its reading allocates only
// the pod's injected list.
func TestRead_CachedStateDecodedOnce(t *testing.T) {
	annotations, ok := Compact(map[string]string{
		appsv1beta1.SidecarSetHashAnnotation:     `{"agent":{"updateTimestamp":"2026-11-24T10:00:00Z","hash":"h2","sidecarSetName":"agent","sidecarList":["agent"],"controllerRevision":"agent-5d8f7c6b9"}}`,
		appsv1beta1.InPlaceUpdateStateAnnotation: `{"agent":{"revision":"h2","updateTimestamp":"2026-11-24T10:00:01Z","lastContainerStatuses":{"agent":{"imageID":"docker.io/library/agent@sha256:1"}}}}`,
		appsv1beta1.SidecarSetListAnnotation:     "agent",
	})
	if !ok {
		t.Fatal("the state does not compact")
	}
	first, err := Read(annotations)
	if err != nil {
		t.Fatal(err)
	}
	if allocs := testing.AllocsPerRun(100, func() {
		again, _ := Read(annotations)
		if again.Hashes["agent"].ControllerRevision != "agent-5d8f7c6b9" || again.InPlace["agent"] != first.InPlace["agent"] {
			t.Fatalf("read again: %+v, want the state read first", again)
		}
	}); allocs > 1 {
		t.Errorf("reading a cached state again made %.0f allocations, want at most 1 (the injected list)", allocs)
	}
}

// Reading a cached pod's state costs a fraction of decoding its JSON.
func BenchmarkRead(b *testing.B) {
	raw := map[string]string{
		appsv1beta1.SidecarSetHashAnnotation:             `{"extra-07":{"updateTimestamp":"2026-11-24T10:00:00Z","hash":"8b7x4d9v2wz6f4c2","sidecarSetName":"scale-0007","sidecarList":["extra-07"],"controllerRevision":"scale-0007-5d8f7c6b9"},"scale-rollout":{"updateTimestamp":"2026-11-24T10:00:00Z","hash":"w6z2f8x4c9d7v5b2","sidecarSetName":"scale-rollout","sidecarList":["agent"],"controllerRevision":"scale-rollout-6c9f8b7d5"}}`,
		appsv1beta1.SidecarSetHashWithoutImageAnnotation: `{"extra-07":{"updateTimestamp":"2026-11-24T10:00:00Z","hash":"4c9x2w8v6b7d5f2z","sidecarSetName":"scale-0007","sidecarList":["extra-07"]},"scale-rollout":{"updateTimestamp":"2026-11-24T10:00:00Z","hash":"v8b6x2w4c9z7d5f2","sidecarSetName":"scale-rollout","sidecarList":["agent"]}}`,
		appsv1beta1.SidecarSetListAnnotation:             "scale-0007,scale-rollout",
	}
	cached, _ := Compact(raw)
	for name, annotations := range map[string]map[string]string{"json": raw, "cached": cached} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Read(annotations); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// encodeAll encodes a state's maps as the controller does, which writes an
// annotation from a copy of the decoded map (an empty one when nil).
func encodeAll(s State) string {
	orEmpty := func(h Hashes) Hashes {
		if h == nil {
			return Hashes{}
		}
		return h
	}
	inPlace := s.InPlace
	if inPlace == nil {
		inPlace = map[string]*InPlaceUpdateState{}
	}
	working := s.WorkingHotUpgrade
	if working == nil {
		working = map[string]string{}
	}
	return orEmpty(s.Hashes).Encode() + orEmpty(s.HashesWithoutImage).Encode() + EncodeInPlaceState(inPlace) + EncodeStringMap(working)
}
