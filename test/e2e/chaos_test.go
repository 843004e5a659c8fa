package e2e_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
)

// chaosLabel marks the pods the chaos spec creates, for the clean-up of
// those in kube-system and default.
const chaosLabel = "e2e.sidecarset-operator.dev/chaos"

// admission is the outcome of one pod creation.
type admission struct {
	err      error
	latency  time.Duration
	injected []string // containers added to the pod's own ("main")
}

// admit creates a bare pod and reports how long the API server took.
func admit(ctx context.Context, ns, name string, labels map[string]string) admission {
	p := builder.MakePod(name, ns).Name(name).Containers(builder.MakeContainer("main", "nginx:1.25")).Obj()
	p.Labels = map[string]string{chaosLabel: "true"}
	maps.Copy(p.Labels, labels)
	// Nothing schedules these pods: they only measure admission.
	p.Spec.SchedulerName = "chaos-no-scheduler"
	start := time.Now()
	err := env.Client.Create(ctx, p)
	a := admission{err: err, latency: time.Since(start)}
	if err == nil {
		for _, c := range p.Spec.Containers {
			if c.Name != "main" {
				a.injected = append(a.injected, c.Name)
			}
		}
	}
	return a
}

// admissions is a group of pod creations of one kind, with their figures.
type admissions struct {
	kind     string
	results  []admission
	admitted int
}

func (a *admissions) add(r admission) {
	a.results = append(a.results, r)
	if r.err == nil {
		a.admitted++
	}
}

func (a *admissions) maxLatency() time.Duration {
	var m time.Duration
	for _, r := range a.results {
		m = max(m, r.latency)
	}
	return m
}

func (a *admissions) String() string {
	lat := make([]time.Duration, len(a.results))
	for i, r := range a.results {
		lat[i] = r.latency
	}
	slices.Sort(lat)
	return fmt.Sprintf("%s: %d/%d admitted, latency p50 %v max %v", a.kind, a.admitted, len(a.results),
		lat[len(lat)/2].Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond))
}

// The operator's outage must not stop pod creation where it has no say: pods
// no SidecarSet selects never reach a webhook, pods only best-effort
// SidecarSets select are admitted without them, and only the pods a required
// SidecarSet selects wait for it.
var _ = ginkgo.Describe("An operator outage", ginkgo.Label("chaos"), func() {
	ginkgo.It("should block only the pods a required SidecarSet selects, and admit them again once the manager is back", func(ctx ginkgo.SpecContext) {
		required, bestEffort, other := createNamespace(ctx, "chaos-req"), createNamespace(ctx, "chaos-be"), createNamespace(ctx, "chaos-none")
		mtls := createSidecarSet(ctx, builder.MakeSidecarSet(required+"-mtls", "app", "web").Namespace(required).
			Containers(builder.MakeContainer("proxy", v1)).Obj())
		logs := createSidecarSet(ctx, builder.MakeSidecarSet(bestEffort+"-logs", "app", "web").Namespace(bestEffort).
			Annotation(appsv1beta1.FailurePolicyAnnotation, appsv1beta1.FailurePolicyIgnore).
			Containers(builder.MakeContainer("log-agent", v1)).Obj())
		expectInjects(ctx, required, appLabels, mtls.Name)
		expectInjects(ctx, bestEffort, appLabels, logs.Name)

		seq := 0
		// unselected creates pods no SidecarSet selects: in kube-system, in
		// default and a third namespace with the SidecarSets' label, and
		// in the SidecarSets' namespaces without it.
		unselected := func(kind string, n int) *admissions {
			out := &admissions{kind: kind}
			places := []struct {
				ns     string
				labels map[string]string
			}{{"kube-system", appLabels}, {"default", appLabels}, {other, appLabels}, {required, map[string]string{"app": "db"}}, {bestEffort, nil}}
			for i := range n {
				seq++
				p := places[i%len(places)]
				out.add(admit(ctx, p.ns, fmt.Sprintf("chaos-%d", seq), p.labels))
			}
			return out
		}
		selectedIn := func(kind, ns string, n int) *admissions {
			out := &admissions{kind: kind}
			for range n {
				seq++
				out.add(admit(ctx, ns, fmt.Sprintf("chaos-%d", seq), appLabels))
			}
			return out
		}
		ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
			for _, ns := range []string{"kube-system", "default"} {
				gomega.Expect(env.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns),
					client.MatchingLabels{chaosLabel: "true"}, client.GracePeriodSeconds(0))).To(gomega.Succeed())
			}
		})

		ginkgo.By("measuring admission with the manager running")
		baseline := unselected("unselected, manager running", 10)
		gomega.Expect(baseline.admitted).To(gomega.Equal(10))
		running := selectedIn("best-effort only, manager running", bestEffort, 3)
		for _, r := range running.results {
			gomega.Expect(r.injected).To(gomega.Equal([]string{"log-agent"}))
		}

		ginkgo.By("stalling the manager (SIGSTOP)")
		pid := env.Manager.PID()
		gomega.Expect(syscall.Kill(pid, syscall.SIGSTOP)).To(gomega.Succeed())
		stopped := true
		ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
			if stopped {
				_ = syscall.Kill(pid, syscall.SIGCONT)
				_ = env.Manager.Kill()
				gomega.Expect(env.StartManager(ctx)).To(gomega.Succeed())
			}
		})
		stalledUnselected := unselected("unselected, manager stalled", 20)
		stalledBestEffort := selectedIn("best-effort only, manager stalled", bestEffort, 5)
		stalledRequired := selectedIn("required, manager stalled", required, 2)

		ginkgo.By("killing the manager (SIGKILL)")
		gomega.Expect(env.Manager.Kill()).To(gomega.Succeed())
		killedUnselected := unselected("unselected, manager killed", 20)
		killedBestEffort := selectedIn("best-effort only, manager killed", bestEffort, 5)
		killedRequired := selectedIn("required, manager killed", required, 3)

		ginkgo.By("restarting the manager")
		restart := time.Now()
		gomega.Expect(env.StartManager(ctx)).To(gomega.Succeed())
		stopped = false
		ready := time.Since(restart)
		var back time.Duration
		gomega.Eventually(func(g gomega.Gomega) {
			seq++
			r := admit(ctx, required, fmt.Sprintf("chaos-%d", seq), appLabels)
			g.Expect(r.err).NotTo(gomega.HaveOccurred())
			g.Expect(r.injected).To(gomega.Equal([]string{"proxy"}))
			back = time.Since(restart)
		}).WithContext(ctx).WithTimeout(managerReadyTimeout).Should(gomega.Succeed())

		all := []*admissions{baseline, running, stalledUnselected, stalledBestEffort, stalledRequired, killedUnselected, killedBestEffort, killedRequired}
		var report []string
		for _, a := range all {
			report = append(report, a.String())
		}
		report = append(report, fmt.Sprintf("manager restarted: ready after %v, required pods admitted (injected) again after %v",
			ready.Round(100*time.Millisecond), back.Round(100*time.Millisecond)))
		ginkgo.AddReportEntry("chaos", strings.Join(report, "\n"))
		ginkgo.GinkgoWriter.Println(strings.Join(report, "\n"))

		// Unselected pods never wait for the operator: admitted at the
		// latency of a running manager (no webhook timeout of a second or
		// more).
		for _, a := range []*admissions{stalledUnselected, killedUnselected} {
			gomega.Expect(a.admitted).To(gomega.Equal(len(a.results)), a.String())
			gomega.Expect(a.maxLatency()).To(gomega.BeNumerically("<", 500*time.Millisecond), a.String())
		}
		// Best-effort pods are admitted without the sidecar: at once when
		// the manager is gone, after the best-effort webhook's one-second
		// timeout while it hangs (never the required webhook's three).
		for _, a := range []*admissions{stalledBestEffort, killedBestEffort} {
			gomega.Expect(a.admitted).To(gomega.Equal(len(a.results)), a.String())
			for _, r := range a.results {
				gomega.Expect(r.injected).To(gomega.BeEmpty())
			}
		}
		gomega.Expect(stalledBestEffort.maxLatency()).To(gomega.BeNumerically("<", 2*time.Second), stalledBestEffort.String())
		gomega.Expect(killedBestEffort.maxLatency()).To(gomega.BeNumerically("<", 500*time.Millisecond), killedBestEffort.String())
		// Required pods are refused, naming the webhook.
		for _, a := range []*admissions{stalledRequired, killedRequired} {
			gomega.Expect(a.admitted).To(gomega.BeZero(), a.String())
			for _, r := range a.results {
				gomega.Expect(r.err).To(gomega.MatchError(gomega.ContainSubstring(`failed calling webhook "mpod.sidecarset-operator.dev"`)))
			}
		}
		gomega.Expect(killedRequired.maxLatency()).To(gomega.BeNumerically("<", 500*time.Millisecond), killedRequired.String())
		gomega.Expect(back-ready).To(gomega.BeNumerically("<", 10*time.Second), "required pods admitted again within seconds of the manager's return")
	}, ginkgo.SpecTimeout(3*managerReadyTimeout+2*time.Minute))
})
