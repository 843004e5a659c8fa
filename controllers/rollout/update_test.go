package rollout

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/policy"
	"github.com/sidecarset-operator/sidecarset-operator/policy/podmeta"
)

func TestBuildUpdate_ColdPatch(t *testing.T) {
	t.Parallel()
	always := corev1.ContainerRestartPolicyAlways
	v1 := makeSet("s").cold("log", "log:1").cold("agent", "agent:1")
	v1.Spec.InitContainers = []appsv1beta1.SidecarContainer{
		{Container: corev1.Container{Name: "init", Image: "init:1"}},
		{Container: corev1.Container{Name: "native", Image: "native:1", RestartPolicy: &always}},
	}
	v2 := v1.clone().image("agent", "agent:2")
	pod := makePod("p").injected(t, v1.obj()).obj()
	pod.ResourceVersion = "42"
	set := v2.obj()
	h := hashesOf(t, set)

	plan := compute(t, input(t, set, pod))
	if len(plan.Updates) != 1 {
		t.Fatalf("got %d updates, want 1", len(plan.Updates))
	}
	u := plan.Updates[0]
	if diff := cmp.Diff(PodUpdate{Pod: keyOf(pod), UID: pod.UID, ResourceVersion: "42", Hash: h.Hash}, u,
		cmpIgnorePatch); diff != "" {
		t.Errorf("update (-want +got):\n%s", diff)
	}

	wantHashes := podstate.Hashes{"s": {
		UpdateTimestamp: metav1.NewTime(t0), Hash: h.Hash, SidecarSetName: "s",
		SidecarList: []string{"agent", "log", "native"}, ControllerRevision: "s-rev",
	}}
	wantState := map[string]*podstate.InPlaceUpdateState{"s": {
		Revision: h.Hash, UpdateTimestamp: metav1.NewTime(t0),
		LastContainerStatuses: map[string]podstate.ContainerStatus{"agent": {ImageID: imageID("agent:1")}},
	}}
	want := map[string]any{
		"metadata": map[string]any{
			"resourceVersion": "42",
			"annotations": map[string]any{
				appsv1beta1.SidecarSetHashAnnotation:     wantHashes.Encode(),
				appsv1beta1.InPlaceUpdateStateAnnotation: podstate.EncodeInPlaceState(wantState),
			},
		},
		"spec": map[string]any{"containers": []any{map[string]any{"name": "agent", "image": "agent:2"}}},
	}
	var got map[string]any
	if err := json.Unmarshal(u.Patch, &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("patch (-want +got):\n%s", diff)
	}

	patched := applyPatch(t, pod, u)
	wantContainers := []corev1.Container{{Name: "app", Image: "app:1"}, {Name: "log", Image: "log:1"}, {Name: "agent", Image: "agent:2"}}
	if diff := cmp.Diff(wantContainers, patched.Spec.Containers); diff != "" {
		t.Errorf("patched containers (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(pod.Annotations[appsv1beta1.SidecarSetHashWithoutImageAnnotation],
		patched.Annotations[appsv1beta1.SidecarSetHashWithoutImageAnnotation]); diff != "" {
		t.Errorf("the without-image annotation changed (-want +got):\n%s", diff)
	}
}

var cmpIgnorePatch = cmp.FilterPath(func(p cmp.Path) bool { return p.String() == "Patch" }, cmp.Ignore())

func TestBuildUpdate_Annotations(t *testing.T) {
	t.Parallel()
	v1 := makeSet("s").cold("agent", "agent:1")
	v2 := v1.clone().image("agent", "agent:2")
	h2 := hashesOf(t, v2.obj())
	tests := []struct {
		name string
		set  *setWrapper
		pod  *podWrapper
		// want lists annotations the patch must set ("" = must not set).
		want map[string]string
	}{
		{
			name: "an existing in-place state entry keeps its revision and timestamp",
			set:  v2,
			pod:  makePod("p").injected(t, v1.obj()).inPlace("s", map[string]string{"other": "id-x"}).inPlace("t", map[string]string{"c": "id-t"}),
			want: map[string]string{appsv1beta1.InPlaceUpdateStateAnnotation: podstate.EncodeInPlaceState(map[string]*podstate.InPlaceUpdateState{
				"s": {Revision: "r", UpdateTimestamp: metav1.NewTime(t0.Add(-time.Hour)), LastContainerStatuses: map[string]podstate.ContainerStatus{
					"other": {ImageID: "id-x"}, "agent": {ImageID: imageID("agent:1")},
				}},
				"t": {Revision: "r", UpdateTimestamp: metav1.NewTime(t0.Add(-time.Hour)), LastContainerStatuses: map[string]podstate.ContainerStatus{"c": {ImageID: "id-t"}}},
			})},
		},
		{
			name: "a legacy hash annotation is rewritten in the current form, other SidecarSets kept",
			set:  v2,
			pod:  makePod("p").injected(t, v1.obj()).annotation(appsv1beta1.SidecarSetHashAnnotation, `{"s":"old","t":"th"}`),
			want: map[string]string{appsv1beta1.SidecarSetHashAnnotation: podstate.Hashes{
				"s": {UpdateTimestamp: metav1.NewTime(t0), Hash: h2.Hash, SidecarSetName: "s", SidecarList: []string{"agent"}, ControllerRevision: "s-rev"},
				"t": {Hash: "th", SidecarSetName: "t"},
			}.Encode()},
		},
		{
			name: "a pod already on the images gets only its hash rewritten",
			set:  v2,
			pod: func() *podWrapper {
				p := makePod("p").injected(t, v1.obj())
				p.spec("agent").Image = "agent:2"
				*p.status("agent") = runningStatus("agent", "agent:2")
				return p
			}(),
			want: map[string]string{appsv1beta1.InPlaceUpdateStateAnnotation: ""},
		},
		{
			name: "patchPodMetadata overwrites and retains as the policy says",
			set: v2.clone().patchMetadata(appsv1beta1.SidecarSetOverwritePatchPolicy, "over", "new").
				patchMetadata(appsv1beta1.SidecarSetRetainPatchPolicy, "keep", "new", "add", "new"),
			pod:  makePod("p").injected(t, v1.obj()).annotation("over", "old").annotation("keep", "old"),
			want: map[string]string{"over": "new", "keep": "", "add": "new"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			anns := patchedAnnotations(t, compute(t, input(t, tc.set.obj(), tc.pod.obj())))
			for k, want := range tc.want {
				got, ok := anns[k]
				if want == "" && ok {
					t.Errorf("annotation %s set to %q, want it untouched", k, got)
				}
				if want != "" && got != want {
					t.Errorf("annotation %s:\n got %s\nwant %s", k, got, want)
				}
			}
		})
	}
}

func TestPlan_PatchPodMetadataFailureBlocksThePod(t *testing.T) {
	t.Parallel()
	v1 := makeSet("s").cold("agent", "agent:1")
	v2 := v1.clone().image("agent", "agent:2").patchMetadata(appsv1beta1.SidecarSetMergePatchJSONPatchPolicy, "cfg", `{"a":1}`)
	bad := makePod("bad").injected(t, v1.obj()).annotation("cfg", "not json").created(t0)
	good := makePod("good").injected(t, v1.obj())
	plan := compute(t, input(t, v2.obj(), pods(bad, good)...))
	if diff := cmp.Diff([]string{"good"}, updatedNames(plan.Updates)); diff != "" {
		t.Errorf("updates (-want +got):\n%s", diff)
	}
	if len(plan.Blocked) != 1 || plan.Blocked[0].Pod.Name != "bad" {
		t.Errorf("blocked = %v, want the pod with the malformed annotation", plan.Blocked)
	}
}

// TestBuildUpdate_PatchPodMetadataNeverWritesSidecarSetState: the upgrade
// re-applies patchPodMetadata under the same rule as injection, so a key
// holding SidecarSet state (the hash annotation, a hot-upgrade version) is
// never overwritten by it.
func TestBuildUpdate_PatchPodMetadataNeverWritesSidecarSetState(t *testing.T) {
	t.Parallel()
	v1 := makeSet("s").cold("agent", "agent:1")
	v2 := v1.clone().image("agent", "agent:2").patchMetadata(appsv1beta1.SidecarSetOverwritePatchPolicy,
		appsv1beta1.SidecarSetHashAnnotation, `{"forged":"x"}`,
		podstate.VersionKey("agent-1"), "9",
		"team.example.com/owner", "platform")
	h2 := hashesOf(t, v2.obj())
	pod := makePod("p").injected(t, v1.obj())

	plan := compute(t, input(t, v2.obj(), pod.obj()))
	anns := patchedAnnotations(t, plan)
	hashes, err := podstate.DecodeHashes(anns[appsv1beta1.SidecarSetHashAnnotation])
	if err != nil {
		t.Fatalf("the patched hash annotation %q does not decode: %v", anns[appsv1beta1.SidecarSetHashAnnotation], err)
	}
	if got := hashes["s"].Hash; got != h2.Hash {
		t.Errorf("the patched hash annotation is %s, want the SidecarSet's entry with hash %s", anns[appsv1beta1.SidecarSetHashAnnotation], h2.Hash)
	}
	if v, ok := anns[podstate.VersionKey("agent-1")]; ok {
		t.Errorf("the patch sets %s to %q, want it untouched", podstate.VersionKey("agent-1"), v)
	}
	if got := anns["team.example.com/owner"]; got != "platform" {
		t.Errorf("annotation team.example.com/owner = %q, want %q", got, "platform")
	}
}

// TestPlan_PatchPodMetadataUnderTheWhitelistInForce: an upgrade writes only
// the keys the whitelist in force allows (it may have changed since the
// SidecarSet was admitted), and the plan says which it left out and why.
func TestPlan_PatchPodMetadataUnderTheWhitelistInForce(t *testing.T) {
	t.Parallel()
	w, err := policy.ParseWhitelist(`{"rules":[{"allowedAnnotationKeyExprs":["^oom-score$"]}]}`)
	if err != nil {
		t.Fatal(err)
	}
	v1 := makeSet("s").cold("agent", "agent:1")
	v2 := v1.clone().image("agent", "agent:2").patchMetadata(appsv1beta1.SidecarSetOverwritePatchPolicy,
		"oom-score", "1", "team.example.com/owner", "platform", appsv1beta1.SidecarSetListAnnotation, "forged")
	in := input(t, v2.obj(), pods(makePod("a").injected(t, v1.obj()), makePod("b").injected(t, v1.obj()))...)
	in.Whitelist = podmeta.Whitelist{Snapshot: &policy.Snapshot{Whitelist: w, Present: true}}

	plan := compute(t, in)
	anns := patchedAnnotations(t, plan)
	if anns["oom-score"] != "1" {
		t.Errorf("annotation oom-score = %q, want 1", anns["oom-score"])
	}
	for _, k := range []string{"team.example.com/owner", appsv1beta1.SidecarSetListAnnotation} {
		if v, ok := anns[k]; ok {
			t.Errorf("the patch sets %s to %q, want it untouched", k, v)
		}
	}
	want := []string{
		`SidecarSet "s": patchPodMetadata: annotation kruise.io/sidecarset-injected-list holds SidecarSet state and was not patched`,
		`SidecarSet "s": patchPodMetadata: annotation team.example.com/owner was not patched: ` +
			`sidecarSet patch metadata annotation(team.example.com/owner) is not allowed: ` +
			`it matches no pattern of the whitelist rules that select this SidecarSet: rules[0] ["^oom-score$"]`,
	}
	if diff := cmp.Diff(want, plan.Warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

// A sidecar left out at injection because the pod has a container of its
// name (the pod's own) is not in the pod's sidecarList: an upgrade of the
// SidecarSet never gives that container the sidecar's image, and the list
// stays as injected.
func TestBuildUpdate_LeavesThePodsOwnContainerOfASidecarsName(t *testing.T) {
	t.Parallel()
	v1 := makeSet("s").cold("log-agent", "agent:1").cold("metrics", "metrics:1")
	v2 := v1.clone().image("log-agent", "agent:2").image("metrics", "metrics:2")
	h1 := hashesOf(t, v1.obj())
	pod := makePod("p").container("log-agent", "my-own-agent:7").container("metrics", "metrics:1").
		setHash("s", h1.Hash, h1.WithoutImage, []string{"metrics"}).obj()

	plan := compute(t, input(t, v2.obj(), pod))
	if len(plan.Updates) != 1 {
		t.Fatalf("got %d updates, want 1", len(plan.Updates))
	}
	patched := applyPatch(t, pod, plan.Updates[0])
	if got := specContainer(patched, "log-agent").Image; got != "my-own-agent:7" {
		t.Errorf("the pod's own log-agent container got image %s", got)
	}
	if got := specContainer(patched, "metrics").Image; got != "metrics:2" {
		t.Errorf("metrics image = %s, want metrics:2", got)
	}
	state, err := podstate.Read(patched.Annotations)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"metrics"}, state.Hashes["s"].SidecarList); diff != "" {
		t.Errorf("sidecarList after the upgrade (-want +got):\n%s", diff)
	}
}

// TestBuildUpdate_PatchPodMetadataNeverForgesTheReachRecord: the pod's
// record of what each SidecarSet's sidecars reach (and were refused) is the
// operator's own, under the sidecarset-operator.dev/ prefix. Another
// SidecarSet's patchPodMetadata, even where the whitelist allows any key,
// never rewrites it at an in-place upgrade: a forged record would let a
// SidecarSet whose authority no longer covers a mounted Secret swap its
// image in place (review N4).
func TestBuildUpdate_PatchPodMetadataNeverForgesTheReachRecord(t *testing.T) {
	t.Parallel()
	v1 := makeSet("b").cold("agent", "agent:1")
	v2 := v1.clone().image("agent", "agent:2").patchMetadata(appsv1beta1.SidecarSetMergePatchJSONPatchPolicy,
		appsv1beta1.ReachAnnotation, `{"a":""}`,
		appsv1beta1.RestrictedAnnotation, `{"a":null}`,
		"sidecarset-operator.dev/future-key", `{"x":"y"}`,
		"team.example.com/owner", `{"team":"web"}`)
	pod := makePod("p").injected(t, v1.obj()).
		annotation(appsv1beta1.ReachAnnotation, `{"a":"inject-secrets","b":""}`).
		annotation(appsv1beta1.RestrictedAnnotation, `{"a":["the ServiceAccount token"]}`)

	plan := compute(t, input(t, v2.obj(), pod.obj()))
	anns := patchedAnnotations(t, plan)
	for _, k := range []string{appsv1beta1.ReachAnnotation, appsv1beta1.RestrictedAnnotation, "sidecarset-operator.dev/future-key"} {
		if v, ok := anns[k]; ok {
			t.Errorf("the upgrade patch sets %s to %q, want it untouched", k, v)
		}
	}
	if got := anns["team.example.com/owner"]; got != `{"team":"web"}` {
		t.Errorf("annotation team.example.com/owner = %q, want the merged value", got)
	}
	want := []string{
		`SidecarSet "b": patchPodMetadata: annotation sidecarset-operator.dev/future-key holds SidecarSet state and was not patched`,
		`SidecarSet "b": patchPodMetadata: annotation sidecarset-operator.dev/reach holds SidecarSet state and was not patched`,
		`SidecarSet "b": patchPodMetadata: annotation sidecarset-operator.dev/restricted holds SidecarSet state and was not patched`,
	}
	if diff := cmp.Diff(want, plan.Warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}
