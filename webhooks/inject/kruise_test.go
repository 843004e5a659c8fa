package inject

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/policy"
	"github.com/sidecarset-operator/sidecarset-operator/policy/podmeta"
	"github.com/sidecarset-operator/sidecarset-operator/test/fixtures"
)

// kruiseOnly are the differences between OpenKruise's injected pods and
// ours that are deliberate (docs/injection.md, "Compared with OpenKruise's
// own output"): the container-launch-priority env var OpenKruise's
// separate launch-priority feature adds to every container of a pod
// annotated apps.kruise.io/container-launch-priority: Ordered. It is not
// part of SidecarSet injection and this operator does not implement it.
var kruiseOnly = map[string]bool{"KRUISE_CONTAINER_BARRIER": true}

// kruiseRelease names the fixtures of one OpenKruise release: the file of
// its SidecarSets as stored, after injection.
type kruiseRelease struct {
	release fixtures.Release
	sets    string
}

var kruiseReleases = []kruiseRelease{
	{fixtures.Kruise18, "sidecarsets-injected.yaml"},
	{fixtures.Kruise19, "sidecarsets-injected-v1beta1.yaml"},
}

// For every input pod of the fixtures of OpenKruise 1.8 and 1.9
// (test/fixtures), our injector given OpenKruise's SidecarSets (as stored,
// with their status) produces the containers, their order, env, mounts,
// resources, the volumes, pull secrets and annotations OpenKruise produced,
// apart from kruiseOnly.
func TestInject_MatchesOpenKruise(t *testing.T) {
	t.Parallel()
	for _, kr := range kruiseReleases {
		t.Run(string(kr.release), func(t *testing.T) {
			t.Parallel()
			matchesOpenKruise(t, kr)
		})
	}
}

func matchesOpenKruise(t *testing.T, kr kruiseRelease) {
	t.Helper()
	sets := fixtures.MustSidecarSets(t, kr.release, kr.sets)
	want := fixtures.MustList[corev1.Pod](t, kr.release, "pods-injected.yaml")
	inputs := fixtures.MustDocs[corev1.Pod](t, kr.release, "input-pods.yaml", "Pod")
	namespaces := fixtures.MustDocs[corev1.Namespace](t, kr.release, "input-pods.yaml", "Namespace")
	cands := make([]Candidate, 0, len(sets))
	for i := range sets {
		s := sets[i].DeepCopy()
		appsv1beta1.SetDefaults(s)
		h, err := appsv1beta1.ComputeHashes(&s.Spec)
		if err != nil {
			t.Fatal(err)
		}
		cands = append(cands, Candidate{SidecarSet: s, Hashes: h})
	}
	if len(inputs) != len(want) || len(inputs) == 0 {
		t.Fatalf("%d input pods, %d injected ones", len(inputs), len(want))
	}
	// The whitelist OpenKruise ran with (its kruise-configuration ConfigMap,
	// applied with the SidecarSets), if any.
	store := policy.NewStore()
	configs := fixtures.MustDocs[corev1.ConfigMap](t, kr.release, "input-sidecarsets.yaml", "ConfigMap")
	if len(configs) > 0 {
		if err := store.Update(fixtures.MustNamed(t, configs, appsv1beta1.ConfigurationConfigMapName,
			func(c *corev1.ConfigMap) string { return c.Name })); err != nil {
			t.Fatal(err)
		}
	}
	whitelist := podmeta.Whitelist{Snapshot: store.Current()}
	for i := range inputs {
		in := &inputs[i]
		t.Run(in.Name, func(t *testing.T) {
			t.Parallel()
			idx := slices.IndexFunc(want, func(p corev1.Pod) bool { return p.Name == in.Name })
			if idx < 0 {
				t.Fatalf("no injected pod %s", in.Name)
			}
			exp := &want[idx]
			labels := map[string]string{corev1.LabelMetadataName: in.Namespace}
			if ns := slices.IndexFunc(namespaces, func(n corev1.Namespace) bool { return n.Name == in.Namespace }); ns >= 0 {
				maps.Copy(labels, namespaces[ns].Labels)
			}
			out, err := Inject(Input{
				Pod:        admitted(in, exp),
				Namespace:  Namespace{Name: in.Namespace, Labels: labels},
				Candidates: cands,
				Now:        injectedAt(t, exp),
				Whitelist:  whitelist,
			})
			if err != nil {
				t.Fatalf("Inject: %v", err)
			}
			if diff := cmp.Diff(viewOf(t, exp, kruiseOnly), viewOf(t, out.Pod, nil)); diff != "" {
				t.Errorf("OpenKruise's pod (-) and ours (+) differ:\n%s", diff)
			}
		})
	}
}

// The hashes OpenKruise 1.8 and 1.9 wrote on their SidecarSets are the ones
// we compute from the manifests that were applied (in either version).
func TestComputeHashes_MatchOpenKruise(t *testing.T) {
	t.Parallel()
	for _, kr := range kruiseReleases {
		stored := fixtures.MustSidecarSets(t, kr.release, kr.sets)
		applied := fixtures.MustDocs[appsv1beta1.SidecarSet](t, kr.release, "input-sidecarsets.yaml", "SidecarSet")
		if len(applied) != len(stored) {
			t.Fatalf("%s: %d applied and %d stored SidecarSets", kr.release, len(applied), len(stored))
		}
		for _, s := range stored {
			i := slices.IndexFunc(applied, func(a appsv1beta1.SidecarSet) bool { return a.Name == s.Name })
			if i < 0 {
				t.Fatalf("%s: no applied SidecarSet %s", kr.release, s.Name)
			}
			a := applied[i].DeepCopy()
			appsv1beta1.SetDefaults(a)
			h, err := appsv1beta1.ComputeHashes(&a.Spec)
			if err != nil {
				t.Fatal(err)
			}
			want := appsv1beta1.Hashes{
				Hash:         s.Annotations[appsv1beta1.SidecarSetHashAnnotation],
				WithoutImage: s.Annotations[appsv1beta1.SidecarSetHashWithoutImageAnnotation],
			}
			if h != want {
				t.Errorf("%s %s: hashes %+v, OpenKruise wrote %+v", kr.release, s.Name, h, want)
			}
		}
	}
}

// admitted is the input pod as the pod webhook sees it: the ServiceAccount
// admission plugin, which runs before the webhooks, has added the token
// volume (taken from OpenKruise's output, whose name is random) and mounted
// it into the pod's own containers.
func admitted(in, injected *corev1.Pod) *corev1.Pod {
	pod := in.DeepCopy()
	for _, v := range injected.Spec.Volumes {
		if !strings.HasPrefix(v.Name, "kube-api-access-") {
			continue
		}
		pod.Spec.Volumes = append(pod.Spec.Volumes, v)
		mount := corev1.VolumeMount{Name: v.Name, ReadOnly: true, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}
		for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
			for i := range list {
				list[i].VolumeMounts = append(list[i].VolumeMounts, mount)
			}
		}
	}
	return pod
}

// injectedAt is the updateTimestamp OpenKruise recorded.
func injectedAt(tb testing.TB, pod *corev1.Pod) metav1.Time {
	tb.Helper()
	h, err := podstate.DecodeHashes(pod.Annotations[appsv1beta1.SidecarSetHashAnnotation])
	if err != nil {
		tb.Fatal(err)
	}
	for _, e := range h {
		return e.UpdateTimestamp
	}
	tb.Fatalf("pod %s records no hash", pod.Name)
	return metav1.Time{}
}

// podView is what injection decides about a pod: what the API server
// defaults and the kubelet reports are left out.
type podView struct {
	InitContainers, Containers []containerView
	Volumes                    []corev1.Volume
	ImagePullSecrets           []corev1.LocalObjectReference
	Annotations                map[string]string
	Hashes, HashesWithoutImage podstate.Hashes
}

type containerView struct {
	Name, Image   string
	Command, Args []string
	Env           []corev1.EnvVar
	VolumeMounts  []corev1.VolumeMount
	RestartPolicy *corev1.ContainerRestartPolicy
	Lifecycle     *corev1.Lifecycle
	// Resources, as strings: the quantities OpenKruise computed (its
	// resourcesPolicy) compared by value.
	Resources map[string]string
}

func viewOf(tb testing.TB, pod *corev1.Pod, dropEnv map[string]bool) podView {
	tb.Helper()
	v := podView{Volumes: pod.Spec.Volumes, ImagePullSecrets: pod.Spec.ImagePullSecrets, Annotations: map[string]string{}}
	containers := func(cs []corev1.Container) []containerView {
		var out []containerView
		for _, c := range cs {
			cv := containerView{Name: c.Name, Image: c.Image, Command: c.Command, Args: c.Args,
				VolumeMounts: c.VolumeMounts, RestartPolicy: c.RestartPolicy, Lifecycle: c.Lifecycle, Resources: resourceStrings(c.Resources)}
			for _, e := range c.Env {
				if !dropEnv[e.Name] {
					cv.Env = append(cv.Env, e)
				}
			}
			out = append(out, cv)
		}
		return out
	}
	v.InitContainers, v.Containers = containers(pod.Spec.InitContainers), containers(pod.Spec.Containers)
	var err error
	for k, val := range pod.Annotations {
		switch k {
		case "kubectl.kubernetes.io/last-applied-configuration",
			// Ours, which OpenKruise does not write (docs/injection.md).
			appsv1beta1.ReachAnnotation, appsv1beta1.RestrictedAnnotation:
		case appsv1beta1.SidecarSetHashAnnotation:
			v.Hashes, err = podstate.DecodeHashes(val)
		case appsv1beta1.SidecarSetHashWithoutImageAnnotation:
			v.HashesWithoutImage, err = podstate.DecodeHashes(val)
		default:
			v.Annotations[k] = val
		}
		if err != nil {
			tb.Fatalf("%s: %v", k, err)
		}
	}
	return v
}

// resourceStrings flattens a container's requests and limits to
// "requests.cpu" -> "375m", nil for none.
func resourceStrings(r corev1.ResourceRequirements) map[string]string {
	var out map[string]string
	for kind, list := range map[string]corev1.ResourceList{"requests": r.Requests, "limits": r.Limits} {
		for name, q := range list {
			if out == nil {
				out = map[string]string{}
			}
			out[kind+"."+string(name)] = q.String()
		}
	}
	return out
}
