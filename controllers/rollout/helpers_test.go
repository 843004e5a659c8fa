package rollout

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/policy"
	"github.com/sidecarset-operator/sidecarset-operator/policy/podmeta"
)

// Test builders. Every pod lives in namespace "default" and is named and
// UID-ed after its name; images get a deterministic imageID.

var t0 = time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)

// imageID returns the imageID a runtime would report for an image.
func imageID(image string) string {
	repo := image
	if i := strings.LastIndex(repo, ":"); i > 0 && !strings.Contains(repo[i:], "/") {
		repo = repo[:i]
	}
	return fmt.Sprintf("docker.io/library/%s@sha256:%x", repo, sha256.Sum256([]byte(image)))
}

// setWrapper builds a SidecarSet.
type setWrapper struct{ appsv1beta1.SidecarSet }

func makeSet(name string) *setWrapper {
	s := &setWrapper{}
	s.Name = name
	s.Generation = 3
	s.ResourceVersion = "100"
	s.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	return s
}

func (s *setWrapper) cold(name, image string) *setWrapper {
	s.Spec.Containers = append(s.Spec.Containers, appsv1beta1.SidecarContainer{
		Container: corev1.Container{Name: name, Image: image},
	})
	return s
}

func (s *setWrapper) hot(name, image, empty string) *setWrapper {
	s.Spec.Containers = append(s.Spec.Containers, appsv1beta1.SidecarContainer{
		Container: corev1.Container{Name: name, Image: image},
		UpgradeStrategy: appsv1beta1.SidecarContainerUpgradeStrategy{
			UpgradeType: appsv1beta1.SidecarContainerHotUpgrade, HotUpgradeEmptyImage: empty,
		},
	})
	return s
}

// image sets the image of a container or an init container.
func (s *setWrapper) image(container, image string) *setWrapper {
	for _, list := range [][]appsv1beta1.SidecarContainer{s.Spec.Containers, s.Spec.InitContainers} {
		for i := range list {
			if list[i].Name == container {
				list[i].Image = image
			}
		}
	}
	return s
}

// mode sets the MODE env var of a container: a change other than images.
func (s *setWrapper) mode(container, value string) *setWrapper {
	for i := range s.Spec.Containers {
		if s.Spec.Containers[i].Name == container {
			s.Spec.Containers[i].Env = append(s.Spec.Containers[i].Env, corev1.EnvVar{Name: "MODE", Value: value})
		}
	}
	return s
}

func (s *setWrapper) maxUnavailable(v intstr.IntOrString) *setWrapper {
	s.Spec.UpdateStrategy.MaxUnavailable = &v
	return s
}

func (s *setWrapper) partition(v intstr.IntOrString) *setWrapper {
	s.Spec.UpdateStrategy.Partition = &v
	return s
}

func (s *setWrapper) updateSelector(k, v string) *setWrapper {
	s.Spec.UpdateStrategy.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{k: v}}
	return s
}

func (s *setWrapper) paused() *setWrapper {
	s.Spec.UpdateStrategy.Paused = true
	return s
}

func (s *setWrapper) notUpdate() *setWrapper {
	s.Spec.UpdateStrategy.Type = appsv1beta1.NotUpdateSidecarSetStrategyType
	return s
}

func (s *setWrapper) resourceVersion(rv string) *setWrapper {
	s.ResourceVersion = rv
	return s
}

func (s *setWrapper) patchMetadata(policy appsv1beta1.SidecarSetPatchPolicyType, kv ...string) *setWrapper {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	s.Spec.PatchPodMetadata = append(s.Spec.PatchPodMetadata, appsv1beta1.SidecarSetPatchPodMetadata{Annotations: m, PatchPolicy: policy})
	return s
}

func (s *setWrapper) conditions(c ...metav1.Condition) *setWrapper {
	s.Status.Conditions = c
	return s
}

// obj returns a defaulted copy.
func (s *setWrapper) obj() *appsv1beta1.SidecarSet {
	o := s.DeepCopy()
	appsv1beta1.SetDefaults(o)
	return o
}

// clone copies the wrapper, so that variants do not share state.
func (s *setWrapper) clone() *setWrapper {
	return &setWrapper{*s.DeepCopy()}
}

func hashesOf(tb testing.TB, s *appsv1beta1.SidecarSet) appsv1beta1.Hashes {
	tb.Helper()
	h, err := appsv1beta1.ComputeHashes(&s.Spec)
	if err != nil {
		tb.Fatal(err)
	}
	return h
}

// podWrapper builds a running, ready, scheduled pod.
type podWrapper struct{ corev1.Pod }

func makePod(name string) *podWrapper {
	p := &podWrapper{}
	p.Name = name
	p.Namespace = "default"
	p.UID = types.UID("uid-" + name)
	p.ResourceVersion = "1"
	p.Labels = map[string]string{"app": "web"}
	p.Annotations = map[string]string{}
	p.CreationTimestamp = metav1.NewTime(t0.Add(-time.Hour))
	p.Spec.NodeName = "node-1"
	p.Spec.Containers = []corev1.Container{{Name: "app", Image: "app:1"}}
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{
		Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(-time.Hour)),
	}}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{runningStatus("app", "app:1")}
	return p
}

func runningStatus(name, image string) corev1.ContainerStatus {
	return corev1.ContainerStatus{
		Name: name, Image: image, ImageID: imageID(image), Ready: true,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(t0.Add(-time.Hour))}},
	}
}

// injected makes the pod look injected by s: its init containers and
// containers (twins for hot-upgrade sidecars, the first twin working) and
// annotations.
func (p *podWrapper) injected(tb testing.TB, s *appsv1beta1.SidecarSet) *podWrapper {
	tb.Helper()
	h := hashesOf(tb, s)
	var list []string
	for _, c := range s.Spec.InitContainers {
		if !appsv1beta1.IsNativeSidecar(&c.Container) {
			p.plainInit(c.Name, c.Image)
			continue
		}
		list = append(list, c.Name)
		if c.UpgradeStrategy.UpgradeType == appsv1beta1.SidecarContainerHotUpgrade {
			t1, t2 := appsv1beta1.HotUpgradeTwins(c.Name)
			p.native(t1, c.Image).native(t2, c.UpgradeStrategy.HotUpgradeEmptyImage)
			p.twinAnnotations(c.Name)
			continue
		}
		p.native(c.Name, c.Image)
	}
	for _, c := range s.Spec.Containers {
		list = append(list, c.Name)
		if c.UpgradeStrategy.UpgradeType == appsv1beta1.SidecarContainerHotUpgrade {
			t1, t2 := appsv1beta1.HotUpgradeTwins(c.Name)
			p.container(t1, c.Image).container(t2, c.UpgradeStrategy.HotUpgradeEmptyImage)
			p.twinAnnotations(c.Name)
			continue
		}
		p.container(c.Name, c.Image)
	}
	slices.Sort(list)
	p.setHash(s.Name, h.Hash, h.WithoutImage, list)
	p.Annotations[appsv1beta1.SidecarSetListAnnotation] = podstate.EncodeInjectedList([]string{s.Name})
	return p
}

// twinAnnotations records a freshly injected hot-upgrade sidecar: the
// first twin works at version 1, the second idles at version 0.
func (p *podWrapper) twinAnnotations(sidecar string) {
	t1, t2 := appsv1beta1.HotUpgradeTwins(sidecar)
	p.working(sidecar, t1)
	p.Annotations[podstate.VersionKey(t1)] = "1"
	p.Annotations[podstate.VersionAltKey(t1)] = "0"
	p.Annotations[podstate.VersionKey(t2)] = "0"
	p.Annotations[podstate.VersionAltKey(t2)] = "1"
}

func (p *podWrapper) setHash(set, hash, withoutImage string, list []string) *podWrapper {
	hashes, _ := podstate.DecodeHashes(p.Annotations[appsv1beta1.SidecarSetHashAnnotation])
	hashes[set] = podstate.HashEntry{UpdateTimestamp: metav1.NewTime(t0.Add(-time.Hour)), Hash: hash, SidecarSetName: set, SidecarList: list}
	p.Annotations[appsv1beta1.SidecarSetHashAnnotation] = hashes.Encode()
	without, _ := podstate.DecodeHashes(p.Annotations[appsv1beta1.SidecarSetHashWithoutImageAnnotation])
	without[set] = podstate.HashEntry{UpdateTimestamp: metav1.NewTime(t0.Add(-time.Hour)), Hash: withoutImage, SidecarSetName: set, SidecarList: list}
	p.Annotations[appsv1beta1.SidecarSetHashWithoutImageAnnotation] = without.Encode()
	return p
}

// upgradedTo makes the pod look upgraded in place to s's cold images
// (containers and native sidecars): spec images and hash are s's, the
// in-place state records the old imageIDs, and the statuses still show the
// old containers.
func (p *podWrapper) upgradedTo(tb testing.TB, s *appsv1beta1.SidecarSet) *podWrapper {
	tb.Helper()
	h := hashesOf(tb, s)
	set := newSetView(s, h)
	old := map[string]string{}
	for _, c := range set.cold {
		old[c.Name] = p.status(c.Name).ImageID
		p.spec(c.Name).Image = c.Image
	}
	p.setHash(s.Name, h.Hash, h.WithoutImage, set.sidecarList)
	return p.inPlace(s.Name, old)
}

// completed makes every container's and native sidecar's status match its
// spec (the kubelet restarted the upgraded ones).
func (p *podWrapper) completed() *podWrapper {
	for _, name := range longRunningNames(&p.Pod) {
		if c, st := p.spec(name), p.status(name); st.Image != c.Image {
			*st = runningStatus(c.Name, c.Image)
		}
	}
	return p
}

func (p *podWrapper) container(name, image string) *podWrapper {
	p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: name, Image: image})
	p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, runningStatus(name, image))
	return p
}

func (p *podWrapper) spec(name string) *corev1.Container {
	c := specContainer(&p.Pod, name)
	if c == nil {
		panic("no container " + name)
	}
	return c
}

func (p *podWrapper) status(name string) *corev1.ContainerStatus {
	st := containerStatus(&p.Pod, name)
	if st == nil {
		panic("no status " + name)
	}
	return st
}

func (p *podWrapper) inPlace(set string, imageIDs map[string]string) *podWrapper {
	state, _ := podstate.DecodeInPlaceState(p.Annotations[appsv1beta1.InPlaceUpdateStateAnnotation])
	e := state[set]
	if e == nil {
		e = &podstate.InPlaceUpdateState{Revision: "r", UpdateTimestamp: metav1.NewTime(t0.Add(-time.Hour))}
	}
	if e.LastContainerStatuses == nil {
		e.LastContainerStatuses = map[string]podstate.ContainerStatus{}
	}
	for c, id := range imageIDs {
		e.LastContainerStatuses[c] = podstate.ContainerStatus{ImageID: id}
	}
	state[set] = e
	p.Annotations[appsv1beta1.InPlaceUpdateStateAnnotation] = podstate.EncodeInPlaceState(state)
	return p
}

func (p *podWrapper) working(sidecar, twin string) *podWrapper {
	m := map[string]string{}
	if v := p.Annotations[appsv1beta1.WorkingHotUpgradeContainerAnnotation]; v != "" {
		_ = json.Unmarshal([]byte(v), &m)
	}
	m[sidecar] = twin
	p.Annotations[appsv1beta1.WorkingHotUpgradeContainerAnnotation] = podstate.EncodeStringMap(m)
	return p
}

func (p *podWrapper) label(k, v string) *podWrapper {
	p.Labels[k] = v
	return p
}

func (p *podWrapper) annotation(k, v string) *podWrapper {
	p.Annotations[k] = v
	return p
}

func (p *podWrapper) notReady() *podWrapper {
	p.Status.Conditions[0].Status = corev1.ConditionFalse
	return p
}

func (p *podWrapper) created(t time.Time) *podWrapper {
	p.CreationTimestamp = metav1.NewTime(t)
	return p
}

func (p *podWrapper) upgradableCondition(message string, status corev1.ConditionStatus) *podWrapper {
	reason := appsv1beta1.AllSidecarSetUpgradableReason
	if status == corev1.ConditionFalse {
		reason = appsv1beta1.UpdateImmutableFieldReason
	}
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
		Type: appsv1beta1.SidecarSetUpgradableCondition, Status: status, Reason: reason, Message: message,
		LastTransitionTime: metav1.NewTime(t0.Add(-time.Hour)),
	})
	return p
}

func (p *podWrapper) obj() *corev1.Pod {
	return p.DeepCopy()
}

// anyKey lets patchPodMetadata write any key that does not hold SidecarSet
// state: no whitelist ConfigMap, with SidecarSetPatchPodMetadataDefaultsAllowed on.
var anyKey = podmeta.Whitelist{Snapshot: &policy.Snapshot{}, DefaultsAllowed: true}

// input builds a planner input at t0, under a whitelist allowing any key.
// recreateFixture is a SidecarSet (v1), its next version (v2) changing an
// env, which only a recreation applies and which opts into recreating pods,
// and pods running v1 that a ReplicaSet owns.
func recreateFixture(tb testing.TB) (v1, v2 *setWrapper, deployed func(name string) *podWrapper) {
	tb.Helper()
	v1 = makeSet("mesh").cold("agent", "agent:1").maxUnavailable(intstr.FromInt32(1))
	v2 = v1.clone().mode("agent", "b").annotate(appsv1beta1.RecreatePodsAnnotation, "true")
	deployed = func(name string) *podWrapper {
		return makePod(name).injected(tb, v1.obj()).ownedBy("ReplicaSet", "apps/v1", "rs-1")
	}
	return v1, v2, deployed
}

func input(tb testing.TB, s *appsv1beta1.SidecarSet, pods ...*corev1.Pod) Input {
	tb.Helper()
	return Input{SidecarSet: s, Hashes: hashesOf(tb, s), LatestRevision: s.Name + "-rev", Pods: pods, Now: t0, Whitelist: anyKey, Explain: true}
}

// compute plans, and checks that a Memo changes nothing (sameWithMemo)
// unless the input brings its own.
func compute(tb testing.TB, in Input) Plan {
	tb.Helper()
	p, err := Compute(in)
	if err != nil {
		tb.Fatalf("Compute: %v", err)
	}
	if in.Memo == nil {
		sameWithMemo(tb, in, p)
	}
	return p
}

// sameWithMemo plans in twice with one Memo, the second time reading every
// pod from it: both plans must be want, the plan without a memo.
func sameWithMemo(tb testing.TB, in Input, want Plan) {
	tb.Helper()
	in.Memo = &Memo{}
	rounds := []string{"filling the memo", "from the memo"}
	plans := make([]Plan, len(rounds))
	for i, round := range rounds {
		var err error
		if plans[i], err = Compute(in); err != nil {
			tb.Fatalf("Compute %s: %v", round, err)
		}
	}
	// Compared once both are made: a plan must not keep what the next
	// plan reuses.
	for i, round := range rounds {
		if diff := cmp.Diff(want, plans[i]); diff != "" {
			tb.Fatalf("the plan %s differs from the plan without a memo (-without +with):\n%s", round, diff)
		}
	}
}

// patchedAnnotations returns the annotations the plan's only update sets,
// failing unless the plan has exactly one update.
func patchedAnnotations(tb testing.TB, plan Plan) map[string]string {
	tb.Helper()
	if len(plan.Updates) != 1 {
		tb.Fatalf("got %d updates, want 1 (blocked: %v)", len(plan.Updates), plan.Blocked)
	}
	var patch struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(plan.Updates[0].Patch, &patch); err != nil {
		tb.Fatal(err)
	}
	return patch.Metadata.Annotations
}

// updatedNames lists the pods of a plan's updates, in order.
func updatedNames(us []PodUpdate) []string {
	out := []string{}
	for _, u := range us {
		out = append(out, u.Pod.Name)
	}
	return out
}

func pods(ws ...*podWrapper) []*corev1.Pod {
	out := make([]*corev1.Pod, len(ws))
	for i, w := range ws {
		out[i] = w.obj()
	}
	return out
}

func (p *podWrapper) key() types.NamespacedName {
	return keyOf(&p.Pod)
}

func keyOf(p *corev1.Pod) types.NamespacedName {
	return types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
}

// stuck makes a container wait on its spec image, which cannot be pulled:
// it reports the new name with the old imageID, and the pod is not ready.
func (p *podWrapper) stuck(container string) {
	st := p.status(container)
	st.Image = p.spec(container).Image
	st.Ready = false
	st.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}
	p.notReady()
}

func conditionReason(conds []metav1.Condition, t string) string {
	for _, c := range conds {
		if c.Type == t {
			return c.Reason
		}
	}
	return ""
}

// podCounts is a status without its conditions and what the shell's
// inputs set (generation, revision, collision count): the pod counts.
func podCounts(st appsv1beta1.SidecarSetStatus) appsv1beta1.SidecarSetStatus {
	st.Conditions, st.ObservedGeneration, st.LatestRevision, st.CollisionCount = nil, 0, "", nil
	return st
}
