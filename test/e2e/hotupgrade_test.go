package e2e_test

import (
	"sync"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
)

// Hot upgrade with the manual's hotupgrade-sidecarset: the sidecar runs as
// twins sidecar-1 and sidecar-2; an upgrade puts the new image on the idle
// twin and, once it runs, resets the old twin to the empty image.
const (
	hotName  = "hotupgrade-sidecarset"
	hotEmpty = "openkruise/hotupgrade-sample:empty"
	hotV1    = "openkruise/hotupgrade-sample:sidecarv1"
	hotV2    = "openkruise/hotupgrade-sample:sidecarv2"
	hotV3    = "openkruise/hotupgrade-sample:sidecarv3"
	hotBad   = "openkruise/hotupgrade-sample:sidecarinvalid"
	hotV4    = "openkruise/hotupgrade-sample:sidecarv4"
)

var _ = ginkgo.Describe("Hot upgrade", ginkgo.Label("hotupgrade", "seed"), func() {
	ginkgo.It("should upgrade the idle twin, reset the old one once the new one runs, alternate twins, and survive a bad image", func(ctx ginkgo.SpecContext) {
		ns := createNamespace(ctx, "hot")
		applySeed(ctx, "17-hot-upgrade.yaml")
		expectObserved(ctx, hotName)
		labels := map[string]string{"app": "hotupgrade"}
		runDeployment(ctx, builder.MakeDeployment("hot", ns, 2).PodLabel("app", "hotupgrade").
			Containers(builder.MakeContainer("main", "nginx:1.25")).Obj(), hotName)
		expectTwins(ctx, ns, labels, twins{hotV1, hotEmpty, "sidecar-1"})
		expectStatus(ctx, hotName, 1, counts{Matched: 2, Updated: 2, Ready: 2, UpdatedReady: 2})
		rec := recordTwins(ctx, ns)

		ginkgo.By("upgrading to v2: the idle sidecar-2 gets it, then sidecar-1 is reset")
		gen := setImage(ctx, hotName, "sidecar", hotV2)
		expectTwins(ctx, ns, labels, twins{hotEmpty, hotV2, "sidecar-2"})
		expectStatus(ctx, hotName, gen, counts{Matched: 2, Updated: 2, Ready: 2, UpdatedReady: 2})

		ginkgo.By("upgrading to v3: the twins alternate, sidecar-1 gets it")
		gen = setImage(ctx, hotName, "sidecar", hotV3)
		expectTwins(ctx, ns, labels, twins{hotV3, hotEmpty, "sidecar-1"})
		expectStatus(ctx, hotName, gen, counts{Matched: 2, Updated: 2, Ready: 2, UpdatedReady: 2})
		for pod, seen := range rec.Specs() {
			gomega.Expect(seen).To(gomega.Equal([]twins{
				{hotV1, hotEmpty, "sidecar-1"}, {hotV1, hotV2, "sidecar-2"}, {hotEmpty, hotV2, "sidecar-2"},
				{hotV3, hotV2, "sidecar-1"}, {hotV3, hotEmpty, "sidecar-1"},
			}), "the spec versions of pod %s", pod)
		}
		gomega.Expect(rec.EarlyResets()).To(gomega.BeEmpty(), "a twin was reset before the new one ran")

		ginkgo.By("upgrading to an image that cannot be pulled: the idle twin gets it and the old twin is not reset")
		gen = setImage(ctx, hotName, "sidecar", hotBad)
		var stuck string
		gomega.Eventually(func(g gomega.Gomega) {
			stuck = ""
			for _, p := range listPods(ctx, g, ns, labels) {
				if specContainer(&p, "sidecar-2").Image == hotBad {
					g.Expect(stuck).To(gomega.BeEmpty(), "more than maxUnavailable 1 pod upgraded to the bad image")
					stuck = p.Name
					g.Expect(containerStatus(&p, "sidecar-2").State.Waiting).NotTo(gomega.BeNil())
				}
			}
			g.Expect(stuck).NotTo(gomega.BeEmpty())
		}).WithContext(ctx).Should(gomega.Succeed())
		expectProgressing(ctx, hotName, gen, metav1.ConditionTrue, appsv1beta1.ReasonWaitingForUnavailablePods)
		gomega.Consistently(func(g gomega.Gomega) {
			for _, p := range listPods(ctx, g, ns, labels) {
				if p.Name == stuck {
					g.Expect(twinsOf(&p)).To(gomega.Equal(twins{hotV3, hotBad, "sidecar-2"}))
					g.Expect(podReady(&p)).To(gomega.BeFalse())
				} else {
					g.Expect(twinsOf(&p)).To(gomega.Equal(twins{hotV3, hotEmpty, "sidecar-1"}))
				}
			}
		}).WithContext(ctx).Should(gomega.Succeed())
		expectStatus(ctx, hotName, gen, counts{Matched: 2, Updated: 1, Ready: 1, UpdatedReady: 0})

		ginkgo.By("fixing the image: the failed twin gets it, then the old twin is reset on both pods")
		gen = setImage(ctx, hotName, "sidecar", hotV4)
		expectTwins(ctx, ns, labels, twins{hotEmpty, hotV4, "sidecar-2"})
		expectStatus(ctx, hotName, gen, counts{Matched: 2, Updated: 2, Ready: 2, UpdatedReady: 2})
		gomega.Expect(rec.EarlyResets()).To(gomega.BeEmpty(), "a twin was reset before the new one ran")
		for _, p := range listPods(ctx, gomega.Default, ns, labels) {
			gomega.Expect(containerStatus(&p, "main").RestartCount).To(gomega.BeZero(), "the app container of %s restarted", p.Name)
		}
	})
})

// twins is the hot-upgrade state of a pod's sidecar: the spec images of
// sidecar-1 and sidecar-2 and the working twin.
type twins struct {
	One, Two, Working string
}

func twinsOf(p *corev1.Pod) twins {
	var t twins
	if c := specContainer(p, "sidecar-1"); c != nil {
		t.One = c.Image
	}
	if c := specContainer(p, "sidecar-2"); c != nil {
		t.Two = c.Image
	}
	if st, err := podstate.Read(p.Annotations); err == nil {
		t.Working = st.WorkingHotUpgrade["sidecar"]
	}
	return t
}

// expectTwins waits until every pod has the twins, both running their
// spec images (the idle twin on the empty image), and is ready, with the
// idle twin's version annotation at 0.
func expectTwins(ctx ginkgo.SpecContext, ns string, labels map[string]string, want twins) {
	gomega.EventuallyWithOffset(1, func(g gomega.Gomega) {
		pods := listPods(ctx, g, ns, labels)
		g.Expect(pods).NotTo(gomega.BeEmpty())
		for i := range pods {
			p := &pods[i]
			g.Expect(twinsOf(p)).To(gomega.Equal(want), "pod %s", p.Name)
			g.Expect(containerStatus(p, "sidecar-1").Image).To(gomega.Equal(qualified(want.One)))
			g.Expect(containerStatus(p, "sidecar-2").Image).To(gomega.Equal(qualified(want.Two)))
			g.Expect(podReady(p)).To(gomega.BeTrue())
			idle := "sidecar-1"
			if want.Working == "sidecar-1" {
				idle = "sidecar-2"
			}
			g.Expect(p.Annotations).To(gomega.HaveKeyWithValue(podstate.VersionKey(idle), "0"))
		}
	}, rolloutTimeout).WithContext(ctx).Should(gomega.Succeed())
}

// twinRecorder records, per pod, the sequence of its twins' spec states,
// and the resets (a twin set back to the empty image) made while the other
// twin did not yet run its new image.
type twinRecorder struct {
	mu    sync.Mutex
	specs map[string][]twins
	early []string
}

func recordTwins(ctx ginkgo.SpecContext, ns string) *twinRecorder {
	r := &twinRecorder{specs: map[string][]twins{}}
	watchPods(ctx, ns, func(p *corev1.Pod, deleted bool) {
		if deleted {
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		t := twinsOf(p)
		seq := r.specs[p.Name]
		if len(seq) > 0 && seq[len(seq)-1] == t {
			return
		}
		r.specs[p.Name] = append(seq, t)
		if len(seq) == 0 {
			return
		}
		prev := seq[len(seq)-1]
		for _, reset := range []struct{ was, now, other string }{
			{prev.One, t.One, "sidecar-2"}, {prev.Two, t.Two, "sidecar-1"},
		} {
			if reset.now == hotEmpty && reset.was != hotEmpty {
				other := specContainer(p, reset.other)
				st := containerStatus(p, reset.other)
				if other == nil || st.Image != qualified(other.Image) || !st.Ready {
					r.early = append(r.early, p.Name)
				}
			}
		}
	})
	return r
}

// Specs returns the recorded sequences by pod.
func (r *twinRecorder) Specs() map[string][]twins {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string][]twins, len(r.specs))
	for k, v := range r.specs {
		out[k] = append([]twins(nil), v...)
	}
	return out
}

// EarlyResets returns the pods reset before their new twin ran.
func (r *twinRecorder) EarlyResets() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.early...)
}
