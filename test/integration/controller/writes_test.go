package controller_test

import (
	"context"
	"sync"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/sidecarset-operator/sidecarset-operator/api/revision"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
	"github.com/sidecarset-operator/sidecarset-operator/test/integration/framework"
)

// Kinds of SidecarSet writes the writeCounter tells apart.
const (
	specWrite   = "spec"   // Update or Patch of the SidecarSet
	statusWrite = "status" // Update or Patch of its status subresource
)

// writeCounter records the manager's writes of SidecarSets by the
// reconcile that issued them (controller.ReconcileIDFromContext); writes
// outside a reconcile are not recorded.
type writeCounter struct {
	mu sync.Mutex
	// writes are, by SidecarSet and reconcile, the kinds written in turn.
	writes map[string]map[types.UID][]string
}

func (w *writeCounter) record(ctx context.Context, obj client.Object, kind string) {
	id := controller.ReconcileIDFromContext(ctx)
	if _, ok := obj.(*appsv1beta1.SidecarSet); !ok || id == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.writes == nil {
		w.writes = map[string]map[types.UID][]string{}
	}
	if w.writes[obj.GetName()] == nil {
		w.writes[obj.GetName()] = map[types.UID][]string{}
	}
	w.writes[obj.GetName()][id] = append(w.writes[obj.GetName()][id], kind)
}

// funcs intercept the manager's client: each write is recorded, then sent.
func (w *writeCounter) funcs() *interceptor.Funcs {
	return &interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			w.record(ctx, obj, specWrite)
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			w.record(ctx, obj, specWrite)
			return c.Patch(ctx, obj, patch, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			w.record(ctx, obj, sub)
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			w.record(ctx, obj, sub)
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	}
}

// expectOnePerReconcile checks that no reconcile wrote the SidecarSet more
// than once, and returns how many reconciles wrote each kind.
func (w *writeCounter) expectOnePerReconcile(set string) map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	byKind := map[string]int{}
	for id, kinds := range w.writes[set] {
		gomega.ExpectWithOffset(1, kinds).To(gomega.HaveLen(1), "reconcile %s wrote SidecarSet %s %d times", id, set, len(kinds))
		byKind[kinds[0]]++
	}
	return byKind
}

var _ = ginkgo.Describe("The SidecarSet writes", ginkgo.Ordered, func() {
	writes := &writeCounter{}
	ginkgo.BeforeAll(func() {
		gomega.Expect(env.StopManager()).To(gomega.Succeed())
		gomega.Expect(env.StartManager(managerCtx, framework.ManagerOptions{Intercept: writes.funcs()})).To(gomega.Succeed())
	})
	ginkgo.AfterAll(func() {
		restartManager(func() {})
	})

	ginkgo.It("should be one per reconcile in a rollout", func(ctx ginkgo.SpecContext) {
		ns := newNamespace(ctx)
		createSidecarSet(ctx, builder.MakeSidecarSet(ns, specLabel, ns).Containers(builder.MakeContainer(sidecar, v1)).
			MaxUnavailable(intstr.FromInt32(3)).Obj())
		startPods(ctx, ns, sidecar, podNames(3), nil)
		expectSettled(ctx, ns, appsv1beta1.ReasonRolloutComplete, counts{3, 3, 3, 3})

		updateSidecarSet(ctx, ns, func(s *appsv1beta1.SidecarSet) { s.Spec.Containers[0].Image = v2 })
		expectWithImage(ctx, ns, v2, 3)
		runKubelet(ctx, ns)
		expectSettled(ctx, ns, appsv1beta1.ReasonRolloutComplete, counts{3, 3, 3, 3})

		byKind := writes.expectOnePerReconcile(ns)
		gomega.Expect(byKind).To(gomega.HaveKeyWithValue(statusWrite, gomega.BeNumerically(">=", 2)))
		gomega.Expect(byKind).NotTo(gomega.HaveKey(specWrite))
	})

	ginkgo.It("should be one per reconcile when a revision name collides", func(ctx ginkgo.SpecContext) {
		ns := newNamespace(ctx)
		set := builder.MakeSidecarSet(ns, specLabel, ns).Containers(builder.MakeContainer(sidecar, v1)).Obj()
		// A revision of another SidecarSet, or of none, under the name the
		// SidecarSet's first revision would take.
		defaulted := set.DeepCopy()
		appsv1beta1.SetDefaults(defaulted)
		first, err := revision.New(defaulted, framework.OperatorNamespace, 1, new(int32(0)))
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		decoy := &appsv1.ControllerRevision{Data: runtime.RawExtension{Raw: []byte(`{"spec":{}}`)}, Revision: 1}
		decoy.Namespace, decoy.Name = framework.OperatorNamespace, first.Name
		gomega.Expect(k8s.Create(ctx, decoy)).To(gomega.Succeed())
		ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
			gomega.Expect(client.IgnoreNotFound(k8s.Delete(ctx, decoy))).To(gomega.Succeed())
		})

		createSidecarSet(ctx, set)
		startPods(ctx, ns, sidecar, podNames(2), nil)
		expectSettled(ctx, ns, appsv1beta1.ReasonRolloutComplete, counts{2, 2, 2, 2})
		s := getSidecarSet(ctx, gomega.Default, ns)
		gomega.Expect(s.Status.CollisionCount).To(gomega.HaveValue(gomega.BeEquivalentTo(1)), "no collision")
		gomega.Expect(s.Status.LatestRevision).NotTo(gomega.Equal(first.Name))

		byKind := writes.expectOnePerReconcile(ns)
		gomega.Expect(byKind).To(gomega.HaveKeyWithValue(statusWrite, gomega.BeNumerically(">=", 2)))
	})

	ginkgo.It("should be one per reconcile when the failure budget pauses the rollout", func(ctx ginkgo.SpecContext) {
		ns := newNamespace(ctx)
		startBudgetedPods(ctx, ns)

		updateSidecarSet(ctx, ns, func(s *appsv1beta1.SidecarSet) { s.Spec.Containers[0].Image = unpullableImage })
		expectWithImage(ctx, ns, unpullableImage, 3)
		runKubelet(ctx, ns)
		gomega.Eventually(func(g gomega.Gomega) {
			s := getSidecarSet(ctx, g, ns)
			g.Expect(s.Spec.UpdateStrategy.Paused).To(gomega.BeTrue(), "not paused")
			g.Expect(s.Status.ObservedGeneration).To(gomega.Equal(s.Generation), "status of an older generation")
			reason, message := progressing(s)
			g.Expect(reason).To(gomega.Equal(appsv1beta1.ReasonFailureBudgetExceeded), message)
		}).WithContext(ctx).Should(gomega.Succeed())

		byKind := writes.expectOnePerReconcile(ns)
		gomega.Expect(byKind).To(gomega.HaveKeyWithValue(specWrite, 1), "the pause")
		gomega.Expect(byKind).To(gomega.HaveKeyWithValue(statusWrite, gomega.BeNumerically(">=", 2)))
	})
})
