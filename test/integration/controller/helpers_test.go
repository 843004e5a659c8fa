package controller_test

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
	"github.com/sidecarset-operator/sidecarset-operator/test/integration/framework"
)

// specLabel is the pod label every SidecarSet of a spec selects, with the
// spec's namespace as its value.
const specLabel = "test.sidecarset-operator.dev/spec"

// newNamespace creates a namespace for one spec and returns its name.
func newNamespace(ctx context.Context) string {
	ns := builder.MakeNamespace("ctrl").Obj()
	gomega.Expect(k8s.Create(ctx, ns)).To(gomega.Succeed())
	ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
		gomega.Expect(client.IgnoreNotFound(k8s.Delete(ctx, ns))).To(gomega.Succeed())
	})
	return ns.Name
}

// createSidecarSet creates a SidecarSet (named after the spec's namespace)
// and deletes it when the spec ends.
func createSidecarSet(ctx context.Context, s *appsv1beta1.SidecarSet) {
	gomega.Expect(k8s.Create(ctx, s)).To(gomega.Succeed())
	ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
		gomega.Expect(client.IgnoreNotFound(k8s.Delete(ctx, s))).To(gomega.Succeed())
	})
}

// startPods creates the named pods of a spec (with extra labels per pod),
// once the pod webhook injects the SidecarSet's container into them, runs
// them, and returns the admission warnings of their creation.
func startPods(ctx context.Context, ns, container string, names []string, labels map[string]map[string]string) []string {
	pod := func(name string) *corev1.Pod {
		w := builder.MakePod("pod", ns).Name(name).Label(specLabel, ns)
		for k, v := range labels[name] {
			w.Label(k, v)
		}
		p := w.Obj()
		p.Spec.NodeName = "node-1"
		return p
	}
	gomega.Eventually(func(g gomega.Gomega) {
		dry := pod(names[0])
		g.Expect(k8s.Create(ctx, dry, client.DryRunAll)).To(gomega.Succeed())
		g.Expect(containerNames(dry)).To(gomega.ContainElement(container), "the webhook does not inject the SidecarSet yet")
	}).WithContext(ctx).Should(gomega.Succeed())
	wctx, warnings := framework.WithWarnings(ctx)
	for _, name := range names {
		p := pod(name)
		gomega.Expect(k8s.Create(wctx, p)).To(gomega.Succeed())
		gomega.Expect(containerNames(p)).To(gomega.ContainElement(container))
	}
	runKubelet(ctx, ns)
	return warnings.List()
}

// podNames are pod-0 ... pod-<n-1>.
func podNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("pod-%d", i)
	}
	return names
}

// containerNames lists a pod's containers, init containers first.
func containerNames(p *corev1.Pod) []string {
	var names []string
	for _, list := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for _, c := range list {
			names = append(names, c.Name)
		}
	}
	return names
}

// listPods lists a namespace's pods, by name.
func listPods(ctx context.Context, g gomega.Gomega, ns string) []corev1.Pod {
	pods := &corev1.PodList{}
	g.Expect(k8s.List(ctx, pods, client.InNamespace(ns))).To(gomega.Succeed())
	slices.SortFunc(pods.Items, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return pods.Items
}

// specImage is the image of a pod's container (or init container).
func specImage(p *corev1.Pod, container string) string {
	for _, list := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for _, c := range list {
			if c.Name == container {
				return c.Image
			}
		}
	}
	return ""
}

// statusImage is the image a pod's container reports running.
func statusImage(p *corev1.Pod, container string) string {
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, c := range list {
			if c.Name == container {
				return c.Image
			}
		}
	}
	return ""
}

// counts are a SidecarSet's status counts.
type counts struct {
	Matched, Updated, Ready, UpdatedReady int32
}

// getSidecarSet reads a SidecarSet.
func getSidecarSet(ctx context.Context, g gomega.Gomega, name string) *appsv1beta1.SidecarSet {
	s := &appsv1beta1.SidecarSet{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, s)).To(gomega.Succeed())
	return s
}

// expectSettled waits until a SidecarSet's status describes its current
// generation with a Progressing reason and status counts. A rollout in any
// reason but Updating has nothing to patch until something changes. A
// complete rollout has no Progressing condition, only Updated (True).
func expectSettled(ctx context.Context, name, reason string, want counts) {
	gomega.EventuallyWithOffset(1, func(g gomega.Gomega) {
		s := getSidecarSet(ctx, g, name)
		g.Expect(s.Status.ObservedGeneration).To(gomega.Equal(s.Generation), "status of an older generation")
		c := meta.FindStatusCondition(s.Status.Conditions, appsv1beta1.SidecarSetConditionProgressing)
		if c == nil && reason == appsv1beta1.ReasonRolloutComplete {
			c = meta.FindStatusCondition(s.Status.Conditions, appsv1beta1.SidecarSetConditionUpdated)
			g.Expect(c).NotTo(gomega.BeNil(), "neither a Progressing nor an Updated condition")
			g.Expect(c.Status).To(gomega.Equal(metav1.ConditionTrue), "Updated: %s", c.Message)
		}
		g.Expect(c).NotTo(gomega.BeNil(), "no Progressing condition")
		g.Expect(c.Reason).To(gomega.Equal(reason), "Progressing: %s", c.Message)
		st := s.Status
		g.Expect(counts{st.MatchedPods, st.UpdatedPods, st.ReadyPods, st.UpdatedReadyPods}).To(gomega.Equal(want), "Progressing: %s", c.Message)
		// Written always, 0 included, as OpenKruise does (kubectl describe
		// shows "Collision Count: 0", as the manual does).
		g.Expect(st.CollisionCount).NotTo(gomega.BeNil(), "no status.collisionCount")
	}).WithContext(ctx).Should(gomega.Succeed())
}

// updateSidecarSet changes a SidecarSet with a merge patch (no conflict
// with the controller's status writes).
func updateSidecarSet(ctx context.Context, name string, mutate func(*appsv1beta1.SidecarSet)) {
	s := getSidecarSet(ctx, gomega.Default, name)
	base := s.DeepCopy()
	mutate(s)
	gomega.ExpectWithOffset(1, k8s.Patch(ctx, s, client.MergeFrom(base))).To(gomega.Succeed())
}
