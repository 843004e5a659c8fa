package controller_test

import (
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
)

// emptyImage is the hot-upgrade sidecar's idle image.
const emptyImage = "busybox:empty"

var _ = ginkgo.Describe("The SidecarSet controller's hot upgrade", func() {
	ginkgo.It("should upgrade the idle twin, make it the working one, then reset the old twin to the empty image", func(ctx ginkgo.SpecContext) {
		w := &world{ns: newNamespace(ctx)}
		w.set = w.ns
		createSidecarSet(ctx, builder.MakeSidecarSet(w.set, specLabel, w.ns).MaxUnavailable(intstr.FromInt32(2)).
			Containers(builder.MakeContainer(sidecar, v1).HotUpgrade(emptyImage)).Obj())
		twin1, twin2 := appsv1beta1.HotUpgradeTwins(sidecar)
		startPods(ctx, w.ns, twin1, podNames(2), nil)
		expectSettled(ctx, w.set, appsv1beta1.ReasonRolloutComplete, counts{2, 2, 2, 2})
		expectTwins := func(images [2]string, working string, annotations map[string]string) {
			for _, p := range listPods(ctx, gomega.Default, w.ns) {
				gomega.Expect([2]string{specImage(&p, twin1), specImage(&p, twin2)}).To(gomega.Equal(images), "twins of %s", p.Name)
				state, err := podstate.Read(p.Annotations)
				gomega.Expect(err).NotTo(gomega.HaveOccurred())
				gomega.Expect(state.WorkingHotUpgrade).To(gomega.HaveKeyWithValue(sidecar, working), "working twin of %s", p.Name)
				for k, v := range annotations {
					gomega.Expect(p.Annotations).To(gomega.HaveKeyWithValue(k, v), "pod %s", p.Name)
				}
			}
		}
		expectTwins([2]string{v1, emptyImage}, twin1, map[string]string{
			podstate.VersionKey(twin1): "1", podstate.VersionAltKey(twin1): "0",
			podstate.VersionKey(twin2): "0", podstate.VersionAltKey(twin2): "1",
		})

		ginkgo.By("changing the image: the idle twin gets it and works at once")
		setImage(v2)(ctx, w)
		expectSettled(ctx, w.set, appsv1beta1.ReasonUpdatedPodsUnavailable, counts{2, 2, 0, 0})
		// The new twin's version is the SidecarSet's resourceVersion when it
		// was upgraded; the old twin sees it as its alternative.
		rv := listPods(ctx, gomega.Default, w.ns)[0].Annotations[podstate.VersionKey(twin2)]
		gomega.Expect(rv).NotTo(gomega.BeElementOf("", "0", "1"))
		expectTwins([2]string{v1, v2}, twin2, map[string]string{
			podstate.VersionKey(twin2): rv, podstate.VersionAltKey(twin2): "1", podstate.VersionAltKey(twin1): rv,
		})

		ginkgo.By("restarting the new twin: the old twin is reset to the empty image")
		runKubelet(ctx, w.ns)
		gomega.Eventually(func(g gomega.Gomega) {
			for _, p := range listPods(ctx, g, w.ns) {
				g.Expect(specImage(&p, twin1)).To(gomega.Equal(emptyImage), "old twin of %s", p.Name)
			}
		}).WithContext(ctx).Should(gomega.Succeed())
		expectSettled(ctx, w.set, appsv1beta1.ReasonUpdatedPodsUnavailable, counts{2, 2, 0, 0})
		expectTwins([2]string{emptyImage, v2}, twin2, map[string]string{
			podstate.VersionKey(twin1): "0", podstate.VersionAltKey(twin2): "0", podstate.VersionKey(twin2): rv,
		})
		gomega.Eventually(func(g gomega.Gomega) {
			events := &eventsv1.EventList{}
			g.Expect(k8s.List(ctx, events, client.InNamespace(w.ns))).To(gomega.Succeed())
			var reset []string
			for _, e := range events.Items {
				if e.Reason == "ResetContainerSucceed" && e.Type == corev1.EventTypeNormal {
					reset = append(reset, e.Regarding.Name)
				}
			}
			g.Expect(reset).To(gomega.ConsistOf("pod-0", "pod-1"))
		}).WithContext(ctx).Should(gomega.Succeed())

		ginkgo.By("restarting the reset twin")
		runKubelet(ctx, w.ns)
		expectSettled(ctx, w.set, appsv1beta1.ReasonRolloutComplete, counts{2, 2, 2, 2})
		for _, p := range listPods(ctx, gomega.Default, w.ns) {
			for _, c := range p.Status.ContainerStatuses {
				want := int32(1) // each twin restarted once: the upgrade, then the reset
				if c.Name != twin1 && c.Name != twin2 {
					want = 0
				}
				gomega.Expect(c.RestartCount).To(gomega.Equal(want), "restarts of %s/%s", p.Name, c.Name)
			}
		}
	})
})
