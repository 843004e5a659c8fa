package rollout

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
)

const (
	digestA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	digestB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

func TestUpdateComplete_Rules(t *testing.T) {
	t.Parallel()
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	waiting := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}
	status := func(image, id string, state corev1.ContainerState) *corev1.ContainerStatus {
		return &corev1.ContainerStatus{Name: "c", Image: image, ImageID: id, State: state}
	}
	rec := func(id string) *podstate.ContainerStatus { return &podstate.ContainerStatus{ImageID: id} }
	oldID, newID := "docker.io/library/nginx@"+digestA, "docker.io/library/nginx@"+digestB
	tests := []struct {
		name     string
		spec     string
		status   *corev1.ContainerStatus
		recorded *podstate.ContainerStatus
		want     bool
	}{
		{"a container never changed in place is complete", "nginx:1.25", status("nginx:1.24", oldID, running), nil, true},
		{"a tag change completes once the new image runs with a new imageID", "nginx:1.25",
			status("nginx:1.25", newID, running), rec(oldID), true},
		{"a tag change is in flight while the old container reports the old image", "nginx:1.25",
			status("nginx:1.24", oldID, running), rec(oldID), false},
		{"a fully-qualified status image names the same image", "nginx:1.25",
			status("docker.io/library/nginx:1.25", newID, running), rec(oldID), true},
		{"a missing tag is latest", "nginx",
			status("docker.io/library/nginx:latest", newID, running), rec(oldID), true},
		{"another image with a new imageID is not complete", "nginx:1.25",
			status("redis:7", newID, running), rec(oldID), false},
		{"a digest-pinned image completes when the imageID carries its digest", "nginx@" + digestB,
			status("docker.io/library/nginx:1.25", "docker-pullable://nginx@"+digestB, running), rec(oldID), true},
		{"a digest-pinned image accepts a bare digest imageID", "nginx@" + digestB,
			status("sha256:whatever", digestB, running), rec(oldID), true},
		{"a digest-pinned image with a tag is compared by digest", "nginx:1.25@" + digestB,
			status("nginx:1.25", newID, running), rec(oldID), true},
		{"a digest-pinned image is not complete on another digest", "nginx@" + digestB,
			status("nginx@"+digestB, oldID, running), rec(oldID), false},
		{"re-tagging the same digest completes once the restarted container runs (OpenKruise: never)", "nginx:1.23",
			status("docker.io/library/nginx:1.23", oldID, running), rec(oldID), true},
		{"re-tagging the same digest is in flight before the restart", "nginx:1.23",
			status("nginx", oldID, running), rec(oldID), false},
		{"a bad image reporting its new name with the old imageID while waiting is not complete", "nginx:bad",
			status("nginx:bad", oldID, waiting), rec(oldID), false},
		{"a bad image reporting the old container while waiting is not complete", "nginx:bad",
			status("nginx:1.24", oldID, waiting), rec(oldID), false},
		{"a missing status is not complete", "nginx:1.25", nil, rec(oldID), false},
		{"an empty imageID is not complete", "nginx:1.25", status("nginx:1.25", "", waiting), rec(oldID), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := updateComplete(tc.spec, tc.status, tc.recorded); got != tc.want {
				t.Errorf("updateComplete(%q) = %v, want %v", tc.spec, got, tc.want)
			}
		})
	}
}

func TestImageNames_Normalization(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		a, b       string
		want       bool
		wantDigest string
	}{
		{"short and fully-qualified names match", "nginx:1.25", "docker.io/library/nginx:1.25", true, ""},
		{"no tag means latest", "nginx", "nginx:latest", true, ""},
		{"different tags differ", "nginx:1.25", "nginx:1.26", false, ""},
		{"a private registry keeps its host", "registry.example.com:5000/team/agent:2", "registry.example.com:5000/team/agent:2", true, ""},
		{"unparsable references compare as strings", "NOT A REF", "not a ref", false, ""},
		{"a digest reference reports its digest", "nginx@" + digestA, "nginx@" + digestA, true, digestA},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := sameImage(tc.a, tc.b); got != tc.want {
				t.Errorf("sameImage(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
			}
			if got := pinnedDigest(tc.a); got != tc.wantDigest {
				t.Errorf("pinnedDigest(%q) = %q, want %q", tc.a, got, tc.wantDigest)
			}
		})
	}
}

// A plan compares the images of every pod, a handful of distinct strings: a
// reference parsed once is not parsed again (distribution/reference parses
// with regular expressions, too costly to run for every pod of every plan).
func TestImageNames_ParsedOnce(t *testing.T) {
	st := &corev1.ContainerStatus{Name: "c", Image: "docker.io/library/nginx:1.25", ImageID: "docker.io/library/nginx@" + digestB,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	recorded := &podstate.ContainerStatus{ImageID: "docker.io/library/nginx@" + digestA}
	if !updateComplete("nginx:1.25", st, recorded) {
		t.Fatal("the update is not complete")
	}
	if allocs := testing.AllocsPerRun(100, func() {
		if !updateComplete("nginx:1.25", st, recorded) || imageIDDigest(st.ImageID) != digestB {
			t.Fatal("the update is not complete")
		}
	}); allocs > 4 {
		t.Errorf("comparing images parsed before made %.0f allocations, want at most 4 (the memo's keys)", allocs)
	}
}

func TestImageIDDigest_Forms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, id, want string
	}{
		{"docker-pullable scheme", "docker-pullable://nginx@" + digestA, digestA},
		{"containerd repo digest", "docker.io/library/nginx@" + digestA, digestA},
		{"bare digest", digestA, digestA},
		{"empty", "", ""},
		{"a tag is no digest", "nginx:1.25", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, imageIDDigest(tc.id)); diff != "" {
				t.Errorf("imageIDDigest(%q) (-want +got):\n%s", tc.id, diff)
			}
		})
	}
}
