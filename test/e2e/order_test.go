package e2e_test

import (
	"slices"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
)

// The upgrade order. With maxUnavailable 1 the controller upgrades one pod
// at a time, so the order in which pods get the new image in their spec
// (recorded from a watch) is the order the controller chose.
var _ = ginkgo.Describe("The in-place upgrade order", ginkgo.Label("order"), func() {
	var ns string
	ginkgo.BeforeEach(func(ctx ginkgo.SpecContext) {
		ns = createNamespace(ctx, "order")
	})

	// webPod is a plain pod of the spec's application.
	webPod := func(name string, labels map[string]string) *corev1.Pod {
		w := builder.MakePod(name, ns).Name(name).Label("app", "web").Containers(builder.MakeContainer("main", "nginx:1.25"))
		for k, v := range labels {
			w.Label(k, v)
		}
		return w.Obj()
	}

	ginkgo.It("should upgrade a not-ready pod first, then the most recently ready pods first", func(ctx ginkgo.SpecContext) {
		s := createSidecarSet(ctx, sidecarSet(ns, "sidecar", v1).MaxUnavailable(intstr.FromInt32(1)).Obj())

		ginkgo.By("creating the oldest pod, never ready (its image cannot be pulled), then four ready pods, each ready a second after the previous")
		broken := webPod("broken", nil)
		broken.Spec.Containers[0].Image = "nginx:1.25-invalid"
		runPod(ctx, broken, s.Name, false)
		for _, name := range []string{"pod-1", "pod-2", "pod-3", "pod-4"} {
			p := runPod(ctx, webPod(name, nil), s.Name, true)
			// The ready time has a one-second resolution: the next pod must
			// become ready in a later second for the order to be defined.
			readyAt := readyTime(p)
			gomega.Eventually(func() time.Time { return time.Now().Truncate(time.Second) }).
				WithContext(ctx).Should(gomega.BeTemporally(">", readyAt))
		}

		rec := recordRollout(ctx, ns, "sidecar", v2)
		gen := setImage(ctx, s.Name, "sidecar", v2)
		gomega.Eventually(rec.Order).WithContext(ctx).Should(gomega.Equal([]string{"broken"}))

		ginkgo.By("holding the others while the upgraded pod is not ready: it takes the whole budget")
		c := expectProgressing(ctx, s.Name, gen, metav1.ConditionTrue, appsv1beta1.ReasonWaitingForUnavailablePods)
		gomega.Expect(c.Message).To(gomega.ContainSubstring("4 of 5 pods wait: maxUnavailable 1 is used up by 1 pod upgrading or not ready"))
		gomega.Consistently(rec.Order).WithContext(ctx).Should(gomega.HaveLen(1))

		ginkgo.By("fixing the broken pod's image")
		patchImage(ctx, broken, "main", "nginx:1.25")
		expectRolledOut(ctx, ns, appLabels, "sidecar", v2, rolloutTimeout)
		gomega.Expect(rec.Order()).To(gomega.Equal([]string{"broken", "pod-4", "pod-3", "pod-2", "pod-1"}))
		expectStatus(ctx, s.Name, gen, counts{Matched: 5, Updated: 5, Ready: 5, UpdatedReady: 5})
		gomega.Expect(rec.MaxUnavailable()).To(gomega.Equal(1))
	})

	ginkgo.It("should upgrade the pods with the highest weightPriority first", func(ctx ginkgo.SpecContext) {
		s := createSidecarSet(ctx, sidecarSet(ns, "sidecar", v1).MaxUnavailable(intstr.FromInt32(1)).
			WeightPriority(50, map[string]string{"test-key": "foo"}).
			WeightPriority(30, map[string]string{"test-key": "bar"}).Obj())
		for _, p := range []*corev1.Pod{
			webPod("plain-1", nil), webPod("bar", map[string]string{"test-key": "bar"}),
			webPod("foo", map[string]string{"test-key": "foo"}), webPod("plain-2", nil),
		} {
			runPod(ctx, p, s.Name, true)
		}

		rec := recordRollout(ctx, ns, "sidecar", v2)
		setImage(ctx, s.Name, "sidecar", v2)
		expectRolledOut(ctx, ns, appLabels, "sidecar", v2, rolloutTimeout)
		order := rec.Order()
		gomega.Expect(order).To(gomega.HaveLen(4))
		gomega.Expect(order[:2]).To(gomega.Equal([]string{"foo", "bar"}))
		gomega.Expect(rec.MaxUnavailable()).To(gomega.Equal(1))
	})

	ginkgo.It("should upgrade by orderPriority: the larger trailing number first, pods without the key last", func(ctx ginkgo.SpecContext) {
		s := createSidecarSet(ctx, sidecarSet(ns, "sidecar", v1).MaxUnavailable(intstr.FromInt32(1)).
			OrderPriority("some-label-key").Obj())
		for _, p := range []*corev1.Pod{
			webPod("keyless", nil),
			webPod("sts-5", map[string]string{"some-label-key": "sts-5"}),
			webPod("sts-20", map[string]string{"some-label-key": "sts-20"}),
			webPod("sts-10", map[string]string{"some-label-key": "sts-10"}),
		} {
			runPod(ctx, p, s.Name, true)
		}

		rec := recordRollout(ctx, ns, "sidecar", v2)
		setImage(ctx, s.Name, "sidecar", v2)
		expectRolledOut(ctx, ns, appLabels, "sidecar", v2, rolloutTimeout)
		gomega.Expect(rec.Order()).To(gomega.Equal([]string{"sts-20", "sts-10", "sts-5", "keyless"}))
	})

	ginkgo.It("should scatter the 3 pods labelled foo=bar among 10 to upgrade positions 1, 6 and 10", ginkgo.Label("seed"), func(ctx ginkgo.SpecContext) {
		s := createSidecarSet(ctx, sidecarSet(ns, "sidecar", v1).MaxUnavailable(intstr.FromInt32(1)).
			Scatter("foo", "bar").Obj())
		runDeployment(ctx, app(ns, "plain", 7).Obj(), s.Name)
		carriers := runDeployment(ctx, app(ns, "foo", 3).PodLabel("foo", "bar").Obj(), s.Name)

		rec := recordRollout(ctx, ns, "sidecar", v2)
		setImage(ctx, s.Name, "sidecar", v2)
		expectRolledOut(ctx, ns, appLabels, "sidecar", v2, rolloutTimeout)
		order := rec.Order()
		gomega.Expect(order).To(gomega.HaveLen(10))
		var positions []int
		for _, p := range carriers {
			positions = append(positions, slices.Index(order, p.Name)+1)
		}
		slices.Sort(positions)
		gomega.Expect(positions).To(gomega.Equal([]int{1, 6, 10}), "upgrade order %v", order)
	})
})

// readyTime is when the pod last became ready.
func readyTime(p *corev1.Pod) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}
