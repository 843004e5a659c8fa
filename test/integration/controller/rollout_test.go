package controller_test

import (
	"context"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
)

// Every rollout of the table changes the image of one cold sidecar.
const (
	sidecar = "sidecar"
	v1      = "nginx:1.25"
	v2      = "nginx:1.27"
)

// world is one spec's cluster: its namespace, SidecarSet and pods.
type world struct {
	ns, set string
}

// setup is how a rollout of the table starts.
type setup struct {
	// pods is the number of pods, named pod-0, pod-1, ...
	pods int
	// labels are extra labels of some pods, by name.
	labels map[string]map[string]string
	// strategy sets the SidecarSet's update strategy.
	strategy func(*builder.SidecarSetWrapper) *builder.SidecarSetWrapper
	// settled is the Progressing reason once the pods run, if not
	// RolloutComplete.
	settled string
}

// step is one stage of a rollout: an action, then the state the rollout
// must settle in.
type step struct {
	by string
	do func(ctx context.Context, w *world)
	// reason is the Progressing reason the rollout settles in, with the
	// status counts.
	reason string
	counts counts
	// upgraded, when set, lists the pods whose sidecar then has the new
	// image; otherwise only their number is checked (counts.Updated).
	upgraded []string
}

// maxUnavailable is a strategy with only maxUnavailable set.
func maxUnavailable(n int32) func(*builder.SidecarSetWrapper) *builder.SidecarSetWrapper {
	return func(s *builder.SidecarSetWrapper) *builder.SidecarSetWrapper {
		return s.MaxUnavailable(intstr.FromInt32(n))
	}
}

// Actions of the steps.

func setImage(image string) func(context.Context, *world) {
	return func(ctx context.Context, w *world) {
		updateSidecarSet(ctx, w.set, func(s *appsv1beta1.SidecarSet) { s.Spec.Containers[0].Image = image })
	}
}

func setStrategy(mutate func(*appsv1beta1.SidecarSetUpdateStrategy)) func(context.Context, *world) {
	return func(ctx context.Context, w *world) {
		updateSidecarSet(ctx, w.set, func(s *appsv1beta1.SidecarSet) { mutate(&s.Spec.UpdateStrategy) })
	}
}

func kubelet(ctx context.Context, w *world) {
	runKubelet(ctx, w.ns)
}

// deleteUpgraded deletes the pods the controller gave the new image that
// have not restarted yet, at once (no kubelet confirms a graceful deletion).
func deleteUpgraded(ctx context.Context, w *world) {
	for _, p := range listPods(ctx, gomega.Default, w.ns) {
		if specImage(&p, sidecar) == v2 && statusImage(&p, sidecar) != qualified(v2) {
			gomega.Expect(k8s.Delete(ctx, &p, client.GracePeriodSeconds(0))).To(gomega.Succeed())
		}
	}
}

// restartMidRollout restarts the manager, the kubelet restarting the
// upgraded containers while no manager runs.
func restartMidRollout(ctx context.Context, w *world) {
	restartManager(func() { runKubelet(ctx, w.ns) })
}

func label(pod, key, value string) func(context.Context, *world) {
	return func(ctx context.Context, w *world) {
		p := builder.MakePod("", w.ns).Name(pod).Obj()
		patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"`+key+`":"`+value+`"}}}`))
		gomega.Expect(k8s.Patch(ctx, p, patch)).To(gomega.Succeed())
	}
}

var _ = ginkgo.Describe("The SidecarSet controller", func() {
	ginkgo.DescribeTable("should roll a new sidecar image out in place, step by step",
		func(ctx ginkgo.SpecContext, s setup, steps []step) {
			w := &world{ns: newNamespace(ctx)}
			w.set = w.ns
			set := builder.MakeSidecarSet(w.set, specLabel, w.ns).Containers(builder.MakeContainer(sidecar, v1))
			if s.strategy != nil {
				set = s.strategy(set)
			}
			createSidecarSet(ctx, set.Obj())
			names := podNames(s.pods)
			startPods(ctx, w.ns, sidecar, names, s.labels)
			n := int32(s.pods)
			initial := appsv1beta1.ReasonRolloutComplete
			if s.settled != "" {
				initial = s.settled
			}
			expectSettled(ctx, w.set, initial, counts{n, n, n, n})

			for _, st := range steps {
				ginkgo.By(st.by)
				st.do(ctx, w)
				expectSettled(ctx, w.set, st.reason, st.counts)
				var upgraded []string
				for _, p := range listPods(ctx, gomega.Default, w.ns) {
					if specImage(&p, sidecar) == v2 {
						upgraded = append(upgraded, p.Name)
					}
				}
				gomega.Expect(upgraded).To(gomega.HaveLen(int(st.counts.Updated)), "pods with the new image")
				if st.upgraded != nil {
					gomega.Expect(upgraded).To(gomega.Equal(st.upgraded))
				}
			}

			ginkgo.By("checking that each pod restarted its sidecar once, and nothing else")
			for _, p := range listPods(ctx, gomega.Default, w.ns) {
				for _, c := range p.Status.ContainerStatuses {
					want := int32(0)
					if c.Name == sidecar {
						want = 1
					}
					gomega.Expect(c.RestartCount).To(gomega.Equal(want), "restarts of %s/%s", p.Name, c.Name)
				}
			}
		},
		ginkgo.Entry("partition: the last pods stay on the old sidecar until the partition is lowered",
			setup{pods: 4, strategy: func(s *builder.SidecarSetWrapper) *builder.SidecarSetWrapper {
				return s.Partition(intstr.FromInt32(2)).MaxUnavailable(intstr.FromInt32(4))
			}},
			[]step{
				{by: "changing the image: 2 of 4 pods are held by the partition", do: setImage(v2),
					reason: appsv1beta1.ReasonPartitionHeld, counts: counts{4, 2, 2, 0}},
				{by: "restarting the upgraded containers", do: kubelet,
					reason: appsv1beta1.ReasonPartitionHeld, counts: counts{4, 2, 4, 2}},
				{by: "lowering the partition to 0", do: setStrategy(func(us *appsv1beta1.SidecarSetUpdateStrategy) { us.Partition = new(intstr.FromInt32(0)) }),
					reason: appsv1beta1.ReasonUpdatedPodsUnavailable, counts: counts{4, 4, 2, 2}},
				{by: "restarting the upgraded containers", do: kubelet,
					reason: appsv1beta1.ReasonRolloutComplete, counts: counts{4, 4, 4, 4}},
			}),
		ginkgo.Entry("maxUnavailable 1: one pod at a time, the next once the last one runs its new sidecar",
			setup{pods: 3, strategy: maxUnavailable(1)},
			[]step{
				{by: "changing the image", do: setImage(v2), reason: appsv1beta1.ReasonWaitingForUnavailablePods, counts: counts{3, 1, 2, 0}},
				{by: "restarting the first pod's sidecar", do: kubelet, reason: appsv1beta1.ReasonWaitingForUnavailablePods, counts: counts{3, 2, 2, 1}},
				{by: "restarting the second pod's sidecar", do: kubelet, reason: appsv1beta1.ReasonUpdatedPodsUnavailable, counts: counts{3, 3, 2, 2}},
				{by: "restarting the third pod's sidecar", do: kubelet, reason: appsv1beta1.ReasonRolloutComplete, counts: counts{3, 3, 3, 3}},
			}),
		ginkgo.Entry("paused: no pod is upgraded until the rollout is resumed",
			// Nothing to roll out yet: complete (no Progressing condition),
			// paused or not.
			setup{pods: 3, strategy: func(s *builder.SidecarSetWrapper) *builder.SidecarSetWrapper {
				return s.MaxUnavailable(intstr.FromInt32(3)).Paused(true)
			}},
			[]step{
				{by: "changing the image while paused", do: setImage(v2), reason: appsv1beta1.ReasonPaused, counts: counts{3, 0, 3, 0}},
				{by: "resuming", do: setStrategy(func(us *appsv1beta1.SidecarSetUpdateStrategy) { us.Paused = false }),
					reason: appsv1beta1.ReasonUpdatedPodsUnavailable, counts: counts{3, 3, 0, 0}},
				{by: "restarting the upgraded containers", do: kubelet, reason: appsv1beta1.ReasonRolloutComplete, counts: counts{3, 3, 3, 3}},
			}),
		ginkgo.Entry("updateStrategy.selector: only the selected pods are upgraded, and a pod labelled later joins",
			setup{pods: 3,
				labels: map[string]map[string]string{"pod-0": {"canary": "true"}, "pod-1": {"canary": "true"}},
				strategy: func(s *builder.SidecarSetWrapper) *builder.SidecarSetWrapper {
					return s.MaxUnavailable(intstr.FromInt32(3)).UpdateSelector(map[string]string{"canary": "true"})
				}},
			[]step{
				{by: "changing the image", do: setImage(v2), reason: appsv1beta1.ReasonUpdatedPodsUnavailable,
					counts: counts{3, 2, 1, 0}, upgraded: []string{"pod-0", "pod-1"}},
				{by: "restarting the upgraded containers", do: kubelet, reason: appsv1beta1.ReasonNotSelected,
					counts: counts{3, 2, 3, 2}, upgraded: []string{"pod-0", "pod-1"}},
				{by: "labelling the third pod canary=true", do: label("pod-2", "canary", "true"),
					reason: appsv1beta1.ReasonUpdatedPodsUnavailable, counts: counts{3, 3, 2, 2}},
				{by: "restarting its sidecar", do: kubelet, reason: appsv1beta1.ReasonRolloutComplete, counts: counts{3, 3, 3, 3}},
			}),
		ginkgo.Entry("priority: the heaviest weightPriority pods are upgraded first",
			setup{pods: 3,
				labels: map[string]map[string]string{"pod-1": {"priority": "high"}, "pod-2": {"priority": "medium"}},
				strategy: func(s *builder.SidecarSetWrapper) *builder.SidecarSetWrapper {
					return s.MaxUnavailable(intstr.FromInt32(1)).
						WeightPriority(100, map[string]string{"priority": "high"}).
						WeightPriority(50, map[string]string{"priority": "medium"})
				}},
			[]step{
				{by: "changing the image", do: setImage(v2), reason: appsv1beta1.ReasonWaitingForUnavailablePods,
					counts: counts{3, 1, 2, 0}, upgraded: []string{"pod-1"}},
				{by: "restarting its sidecar", do: kubelet, reason: appsv1beta1.ReasonWaitingForUnavailablePods,
					counts: counts{3, 2, 2, 1}, upgraded: []string{"pod-1", "pod-2"}},
				{by: "restarting the next one", do: kubelet, reason: appsv1beta1.ReasonUpdatedPodsUnavailable,
					counts: counts{3, 3, 2, 2}},
				{by: "restarting the last one", do: kubelet, reason: appsv1beta1.ReasonRolloutComplete, counts: counts{3, 3, 3, 3}},
			}),
		ginkgo.Entry("a pod deleted mid-update: the rollout goes on with the others",
			setup{pods: 3, strategy: maxUnavailable(1)},
			[]step{
				{by: "changing the image", do: setImage(v2), reason: appsv1beta1.ReasonWaitingForUnavailablePods, counts: counts{3, 1, 2, 0}},
				{by: "deleting the pod being upgraded", do: deleteUpgraded, reason: appsv1beta1.ReasonWaitingForUnavailablePods, counts: counts{2, 1, 1, 0}},
				{by: "restarting its sidecar", do: kubelet, reason: appsv1beta1.ReasonUpdatedPodsUnavailable, counts: counts{2, 2, 1, 1}},
				{by: "restarting the last one", do: kubelet, reason: appsv1beta1.ReasonRolloutComplete, counts: counts{2, 2, 2, 2}},
			}),
		ginkgo.Entry("a manager restart mid-rollout: the new manager goes on from what the pods record",
			setup{pods: 3, strategy: maxUnavailable(1)},
			[]step{
				{by: "changing the image", do: setImage(v2), reason: appsv1beta1.ReasonWaitingForUnavailablePods, counts: counts{3, 1, 2, 0}},
				{by: "restarting the manager while the kubelet restarts the sidecar", do: restartMidRollout,
					reason: appsv1beta1.ReasonWaitingForUnavailablePods, counts: counts{3, 2, 2, 1}},
				{by: "restarting the next one", do: kubelet, reason: appsv1beta1.ReasonUpdatedPodsUnavailable, counts: counts{3, 3, 2, 2}},
				{by: "restarting the last one", do: kubelet, reason: appsv1beta1.ReasonRolloutComplete, counts: counts{3, 3, 3, 3}},
			}),
	)
})
