package controller_test

import (
	"context"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
)

var _ = ginkgo.Describe("The SidecarSet controller's other paths", func() {
	ginkgo.It("should resize sidecars in place one pod at a time, each updated only once the kubelet applied its resize", func(ctx ginkgo.SpecContext) {
		ensureNode(ctx)
		ns := newNamespace(ctx)
		createSidecarSet(ctx, builder.MakeSidecarSet(ns, specLabel, ns).MaxUnavailable(intstr.FromInt32(1)).
			Containers(builder.MakeContainer(sidecar, v1).Requests("100m", "64Mi")).Obj())
		startPods(ctx, ns, sidecar, podNames(2), nil)
		expectSettled(ctx, ns, appsv1beta1.ReasonRolloutComplete, counts{2, 2, 2, 2})
		uids := map[string]types.UID{}
		for _, p := range listPods(ctx, gomega.Default, ns) {
			uids[p.Name] = p.UID
		}

		ginkgo.By("doubling the sidecar's CPU: one pod is resized, and not counted updated")
		updateSidecarSet(ctx, ns, func(s *appsv1beta1.SidecarSet) {
			s.Spec.Containers[0].Resources.Requests = builder.MakeContainer("", "").Requests("200m", "64Mi").Resources.Requests
		})
		expectSettled(ctx, ns, appsv1beta1.ReasonUpdating, counts{2, 0, 2, 0})
		gomega.Expect(resizedPods(ctx, ns, "200m")).To(gomega.HaveLen(1))
		gomega.Consistently(func(g gomega.Gomega) {
			g.Expect(resizedPods(ctx, ns, "200m")).To(gomega.HaveLen(1), "maxUnavailable 1 holds the second pod")
			g.Expect(getSidecarSet(ctx, g, ns).Status.UpdatedPods).To(gomega.BeZero())
		}).WithContext(ctx).Should(gomega.Succeed())

		ginkgo.By("the kubelet applying it: that pod is updated, the next one resized")
		runKubelet(ctx, ns)
		expectSettled(ctx, ns, appsv1beta1.ReasonUpdating, counts{2, 1, 2, 1})
		gomega.Expect(resizedPods(ctx, ns, "200m")).To(gomega.HaveLen(2))

		ginkgo.By("the kubelet applying the second: the rollout is complete, no pod recreated or restarted")
		runKubelet(ctx, ns)
		expectSettled(ctx, ns, appsv1beta1.ReasonRolloutComplete, counts{2, 2, 2, 2})
		s := getSidecarSet(ctx, gomega.Default, ns)
		defaulted := s.DeepCopy()
		appsv1beta1.SetDefaults(defaulted)
		hashes, err := appsv1beta1.ComputeHashes(&defaulted.Spec)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		for _, p := range listPods(ctx, gomega.Default, ns) {
			gomega.Expect(p.UID).To(gomega.Equal(uids[p.Name]), "pod %s was recreated", p.Name)
			for _, c := range p.Status.ContainerStatuses {
				gomega.Expect(c.RestartCount).To(gomega.BeZero(), "restarts of %s/%s", p.Name, c.Name)
			}
			st, err := podstate.Read(p.Annotations)
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			// As OpenKruise would have injected the current revision.
			gomega.Expect(st.Hashes[ns].Hash).To(gomega.Equal(hashes.Hash))
			gomega.Expect(st.HashesWithoutImage[ns].Hash).To(gomega.Equal(hashes.WithoutImage))
			gomega.Expect(st.Hashes[ns].ControllerRevision).To(gomega.Equal(s.Status.LatestRevision))
		}
		gomega.Expect(s.Status.ResizePendingPods).To(gomega.BeZero())
		gomega.Expect(meta.FindStatusCondition(s.Status.Conditions, appsv1beta1.SidecarSetConditionResized)).To(gomega.BeNil())
	})

	ginkgo.It("should evict pods through the Eviction API, waiting for their PodDisruptionBudget, never touching a bare pod", func(ctx ginkgo.SpecContext) {
		ns := newNamespace(ctx)
		createSidecarSet(ctx, builder.MakeSidecarSet(ns, specLabel, ns).MaxUnavailable(intstr.FromInt32(1)).
			Annotation(appsv1beta1.RecreatePodsAnnotation, "true").
			Containers(builder.MakeContainer(sidecar, v1).Env("MODE", "a")).Obj())
		rs := replicaSet(ctx, ns)
		startPods(ctx, ns, sidecar, []string{"pod-0", "pod-1", "bare"}, nil)
		for _, name := range []string{"pod-0", "pod-1"} {
			ownBy(ctx, ns, name, rs)
		}
		pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}, Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: new(intstr.FromInt32(0)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{specLabel: ns}}}}
		gomega.Expect(k8s.Create(ctx, pdb)).To(gomega.Succeed())
		expectSettled(ctx, ns, appsv1beta1.ReasonRolloutComplete, counts{3, 3, 3, 3})

		ginkgo.By("changing the sidecar's env: the PodDisruptionBudget refuses the evictions")
		updateSidecarSet(ctx, ns, func(s *appsv1beta1.SidecarSet) { s.Spec.Containers[0].Env[0].Value = "b" })
		gomega.Eventually(func(g gomega.Gomega) {
			s := getSidecarSet(ctx, g, ns)
			c := meta.FindStatusCondition(s.Status.Conditions, appsv1beta1.SidecarSetConditionRecreated)
			g.Expect(c).NotTo(gomega.BeNil())
			g.Expect(c.Reason).To(gomega.Equal(appsv1beta1.ReasonWaitingForPodDisruptionBudget))
			g.Expect(c.Message).To(gomega.ContainSubstring("1 pod not recreatable: " + ns + "/bare"))
			g.Expect(s.Status.RecreatePendingPods).To(gomega.Equal(int32(2)))
			p := meta.FindStatusCondition(s.Status.Conditions, appsv1beta1.SidecarSetConditionProgressing)
			g.Expect(p).NotTo(gomega.BeNil())
			g.Expect(p.Reason).To(gomega.Equal(appsv1beta1.ReasonWaitingForPodDisruptionBudget))
		}).WithContext(ctx).Should(gomega.Succeed())
		gomega.Consistently(func(g gomega.Gomega) {
			g.Expect(terminating(ctx, g, ns)).To(gomega.BeEmpty())
		}).WithContext(ctx).Should(gomega.Succeed())

		ginkgo.By("removing the budget: one pod is evicted (maxUnavailable 1), and waits for its replacement")
		gomega.Expect(k8s.Delete(ctx, pdb)).To(gomega.Succeed())
		recreating := func(g gomega.Gomega) {
			g.Expect(terminating(ctx, g, ns)).To(gomega.HaveLen(1))
			c := meta.FindStatusCondition(getSidecarSet(ctx, g, ns).Status.Conditions, appsv1beta1.SidecarSetConditionRecreated)
			g.Expect(c).NotTo(gomega.BeNil())
			g.Expect(c.Reason).To(gomega.Equal(appsv1beta1.ReasonRecreating))
			g.Expect(c.Message).To(gomega.HavePrefix("2 pods to recreate: 1 being replaced, 1 waiting; maxUnavailable 1 is used up"))
		}
		gomega.Eventually(recreating).WithContext(ctx).Should(gomega.Succeed())
		gomega.Consistently(recreating).WithContext(ctx).Should(gomega.Succeed())

		ginkgo.By("the ReplicaSet's replacement running: the second pod is evicted, the bare pod never")
		startPods(ctx, ns, sidecar, []string{"pod-2"}, nil)
		ownBy(ctx, ns, "pod-2", rs)
		gomega.Eventually(func(g gomega.Gomega) {
			g.Expect(terminating(ctx, g, ns)).To(gomega.ConsistOf("pod-0", "pod-1"))
		}).WithContext(ctx).Should(gomega.Succeed())
		bare := &corev1.Pod{}
		gomega.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "bare"}, bare)).To(gomega.Succeed())
		gomega.Expect(bare.DeletionTimestamp).To(gomega.BeNil())
	})
})

// ensureNode creates the node the suite's pods run on, which the API
// server's PodResize admission reads (its operating system and allocatable
// resources).
func ensureNode(ctx context.Context) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{corev1.LabelOSStable: "linux"}}}
	if err := k8s.Create(ctx, node); !apierrors.IsAlreadyExists(err) {
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
	}
	gomega.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(node), node)).To(gomega.Succeed())
	node.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("64Gi"),
		corev1.ResourcePods: resource.MustParse("110")}
	node.Status.Allocatable = node.Status.Capacity.DeepCopy()
	gomega.Expect(k8s.Status().Update(ctx, node)).To(gomega.Succeed())
}

// resizedPods lists the pods whose sidecar requests a CPU.
func resizedPods(ctx context.Context, ns, cpu string) []string {
	var out []string
	for _, p := range listPods(ctx, gomega.Default, ns) {
		for _, c := range p.Spec.Containers {
			if c.Name == sidecar && c.Resources.Requests.Cpu().String() == cpu {
				out = append(out, p.Name)
			}
		}
	}
	return out
}

// terminating lists the pods being deleted (with no kubelet to confirm a
// graceful deletion, an evicted pod stays so).
func terminating(ctx context.Context, g gomega.Gomega, ns string) []string {
	var out []string
	for _, p := range listPods(ctx, g, ns) {
		if p.DeletionTimestamp != nil {
			out = append(out, p.Name)
		}
	}
	return out
}

// replicaSet creates a ReplicaSet that no controller runs: the pods the
// test gives it count as its pods, and no replacement comes unless the test
// creates it.
func replicaSet(ctx context.Context, ns string) *appsv1.ReplicaSet {
	labels := map[string]string{"rs": "web"}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}, Spec: appsv1.ReplicaSetSpec{
		Replicas: new(int32(2)), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox:1.36"}}}},
	}}
	gomega.Expect(k8s.Create(ctx, rs)).To(gomega.Succeed())
	return rs
}

// ownBy makes a pod the ReplicaSet's.
func ownBy(ctx context.Context, ns, name string, rs *appsv1.ReplicaSet) {
	p := &corev1.Pod{}
	gomega.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p)).To(gomega.Succeed())
	base := p.DeepCopy()
	p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}
	gomega.Expect(k8s.Patch(ctx, p, client.MergeFrom(base))).To(gomega.Succeed())
}
