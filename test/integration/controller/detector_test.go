package controller_test

import (
	"context"
	"slices"
	"sync"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sidecarset-operator/sidecarset-operator/api/match"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/controllers/detect"
	"github.com/sidecarset-operator/sidecarset-operator/internal/candidate"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
	"github.com/sidecarset-operator/sidecarset-operator/test/integration/framework"
)

// detectorRun is a detector alone in a manager of its own, against the
// suite's API server, and the SidecarSets it told a controller of.
type detectorRun struct {
	detector *detect.Detector
	mu       sync.Mutex
	told     []string
}

// startDetector runs the registry's follower and the detector in a manager
// of their own until the spec ends.
func startDetector(ctx context.Context) *detectorRun {
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:                 framework.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: new(true)},
	})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	registry := candidate.NewRegistry()
	gomega.Expect(mgr.Add(&candidate.Follower{Registry: registry, Informer: func(ctx context.Context) (candidate.Informer, error) {
		return mgr.GetCache().GetInformer(ctx, &appsv1beta1.SidecarSet{}, cache.BlockUntilSynced(false))
	}})).To(gomega.Succeed())
	run := &detectorRun{detector: detect.New(mgr.GetCache(), registry, framework.OperatorNamespace)}
	gomega.Expect(run.detector.SetupWithManager(mgr)).To(gomega.Succeed())
	gomega.Expect(ctrl.NewControllerManagedBy(mgr).Named("detector-changes").WatchesRawSource(run.detector.Changes()).
		Complete(reconcile.Func(func(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
			run.mu.Lock()
			defer run.mu.Unlock()
			run.told = append(run.told, req.Name)
			return reconcile.Result{}, nil
		}))).To(gomega.Succeed())
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	ginkgo.DeferCleanup(func() {
		cancel()
		gomega.Expect(<-done).To(gomega.Succeed())
	})
	gomega.Eventually(run.detector.Synced).Should(gomega.BeTrue())
	return run
}

// toldOf takes the times the controller was told of a SidecarSet.
func (r *detectorRun) toldOf(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	r.told = slices.DeleteFunc(r.told, func(s string) bool {
		if s == name {
			n++
		}
		return s == name
	})
	return n
}

var _ = ginkgo.Describe("The detector of pods without their sidecars, alone", func() {
	ginkgo.It("should report a pod created without its sidecar, forget it when deleted, and rescan on a selector change",
		func(ctx ginkgo.SpecContext) {
			run := startDetector(ctx)
			ns := newNamespace(ctx)
			// Created before any SidecarSet selects them: not injected.
			pods := map[string]*corev1.Pod{}
			for _, tier := range []string{"front", "back"} {
				p := builder.MakePod("pod", ns).Name(tier).Label(specLabel, ns).Label("tier", tier).Obj()
				gomega.Expect(k8s.Create(ctx, p)).To(gomega.Succeed())
				pods[tier] = p
			}
			key := func(tier string) types.NamespacedName { return client.ObjectKeyFromObject(pods[tier]) }
			set := builder.MakeSidecarSet(ns, specLabel, ns).SelectorLabel("tier", "front").
				Containers(builder.MakeContainer("agent", "agent:1")).Obj()
			createSidecarSet(ctx, set)

			gomega.Eventually(func() []detect.NotInjectedPod { return run.detector.NotInjected(set.Name) }).Should(gomega.Equal(
				[]detect.NotInjectedPod{{Pod: key("front"), Reason: match.NotInjectedCreatedBefore}}))
			gomega.Eventually(func() int { return run.toldOf(set.Name) }).Should(gomega.BeNumerically(">", 0))

			gomega.Expect(k8s.Delete(ctx, pods["front"], client.GracePeriodSeconds(0))).To(gomega.Succeed())
			gomega.Eventually(func() []detect.NotInjectedPod { return run.detector.NotInjected(set.Name) }).Should(gomega.BeEmpty())
			gomega.Eventually(func() int { return run.toldOf(set.Name) }).Should(gomega.BeNumerically(">", 0))

			gomega.Eventually(func(g gomega.Gomega) {
				s := getSidecarSet(ctx, g, set.Name)
				s.Spec.Selector.MatchLabels["tier"] = "back"
				g.Expect(k8s.Update(ctx, s)).To(gomega.Succeed())
			}).WithContext(ctx).Should(gomega.Succeed())
			gomega.Eventually(func() []detect.NotInjectedPod { return run.detector.NotInjected(set.Name) }).Should(gomega.Equal(
				[]detect.NotInjectedPod{{Pod: key("back"), Reason: match.NotInjectedCreatedBefore}}))
			gomega.Eventually(func() int { return run.toldOf(set.Name) }).Should(gomega.BeNumerically(">", 0))
		})
})
