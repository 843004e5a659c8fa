package controller_test

import (
	"context"
	"fmt"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
	"github.com/sidecarset-operator/sidecarset-operator/test/integration/framework"
)

// stateKeysLabel makes the suite's whitelist allow a SidecarSet to patch
// kruise.io/sidecarset-hash (which no rule can make writable).
const stateKeysLabel = "test.sidecarset-operator.dev/state-keys"

const (
	oomScore = "oom-score"
	owner    = "team.example.com/owner"
)

// putWhitelist replaces the suite's whitelist and waits until the operator
// uses it: the validating webhook, which reads the same store as the
// controller, accepts or rejects a probe SidecarSet patching probeKey.
func putWhitelist(ctx context.Context, doc, probeKey string, allowed bool) {
	cm := &corev1.ConfigMap{}
	key := client.ObjectKey{Namespace: framework.OperatorNamespace, Name: appsv1beta1.ConfigurationConfigMapName}
	gomega.Expect(k8s.Get(ctx, key, cm)).To(gomega.Succeed())
	cm.Data[appsv1beta1.PatchPodMetadataWhiteListKey] = doc
	gomega.Expect(k8s.Update(ctx, cm)).To(gomega.Succeed())
	probe := builder.MakeSidecarSet("whitelist-probe", specLabel, "none").
		PatchPodMetadata(appsv1beta1.SidecarSetRetainPatchPolicy, map[string]string{probeKey: "x"}).
		Containers(builder.MakeContainer(sidecar, v1)).Obj()
	gomega.Eventually(func(g gomega.Gomega) {
		err := k8s.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		if allowed {
			g.Expect(err).NotTo(gomega.HaveOccurred())
		} else {
			g.Expect(err).To(gomega.HaveOccurred())
		}
	}).WithContext(ctx).Should(gomega.Succeed())
}

// notPatchedEvents are the notes of the PodMetadataNotPatched events of a
// SidecarSet.
func notPatchedEvents(ctx context.Context, g gomega.Gomega, set string) []string {
	events := &eventsv1.EventList{}
	g.Expect(k8s.List(ctx, events)).To(gomega.Succeed())
	var notes []string
	for _, e := range events.Items {
		if e.Reason == "PodMetadataNotPatched" && e.Regarding.Kind == "SidecarSet" && e.Regarding.Name == set && e.Type == corev1.EventTypeWarning {
			notes = append(notes, e.Note)
		}
	}
	return notes
}

var _ = ginkgo.Describe("The SidecarSet controller's patchPodMetadata", func() {
	ginkgo.It("should re-apply it at upgrade under the rule of injection: never a SidecarSet state key, only the keys the whitelist in force allows", func(ctx ginkgo.SpecContext) {
		w := &world{ns: newNamespace(ctx)}
		w.set = w.ns
		patches := func(oom, team string) []appsv1beta1.SidecarSetPatchPodMetadata {
			return []appsv1beta1.SidecarSetPatchPodMetadata{{
				PatchPolicy: appsv1beta1.SidecarSetOverwritePatchPolicy,
				Annotations: map[string]string{oomScore: oom, owner: team, appsv1beta1.SidecarSetHashAnnotation: `{"forged":"x"}`},
			}}
		}
		set := builder.MakeSidecarSet(w.set, specLabel, w.ns).Label(stateKeysLabel, "allowed").MaxUnavailable(intstr.FromInt32(1)).
			Containers(builder.MakeContainer(sidecar, v1)).Obj()
		set.Spec.PatchPodMetadata = patches("1", "web")
		createSidecarSet(ctx, set)
		reserved := fmt.Sprintf("SidecarSet %q: patchPodMetadata: annotation kruise.io/sidecarset-hash holds SidecarSet state and was not patched", w.set)

		ginkgo.By("injecting: the state key is left out, with a warning")
		warnings := startPods(ctx, w.ns, sidecar, podNames(2), nil)
		gomega.Expect(warnings).To(gomega.Equal([]string{reserved, reserved}))
		expectSettled(ctx, w.set, appsv1beta1.ReasonRolloutComplete, counts{2, 2, 2, 2})
		expectMetadata := func(pods map[string][2]string) {
			hash := getSidecarSet(ctx, gomega.Default, w.set).Annotations[appsv1beta1.SidecarSetHashAnnotation]
			for _, p := range listPods(ctx, gomega.Default, w.ns) {
				want := pods[p.Name]
				gomega.Expect([2]string{p.Annotations[oomScore], p.Annotations[owner]}).To(gomega.Equal(want), "metadata of %s", p.Name)
				hashes, err := podstate.DecodeHashes(p.Annotations[appsv1beta1.SidecarSetHashAnnotation])
				gomega.Expect(err).NotTo(gomega.HaveOccurred())
				if specImage(&p, sidecar) == v2 {
					gomega.Expect(hashes[w.set].Hash).To(gomega.Equal(hash), "the hash entry of %s", p.Name)
				}
			}
		}
		expectMetadata(map[string][2]string{"pod-0": {"1", "web"}, "pod-1": {"1", "web"}})

		ginkgo.By("upgrading the first pod: the state key is left out again, with an event")
		updateSidecarSet(ctx, w.set, func(s *appsv1beta1.SidecarSet) {
			s.Spec.Containers[0].Image = v2
			s.Spec.PatchPodMetadata = patches("2", "platform")
		})
		expectSettled(ctx, w.set, appsv1beta1.ReasonWaitingForUnavailablePods, counts{2, 1, 1, 0})
		first := ""
		for _, p := range listPods(ctx, gomega.Default, w.ns) {
			if specImage(&p, sidecar) == v2 {
				first = p.Name
			}
		}
		second := map[string]string{"pod-0": "pod-1", "pod-1": "pod-0"}[first]
		expectMetadata(map[string][2]string{first: {"2", "platform"}, second: {"1", "web"}})
		gomega.Eventually(func(g gomega.Gomega) {
			g.Expect(notPatchedEvents(ctx, g, w.set)).To(gomega.Equal([]string{reserved}))
		}).WithContext(ctx).Should(gomega.Succeed())

		ginkgo.By("taking " + owner + " out of the whitelist, then upgrading the second pod: it keeps its old owner")
		ginkgo.DeferCleanup(putWhitelist, whitelist, owner, true)
		putWhitelist(ctx, `{"rules":[{"allowedAnnotationKeyExprs":["^oom-score$"]},`+
			`{"selector":{"matchLabels":{"test.sidecarset-operator.dev/state-keys":"allowed"}},"allowedAnnotationKeyExprs":["^kruise\\.io/sidecarset-hash$"]}]}`,
			owner, false)
		runKubelet(ctx, w.ns)
		expectSettled(ctx, w.set, appsv1beta1.ReasonUpdatedPodsUnavailable, counts{2, 2, 1, 1})
		expectMetadata(map[string][2]string{first: {"2", "platform"}, second: {"2", "web"}})
		notAllowed := fmt.Sprintf("SidecarSet %q: patchPodMetadata: annotation %s was not patched: sidecarSet patch metadata annotation(%s) "+
			`is not allowed: it matches no pattern of the whitelist rules that select this SidecarSet: `+
			`rules[0] ["^oom-score$"], rules[1] ["^kruise\\.io/sidecarset-hash$"]`, w.set, owner, owner)
		gomega.Eventually(func(g gomega.Gomega) {
			g.Expect(notPatchedEvents(ctx, g, w.set)).To(gomega.ConsistOf(reserved, reserved+"\n"+notAllowed))
		}).WithContext(ctx).Should(gomega.Succeed())
	})
})
