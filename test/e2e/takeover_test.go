package e2e_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	appsv1alpha1 "github.com/sidecarset-operator/sidecarset-operator/api/v1alpha1"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/e2e/framework"
	"github.com/sidecarset-operator/sidecarset-operator/test/fixtures"
)

// Taking over from OpenKruise: the SidecarSets, ControllerRevisions and
// injected pods OpenKruise's own manager wrote (test/fixtures/kruise-v1.8)
// are created while the operator is stopped and its webhooks are not
// installed, as after uninstalling OpenKruise. Then the operator starts and
// images change: every pod is upgraded in place, the status counts them,
// and the revision history continues OpenKruise's, with the names and data
// OpenKruise itself gave the next revisions.
var _ = ginkgo.Describe("Taking over from OpenKruise", ginkgo.Label("takeover"), func() {
	ginkgo.It("should adopt OpenKruise's revisions and upgrade the pods it injected in place", func(ctx ginkgo.SpecContext) {
		fx := loadKruiseFixtures()

		ginkgo.By("stopping the operator and removing its webhook configurations, as if OpenKruise ran the cluster")
		gomega.Expect(env.Manager.Kill()).To(gomega.Succeed())
		running := false
		restore := withoutWebhooks(ctx)
		ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
			restore(ctx)
			if !running {
				gomega.Expect(env.StartManager(ctx)).To(gomega.Succeed())
			}
		})
		ginkgo.DeferCleanup(deleteKruiseObjects)

		ginkgo.By("creating what OpenKruise wrote: SidecarSets with their status, revisions in kruise-system, injected pods")
		gomega.Expect(client.IgnoreAlreadyExists(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fx"}}))).To(gomega.Succeed())
		uids := map[string]types.UID{}
		for _, s := range fx.sets {
			uids[s.Name] = createAsStored(ctx, s)
		}
		createRevisions(ctx, fx.revisions, uids)
		basic := fx.pod("basic")
		pods := []*corev1.Pod{basic, fx.pod("hot"), fx.pod("features"), fx.pod("native"), fx.pod("versioned"),
			renamed(basic, "basic-current"), legacyHashes(renamed(basic, "basic-legacy"))}
		for _, p := range pods {
			gomega.Expect(env.Client.Create(ctx, asCreated(p))).To(gomega.Succeed())
		}
		before := expectRunning(ctx, "fx", len(pods))

		ginkgo.By("starting the operator: it counts the pods and keeps OpenKruise's revisions")
		restore(ctx)
		gomega.Expect(env.StartManager(ctx)).To(gomega.Succeed())
		running = true
		expectStatus(ctx, "fx-basic", 1, counts{Matched: 3, Updated: 3, Ready: 3, UpdatedReady: 3})
		expectStatus(ctx, "fx-hot", 1, counts{Matched: 1, Updated: 1, Ready: 1, UpdatedReady: 1})
		expectStatus(ctx, "fx-features", 1, counts{Matched: 1, Updated: 1, Ready: 1, UpdatedReady: 1})
		expectStatus(ctx, "fx-second", 1, counts{Matched: 1, Updated: 1, Ready: 1, UpdatedReady: 1})
		expectStatus(ctx, "fx-versioned", 1, counts{Matched: 1, Updated: 1, Ready: 1, UpdatedReady: 1})
		for _, s := range fx.sets {
			gomega.Expect(getSidecarSet(ctx, gomega.Default, s.Name).Status.LatestRevision).To(gomega.Equal(s.Status.LatestRevision), s.Name)
			expectRevisions(ctx, s.Name, uids[s.Name], map[string]int64{s.Status.LatestRevision: 1})
		}
		gomega.Consistently(func(g gomega.Gomega) {
			for _, p := range before {
				now := getPod(ctx, g, &p)
				g.Expect(now.Spec.Containers).To(gomega.Equal(p.Spec.Containers), "pod %s was changed by the takeover", p.Name)
			}
		}).WithContext(ctx).Should(gomega.Succeed())

		ginkgo.By("changing the images as OpenKruise's upgraded fixtures did: fx-basic to centos:7, fx-hot to sidecarv2")
		genBasic := setImage(ctx, "fx-basic", "sidecar1", "centos:7")
		genHot := setImage(ctx, "fx-hot", "sidecar", "openkruise/hotupgrade-sample:sidecarv2")

		ginkgo.By("seeing every pod upgraded in place, as OpenKruise upgraded its own")
		wantBasic, wantHot := fx.upgradedPod("basic"), fx.upgradedPod("hot")
		basicPods := expectRolledOut(ctx, "fx", map[string]string{"fx": "basic"}, "sidecar1", "centos:7", rolloutTimeout)
		gomega.Expect(basicPods).To(gomega.HaveLen(3))
		for _, p := range basicPods {
			old := podNamed(before, p.Name)
			gomega.Expect(p.UID).To(gomega.Equal(old.UID), "pod %s was recreated", p.Name)
			gomega.Expect(containerStatus(&p, "sidecar1").RestartCount).To(gomega.Equal(int32(1)), "pod %s", p.Name)
			gomega.Expect(containerStatus(&p, "main").RestartCount).To(gomega.BeZero(), "pod %s", p.Name)
			gomega.Expect(specContainer(&p, "main")).To(gomega.Equal(specContainer(old, "main")), "pod %s", p.Name)
			expectSameRecord(&p, wantBasic, "fx-basic")
		}
		expectStatus(ctx, "fx-basic", genBasic, counts{Matched: 3, Updated: 3, Ready: 3, UpdatedReady: 3})

		gomega.Eventually(func(g gomega.Gomega) {
			p := getPod(ctx, g, podNamed(before, "hot"))
			g.Expect(p.UID).To(gomega.Equal(podNamed(before, "hot").UID))
			for _, c := range wantHot.Spec.Containers {
				g.Expect(specContainer(p, c.Name).Image).To(gomega.Equal(c.Image), "container %s", c.Name)
			}
			for _, st := range wantHot.Status.ContainerStatuses {
				g.Expect(containerStatus(p, st.Name).RestartCount).To(gomega.Equal(st.RestartCount), "container %s", st.Name)
				g.Expect(containerStatus(p, st.Name).Image).To(gomega.Equal(qualified(st.Image)), "container %s", st.Name)
			}
			g.Expect(p.Annotations[appsv1beta1.WorkingHotUpgradeContainerAnnotation]).To(gomega.Equal(wantHot.Annotations[appsv1beta1.WorkingHotUpgradeContainerAnnotation]))
			g.Expect(podReady(p)).To(gomega.BeTrue())
			expectSameRecord(p, wantHot, "fx-hot")
		}, rolloutTimeout).WithContext(ctx).Should(gomega.Succeed())
		expectStatus(ctx, "fx-hot", genHot, counts{Matched: 1, Updated: 1, Ready: 1, UpdatedReady: 1})

		ginkgo.By("seeing the revision history continue OpenKruise's: the next revisions have its names, numbers and data")
		for _, name := range []string{"fx-basic", "fx-hot"} {
			s := fx.upgradedSet(name)
			gomega.Expect(getSidecarSet(ctx, gomega.Default, name).Status.LatestRevision).To(gomega.Equal(s.Status.LatestRevision))
			want := map[string]int64{}
			for _, r := range fx.upgradedRevisions {
				if r.Labels[appsv1beta1.SidecarSetNameLabel] == name {
					want[r.Name] = r.Revision
				}
			}
			got := expectRevisions(ctx, name, uids[name], want)
			for _, r := range fx.upgradedRevisions {
				if i := slices.IndexFunc(got, func(g appsv1.ControllerRevision) bool { return g.Name == r.Name }); i >= 0 {
					gomega.Expect(string(got[i].Data.Raw)).To(gomega.Equal(string(r.Data.Raw)), "revision %s", r.Name)
				}
			}
		}
	}, ginkgo.SpecTimeout(managerReadyTimeout+3*rolloutTimeout))
})

// kruiseFixtures are the objects one OpenKruise release wrote
// (test/fixtures).
type kruiseFixtures struct {
	sets, upgradedSets           []appsv1beta1.SidecarSet
	revisions, upgradedRevisions []appsv1.ControllerRevision
	pods, upgradedPods           []corev1.Pod
}

func loadKruiseFixtures() *kruiseFixtures {
	return loadFixtures(fixtures.Kruise18, "sidecarsets-injected.yaml", "sidecarsets-upgraded.yaml")
}

// loadFixtures reads what one OpenKruise release wrote, its SidecarSets as
// v1beta1 (read through the version of the given files).
func loadFixtures(r fixtures.Release, sets, upgradedSets string) *kruiseFixtures {
	t := ginkgo.GinkgoT()
	return &kruiseFixtures{
		sets:              fixtures.MustSidecarSets(t, r, sets),
		upgradedSets:      fixtures.MustSidecarSets(t, r, upgradedSets),
		revisions:         fixtures.MustList[appsv1.ControllerRevision](t, r, "controllerrevisions-injected.yaml"),
		upgradedRevisions: fixtures.MustList[appsv1.ControllerRevision](t, r, "controllerrevisions-upgraded.yaml"),
		pods:              fixtures.MustList[corev1.Pod](t, r, "pods-injected.yaml"),
		upgradedPods:      fixtures.MustList[corev1.Pod](t, r, "pods-upgraded.yaml"),
	}
}

func (fx *kruiseFixtures) pod(name string) *corev1.Pod {
	return findNamed(fx.pods, name, func(p *corev1.Pod) string { return p.Name })
}

func (fx *kruiseFixtures) upgradedPod(name string) *corev1.Pod {
	return findNamed(fx.upgradedPods, name, func(p *corev1.Pod) string { return p.Name })
}

func (fx *kruiseFixtures) upgradedSet(name string) *appsv1beta1.SidecarSet {
	return findNamed(fx.upgradedSets, name, func(s *appsv1beta1.SidecarSet) string { return s.Name })
}

func findNamed[T any](items []T, name string, nameOf func(*T) string) *T {
	return fixtures.MustNamed(ginkgo.GinkgoT(), items, name, nameOf)
}

// clearServerFields removes what the API server sets, so that the object
// can be created again.
func clearServerFields(m *metav1.ObjectMeta) {
	m.UID, m.ResourceVersion, m.Generation = "", "", 0
	m.CreationTimestamp = metav1.Time{}
	m.ManagedFields = nil
}

// createAsStored creates a SidecarSet as OpenKruise stored it (annotations,
// defaulted spec) with its status, and returns its UID.
func createAsStored(ctx context.Context, stored appsv1beta1.SidecarSet) types.UID {
	s := stored.DeepCopy()
	clearServerFields(&s.ObjectMeta)
	status := s.Status
	gomega.ExpectWithOffset(1, env.Client.Create(ctx, s)).To(gomega.Succeed(), s.Name)
	s.Status = status
	gomega.ExpectWithOffset(1, env.Client.Status().Update(ctx, s)).To(gomega.Succeed(), s.Name)
	return s.UID
}

// createRevisions creates what OpenKruise wrote in its namespace, each
// revision owned by the SidecarSet of its owner's name (by its new UID).
func createRevisions(ctx context.Context, revisions []appsv1.ControllerRevision, uids map[string]types.UID) {
	for _, r := range revisions {
		r := r.DeepCopy()
		clearServerFields(&r.ObjectMeta)
		for i := range r.OwnerReferences {
			r.OwnerReferences[i].UID = uids[r.OwnerReferences[i].Name]
		}
		gomega.ExpectWithOffset(1, env.Client.Create(ctx, r)).To(gomega.Succeed())
	}
}

// asCreated is a pod of the fixtures as it can be created again: without
// what the API server, the scheduler and the kubelet wrote, and without the
// ServiceAccount token volume, which the API server adds anew.
func asCreated(p *corev1.Pod) *corev1.Pod {
	out := p.DeepCopy()
	clearServerFields(&out.ObjectMeta)
	out.Spec.NodeName = ""
	out.Status = corev1.PodStatus{}
	out.Spec.Volumes = slices.DeleteFunc(out.Spec.Volumes, func(v corev1.Volume) bool { return isTokenVolume(v.Name) })
	for _, list := range [][]corev1.Container{out.Spec.InitContainers, out.Spec.Containers} {
		for i := range list {
			list[i].VolumeMounts = slices.DeleteFunc(list[i].VolumeMounts, func(m corev1.VolumeMount) bool { return isTokenVolume(m.Name) })
		}
	}
	return out
}

func isTokenVolume(name string) bool {
	return strings.HasPrefix(name, "kube-api-access-")
}

// renamed is a copy of a pod under another name.
func renamed(p *corev1.Pod, name string) *corev1.Pod {
	out := p.DeepCopy()
	out.Name = name
	return out
}

// legacyHashes rewrites a pod's hash annotations in OpenKruise's legacy
// format, a plain map from SidecarSet name to hash.
func legacyHashes(p *corev1.Pod) *corev1.Pod {
	for _, key := range []string{appsv1beta1.SidecarSetHashAnnotation, appsv1beta1.SidecarSetHashWithoutImageAnnotation} {
		h, err := podstate.DecodeHashes(p.Annotations[key])
		gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred())
		legacy := map[string]string{}
		for name, e := range h {
			legacy[name] = e.Hash
		}
		raw, err := json.Marshal(legacy)
		gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred())
		p.Annotations[key] = string(raw)
	}
	return p
}

// expectRunning waits until the n pods of a namespace run, ready, and
// returns them.
func expectRunning(ctx context.Context, ns string, n int) []corev1.Pod {
	var pods []corev1.Pod
	gomega.EventuallyWithOffset(1, func(g gomega.Gomega) {
		pods = listPods(ctx, g, ns, nil)
		g.Expect(pods).To(gomega.HaveLen(n))
		for i := range pods {
			g.Expect(podReady(&pods[i])).To(gomega.BeTrue(), "pod %s", pods[i].Name)
		}
	}).WithContext(ctx).Should(gomega.Succeed())
	return pods
}

func podNamed(pods []corev1.Pod, name string) *corev1.Pod {
	return findNamed(pods, name, func(p *corev1.Pod) string { return p.Name })
}

// expectRevisions waits until a SidecarSet's ControllerRevisions are
// exactly want (name to revision number), all owned by it through a served
// version (OpenKruise 1.8 wrote v1alpha1, 1.9 and this operator write
// v1beta1; the garbage collector resolves both), and returns them.
func expectRevisions(ctx context.Context, set string, uid types.UID, want map[string]int64) []appsv1.ControllerRevision {
	var revs []appsv1.ControllerRevision
	gomega.EventuallyWithOffset(1, func(g gomega.Gomega) {
		list := &appsv1.ControllerRevisionList{}
		g.Expect(env.Client.List(ctx, list, client.InNamespace(framework.OperatorNamespace),
			client.MatchingLabels{appsv1beta1.SidecarSetNameLabel: set})).To(gomega.Succeed())
		got := map[string]int64{}
		for _, r := range list.Items {
			got[r.Name] = r.Revision
			ref := metav1.GetControllerOf(&r)
			g.Expect(ref).NotTo(gomega.BeNil(), "revision %s has no controller", r.Name)
			g.Expect(ref.UID).To(gomega.Equal(uid), "revision %s", r.Name)
			g.Expect(ref.APIVersion).To(gomega.BeElementOf(appsv1alpha1.GroupVersion.String(), appsv1beta1.GroupVersion.String()),
				"revision %s is owned through a version the API server does not serve", r.Name)
		}
		g.Expect(got).To(gomega.Equal(want))
		revs = list.Items
	}).WithContext(ctx).Should(gomega.Succeed())
	return revs
}

// expectSameRecord checks that what a pod records for a SidecarSet after
// its in-place upgrade is what OpenKruise recorded on its own pod, apart
// from timestamps and the image IDs the kubelet reported: the hash, the
// sidecar list and the revision of the hash entry, the without-image entry,
// and which containers the in-place state covers.
func expectSameRecord(p, kruise *corev1.Pod, set string) {
	gomega.ExpectWithOffset(1, p.Annotations[appsv1beta1.SidecarSetHashAnnotation]).To(gomega.HavePrefix(`{"`+set+`":{`),
		"pod %s: the hash annotation is not in the current format", p.Name)
	ours, err := podstate.Read(p.Annotations)
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred())
	theirs, err := podstate.Read(kruise.Annotations)
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred())
	strip := func(e podstate.HashEntry) podstate.HashEntry {
		e.UpdateTimestamp = metav1.Time{}
		return e
	}
	gomega.ExpectWithOffset(1, strip(ours.Hashes[set])).To(gomega.Equal(strip(theirs.Hashes[set])), "pod %s: hash entry", p.Name)
	gomega.ExpectWithOffset(1, ours.HashesWithoutImage[set].Hash).To(gomega.Equal(theirs.HashesWithoutImage[set].Hash), "pod %s", p.Name)
	gomega.ExpectWithOffset(1, ours.InPlace[set]).NotTo(gomega.BeNil(), "pod %s has no in-place state", p.Name)
	gomega.ExpectWithOffset(1, ours.InPlace[set].Revision).To(gomega.Equal(theirs.InPlace[set].Revision), "pod %s", p.Name)
	var oursC, theirsC []string
	for c := range ours.InPlace[set].LastContainerStatuses {
		oursC = append(oursC, c)
	}
	for c := range theirs.InPlace[set].LastContainerStatuses {
		theirsC = append(theirsC, c)
	}
	slices.Sort(oursC)
	slices.Sort(theirsC)
	gomega.ExpectWithOffset(1, oursC).To(gomega.Equal(theirsC), "pod %s: containers of the in-place state", p.Name)
}

// withoutWebhooks deletes the operator's webhook configurations and returns
// a function that creates them again as they were (once).
func withoutWebhooks(ctx context.Context) func(context.Context) {
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{}
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	objs := []client.Object{mutating, validating}
	names := []string{"sidecarset-operator-local-mutating", "sidecarset-operator-local-validating"}
	for i, o := range objs {
		gomega.ExpectWithOffset(1, env.Client.Get(ctx, types.NamespacedName{Name: names[i]}, o)).To(gomega.Succeed())
		gomega.ExpectWithOffset(1, env.Client.Delete(ctx, o)).To(gomega.Succeed())
	}
	restored := false
	return func(ctx context.Context) {
		if restored {
			return
		}
		restored = true
		for _, o := range objs {
			o.SetUID("")
			o.SetResourceVersion("")
			o.SetCreationTimestamp(metav1.Time{})
			o.SetManagedFields(nil)
			o.SetGeneration(0)
			gomega.Expect(client.IgnoreAlreadyExists(env.Client.Create(ctx, o))).To(gomega.Succeed())
		}
	}
}

// deleteKruiseObjects removes what the takeover specs created: the fx and
// fx19 namespaces (and their pods), the SidecarSets and their revisions.
func deleteKruiseObjects(ctx context.Context) {
	for _, ns := range kruiseNamespaces {
		gomega.Expect(client.IgnoreNotFound(env.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))).To(gomega.Succeed())
	}
	list := &appsv1beta1.SidecarSetList{}
	gomega.Expect(env.Client.List(ctx, list)).To(gomega.Succeed())
	for i := range list.Items {
		if s := &list.Items[i]; isKruiseFixture(s.Name) {
			gomega.Expect(client.IgnoreNotFound(env.Client.Delete(ctx, s))).To(gomega.Succeed())
		}
	}
	revs := &appsv1.ControllerRevisionList{}
	gomega.Expect(env.Client.List(ctx, revs, client.InNamespace(framework.OperatorNamespace))).To(gomega.Succeed())
	for i := range revs.Items {
		if r := &revs.Items[i]; isKruiseFixture(r.Labels[appsv1beta1.SidecarSetNameLabel]) {
			gomega.Expect(client.IgnoreNotFound(env.Client.Delete(ctx, r))).To(gomega.Succeed())
		}
	}
	for _, ns := range kruiseNamespaces {
		gomega.Eventually(func() bool {
			err := env.Client.Get(ctx, types.NamespacedName{Name: ns}, &corev1.Namespace{})
			return apierrors.IsNotFound(err)
		}).WithContext(ctx).Should(gomega.BeTrue())
	}
}

// isKruiseFixture reports whether a SidecarSet is one of the fixtures'.
func isKruiseFixture(name string) bool {
	return strings.HasPrefix(name, "fx-") || strings.HasPrefix(name, "fx19-")
}

// kruiseNamespaces are the namespaces of the fixtures' pods.
var kruiseNamespaces = []string{"fx", "fx19"}
