package inject

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

func TestSelectSidecars_NeverReplaceOrDuplicate(t *testing.T) {
	t.Parallel()
	pod := newPod("web", "app")
	pod.Spec.InitContainers = []corev1.Container{{Name: "setup"}}
	pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "agent",
		Env: []corev1.EnvVar{{Name: appsv1beta1.SidecarEnvInjected, Value: "true"}}})
	type result struct {
		Injected []string // sidecars kept, in spec order
		Skip     string   // reason, when nothing is kept
		Warnings []string
	}
	tests := []struct {
		name string
		sets []*appsv1beta1.SidecarSet
		want []result
	}{
		{
			name: "new names are kept and reserved: the same name in a later SidecarSet is not injected",
			sets: []*appsv1beta1.SidecarSet{newSidecarSet("a", "web", "x"), newSidecarSet("b", "web", "x", "y")},
			want: []result{{Injected: []string{"x"}}, {Injected: []string{"y"},
				Warnings: []string{`SidecarSet "b": sidecar "x" was not injected: its name is taken by sidecar "x" of SidecarSet "a"`}}},
		},
		{
			name: "a sidecar named like a container of the pod is left out, the pod's container is kept, the others are injected",
			sets: []*appsv1beta1.SidecarSet{newSidecarSet("a", "web", "y", "app")},
			want: []result{{Injected: []string{"y"},
				Warnings: []string{`SidecarSet "a": sidecar "app" was not injected: the pod's container "app" has that name and is kept as it is`}}},
		},
		{
			name: "every sidecar already in the pod, injected (IS_INJECTED): already injected, silently",
			sets: []*appsv1beta1.SidecarSet{newSidecarSet("a", "web", "agent")},
			want: []result{{Skip: ReasonAlreadyInjected}},
		},
		{
			name: "an injected sidecar is not injected again, the missing one is",
			sets: []*appsv1beta1.SidecarSet{newSidecarSet("a", "web", "agent", "new")},
			want: []result{{Injected: []string{"new"}}},
		},
		{
			name: "every sidecar named like one of the pod's own containers: a name conflict, the pod's containers kept",
			sets: []*appsv1beta1.SidecarSet{newSidecarSet("a", "web", "app", "setup")},
			want: []result{{Skip: ReasonNameConflict, Warnings: []string{
				`SidecarSet "a": sidecar "app" was not injected: the pod's container "app" has that name and is kept as it is`,
				`SidecarSet "a": sidecar "setup" was not injected: the pod's init container "setup" has that name and is kept as it is`,
			}}},
		},
		{
			name: "every sidecar taken by another SidecarSet: a name conflict",
			sets: []*appsv1beta1.SidecarSet{newSidecarSet("a", "web", "z"), newSidecarSet("b", "web", "z")},
			want: []result{{Injected: []string{"z"}}, {Skip: ReasonNameConflict,
				Warnings: []string{`SidecarSet "b": sidecar "z" was not injected: its name is taken by sidecar "z" of SidecarSet "a"`}}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			reserved := existingContainerNames(pod)
			var got []result
			for _, s := range tc.sets {
				kept, skip, warnings := selectSidecars(&version{name: s.Name, set: s}, reserved)
				r := result{Warnings: warnings}
				if skip != nil {
					if kept != nil || skip.SidecarSet != s.Name {
						t.Errorf("SidecarSet %s: kept %v with skip %+v", s.Name, kept, skip)
					}
					r.Skip = skip.Reason
				} else {
					r.Injected = containerNames(asContainers(kept.set.Spec.Containers))
				}
				got = append(got, r)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("selection (-want +got):\n%s", diff)
			}
		})
	}
}

func asContainers(in []appsv1beta1.SidecarContainer) []corev1.Container {
	out := make([]corev1.Container, len(in))
	for i := range in {
		out[i] = in[i].Container
	}
	return out
}

func sc(name string, policy appsv1beta1.PodInjectPolicyType) sidecar {
	return sidecar{container: corev1.Container{Name: name}, policy: policy}
}

func containerNames(cs []corev1.Container) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

func TestMerge_Placement(t *testing.T) {
	t.Parallel()
	before, after := appsv1beta1.BeforeAppContainerType, appsv1beta1.AfterAppContainerType
	plans := []*plan{
		{v: &version{name: "a"}, initContainers: []sidecar{sc("i-z", after), sc("i-b", before)},
			containers: []sidecar{sc("z", before), sc("z-after", after)}},
		{v: &version{name: "b"}, initContainers: []sidecar{sc("i-a", ""), sc("i-c", before)},
			containers: []sidecar{sc("a", before), sc("a-after", after), sc("a-default", "")}},
	}
	tests := []struct {
		name                  string
		opts                  Options
		wantInitBefore        []string
		wantInitAfter         []string
		wantBefore, wantAfter []string
	}{
		{
			name:           "containers keep SidecarSet then spec order; init containers are sorted by name",
			wantInitBefore: []string{"i-b", "i-c"}, wantInitAfter: []string{"i-a", "i-z"},
			wantBefore: []string{"z", "a", "a-default"}, wantAfter: []string{"z-after", "a-after"},
		},
		{
			name:           "SortContainersByName sorts containers across SidecarSets",
			opts:           Options{SortContainersByName: true},
			wantInitBefore: []string{"i-b", "i-c"}, wantInitAfter: []string{"i-a", "i-z"},
			wantBefore: []string{"a", "a-default", "z"}, wantAfter: []string{"a-after", "z-after"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := merge(newPod("web", "app"), plans, tc.opts)
			for _, c := range []struct {
				what      string
				want, got []string
			}{
				{"init before", tc.wantInitBefore, containerNames(m.initBefore)},
				{"init after", tc.wantInitAfter, containerNames(m.initAfter)},
				{"before", tc.wantBefore, containerNames(m.before)},
				{"after", tc.wantAfter, containerNames(m.after)},
			} {
				if diff := cmp.Diff(c.want, c.got); diff != "" {
					t.Errorf("%s (-want +got):\n%s", c.what, diff)
				}
			}
		})
	}
}

func TestMergeVolumes_FirstDefinitionWins(t *testing.T) {
	t.Parallel()
	emptyDir := func(name string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	}
	secret := func(name, secretName string, mode *int32) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secretName, DefaultMode: mode}}}
	}
	podVolumes := []corev1.Volume{emptyDir("cache"), secret("tls", "pod-tls", new(int32(420)))}
	plans := []*plan{
		{v: &version{name: "a"}, volumes: []corev1.Volume{emptyDir("cache"), secret("tls", "pod-tls", nil), emptyDir("new")}},
		{v: &version{name: "b"}, volumes: []corev1.Volume{secret("new", "x", nil), emptyDir("other")}},
	}
	added, warnings := mergeVolumes(podVolumes, plans)
	if diff := cmp.Diff([]corev1.Volume{emptyDir("new"), emptyDir("other")}, added); diff != "" {
		t.Errorf("added volumes (-want +got):\n%s", diff)
	}
	wantWarnings := []string{`SidecarSet "b": volume "new" is also defined, differently, by SidecarSet "a"; the sidecars use that definition`}
	if diff := cmp.Diff(wantWarnings, warnings); diff != "" {
		t.Errorf("warnings (-want +got; a defaulted and an undefaulted secret are the same):\n%s", diff)
	}
}

func TestPatchOps_Minimal(t *testing.T) {
	t.Parallel()
	a, b, c := corev1.Container{Name: "a"}, corev1.Container{Name: "b"}, corev1.Container{Name: "c"}
	tests := []struct {
		name       string
		existing   []corev1.Container
		before     []corev1.Container
		after      []corev1.Container
		wantResult []string
		wantOps    []jsonpatch.Operation
	}{
		{name: "nothing to add gives no op", existing: []corev1.Container{a}, wantResult: []string{"a"}},
		{
			name: "a list the pod does not have is added whole", before: []corev1.Container{a}, after: []corev1.Container{b},
			wantResult: []string{"a", "b"},
			wantOps:    []jsonpatch.Operation{{Operation: "add", Path: "/spec/containers", Value: []corev1.Container{a, b}}},
		},
		{
			name: "prepends go at increasing indexes, appends at the end", existing: []corev1.Container{c},
			before: []corev1.Container{a, b}, after: []corev1.Container{a},
			wantResult: []string{"a", "b", "c", "a"},
			wantOps: []jsonpatch.Operation{
				{Operation: "add", Path: "/spec/containers/0", Value: a},
				{Operation: "add", Path: "/spec/containers/1", Value: b},
				{Operation: "add", Path: "/spec/containers/-", Value: a},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			result, ops := placeList("/spec/containers", tc.existing, tc.before, tc.after)
			if diff := cmp.Diff(tc.wantResult, containerNames(result)); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantOps, ops); diff != "" {
				t.Errorf("ops (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPullSecretOps_DeduplicatesThePodsList(t *testing.T) {
	t.Parallel()
	ref := func(n string) corev1.LocalObjectReference { return corev1.LocalObjectReference{Name: n} }
	plans := []*plan{{pullSecrets: []corev1.LocalObjectReference{ref("s0"), ref("s1"), ref("s2")}}, {pullSecrets: []corev1.LocalObjectReference{ref("s1")}}}
	existing := []corev1.LocalObjectReference{ref("s2"), ref("s3"), ref("s2"), ref("s3")}
	dups, added := mergePullSecrets(existing, plans)
	result, ops := pullSecretOps(existing, dups, added)
	if diff := cmp.Diff([]corev1.LocalObjectReference{ref("s2"), ref("s3"), ref("s0"), ref("s1")}, result); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	wantOps := []jsonpatch.Operation{
		{Operation: "remove", Path: "/spec/imagePullSecrets/3"},
		{Operation: "remove", Path: "/spec/imagePullSecrets/2"},
		{Operation: "add", Path: "/spec/imagePullSecrets/-", Value: ref("s0")},
		{Operation: "add", Path: "/spec/imagePullSecrets/-", Value: ref("s1")},
	}
	if diff := cmp.Diff(wantOps, ops); diff != "" {
		t.Errorf("ops (-want +got):\n%s", diff)
	}
	if dups, added := mergePullSecrets(existing, []*plan{{}}); dups != nil || added != nil {
		t.Errorf("without SidecarSet secrets the pod's list is left alone, got dups %v added %v", dups, added)
	}
}

func TestAnnotationOps_PerKeyOrWhole(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		original map[string]string
		final    map[string]string
		want     []jsonpatch.Operation
	}{
		{name: "unchanged annotations give no op", original: map[string]string{"a": "1"}, final: map[string]string{"a": "1"}},
		{
			name: "a pod without annotations gets the whole map", final: map[string]string{"a": "1", "b/c": "2"},
			want: []jsonpatch.Operation{{Operation: "add", Path: "/metadata/annotations", Value: map[string]string{"a": "1", "b/c": "2"}}},
		},
		{
			name:     "new keys are added and changed ones replaced, escaped, in key order",
			original: map[string]string{"keep": "x", "kruise.io/x": "old"},
			final:    map[string]string{"keep": "x", "kruise.io/x": "new", "a~b/c": "1"},
			want: []jsonpatch.Operation{
				{Operation: "add", Path: "/metadata/annotations/a~0b~1c", Value: "1"},
				{Operation: "replace", Path: "/metadata/annotations/kruise.io~1x", Value: "new"},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ops := annotationOps(tc.original, tc.final)
			if diff := cmp.Diff(tc.want, ops); diff != "" {
				t.Errorf("ops (-want +got):\n%s", diff)
			}
			want := tc.final
			if len(tc.final) == 0 {
				want = tc.original
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
		})
	}
}
