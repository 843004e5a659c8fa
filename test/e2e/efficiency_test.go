package e2e_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/sidecarset-operator/sidecarset-operator/test/e2e/framework"
	"github.com/sidecarset-operator/sidecarset-operator/test/promtext"
)

// managerPeakBoundKiB bounds the manager's peak resident memory (VmHWM)
// over the e2e suite, whose largest spec runs 100 pods, with a handful of
// SidecarSets. It starts from the manager's peak in make bench-rollout's
// rollout of 1000 pods (113 MiB, docs/benchmarks.md, "In-place rollout"),
// ten times the pods this suite ever runs; its anonymous memory is what
// grows with the pods, the binary's mapped pages (about 45 MiB) do not.
// The bound is that figure plus a quarter, for the collector lagging
// behind allocation on a loaded two-core machine (GOGC=100 lets the heap
// double between collections).
const managerPeakBoundKiB = 113 * 1024 * 5 / 4

// What a rollout costs: the API server counts the pod writes it served,
// and the kernel the manager's peak memory.
var _ = ginkgo.Describe("Rollout efficiency", ginkgo.Label("efficiency"), func() {
	ginkgo.It("should write each upgraded pod exactly once", func(ctx ginkgo.SpecContext) {
		const pods = 20
		ns := createNamespace(ctx, "cost")
		s := createSidecarSet(ctx, sidecarSet(ns, "sidecar", v1).MaxUnavailable(intstr.FromInt32(10)).Obj())
		runDeployment(ctx, app(ns, "web", pods).Obj(), s.Name)
		expectStatus(ctx, s.Name, 1, counts{Matched: pods, Updated: pods, Ready: pods, UpdatedReady: pods})
		ginkgo.By("waiting until no other spec's namespace is being deleted")
		gomega.Eventually(func(g gomega.Gomega) {
			list := &corev1.NamespaceList{}
			g.Expect(env.Client.List(ctx, list)).To(gomega.Succeed())
			for _, n := range list.Items {
				g.Expect(n.Status.Phase).NotTo(gomega.Equal(corev1.NamespaceTerminating), "namespace %s", n.Name)
			}
		}, rolloutTimeout).WithContext(ctx).Should(gomega.Succeed())

		before := podWrites(ctx)
		gen := setImage(ctx, s.Name, "sidecar", v2)
		expectRolledOut(ctx, ns, appLabels, "sidecar", v2, rolloutTimeout)
		expectStatus(ctx, s.Name, gen, counts{Matched: pods, Updated: pods, Ready: pods, UpdatedReady: pods})
		after := podWrites(ctx)

		// Only the controller writes pods (the main resource) here: kwok and
		// the controller's condition writes use the status subresource, the
		// scheduler the binding subresource; the other specs are done.
		delta := map[string]float64{}
		total := 0.0
		for code, n := range after {
			if d := n - before[code]; d > 0 {
				delta[code] = d
				total += d
			}
		}
		ginkgo.AddReportEntry("pod PATCH/UPDATE requests by code during the rollout", delta)
		gomega.Expect(delta).To(gomega.Equal(map[string]float64{"200": pods}),
			"one successful write per upgraded pod and no failed ones")
		gomega.Expect(total).To(gomega.Equal(float64(pods)))

		hwm, rss := managerMemory()
		ginkgo.AddReportEntry("manager memory", fmt.Sprintf("VmHWM %d kB, VmRSS %d kB", hwm, rss))
		ginkgo.GinkgoWriter.Printf("manager memory: VmHWM %d kB, VmRSS %d kB\n", hwm, rss)
		gomega.Expect(hwm).To(gomega.BeNumerically("<=", managerPeakBoundKiB),
			"the manager's peak resident memory over the suite so far")
	})
})

// The ServiceAccount admission plugin runs again after the webhook changed
// the pod; if it then changed the pod itself (mounting its token into the
// new sidecars), the API server would call the webhook a second time.
var _ = ginkgo.Describe("Admission efficiency", ginkgo.Label("efficiency"), func() {
	ginkgo.It("should admit each injected pod in one webhook call, the sidecar mounting the ServiceAccount token", func(ctx ginkgo.SpecContext) {
		const pods = 5
		ns := createNamespace(ctx, "onecall")
		s := createSidecarSet(ctx, sidecarSet(ns, "sidecar", v1).Obj())
		d := app(ns, "web", pods).Obj()
		expectInjects(ctx, ns, d.Spec.Template.Labels, s.Name)
		match := map[string]string{"sidecarset": s.Name}
		before := managerCounter(ctx, "sidecarset_injections_total", match)
		gomega.Expect(env.Client.Create(ctx, d)).To(gomega.Succeed())
		for _, p := range expectReadyPods(ctx, ns, d.Spec.Selector.MatchLabels, pods, s.Name) {
			sidecar, app := specContainer(&p, "sidecar"), specContainer(&p, "main")
			gomega.Expect(app.VolumeMounts).To(gomega.HaveLen(1))
			gomega.Expect(app.VolumeMounts[0].MountPath).To(gomega.Equal("/var/run/secrets/kubernetes.io/serviceaccount"))
			gomega.Expect(sidecar.VolumeMounts).To(gomega.Equal(app.VolumeMounts))
		}
		calls := managerCounter(ctx, "sidecarset_injections_total", match)
		for outcome, n := range before {
			calls[outcome] -= n
		}
		gomega.Expect(calls).To(gomega.Equal(map[string]float64{"injected": pods}),
			"one webhook call per pod: none saw the pod again (AlreadyInjected)")
	})
})

// managerCounter reads a counter of the manager's metrics endpoint, summed
// by the value of its outcome label, over the samples carrying the given
// labels.
func managerCounter(ctx context.Context, name string, match map[string]string) map[string]float64 {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+framework.MetricsAddr+"/metrics", nil)
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred())
	resp, err := http.DefaultClient.Do(req)
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred())
	scrape, err := promtext.Parse(raw)
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred())
	return scrape.SumBy(name, match, "outcome")
}

// podWrites reads the API server's apiserver_request_total for PATCH and
// UPDATE of pods (the main resource, no subresource), summed by response
// code.
func podWrites(ctx context.Context) map[string]float64 {
	raw, err := env.Clientset.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred())
	scrape, err := promtext.Parse(raw)
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred())
	out := map[string]float64{}
	for _, verb := range []string{"PATCH", "UPDATE"} {
		match := map[string]string{"resource": "pods", "group": "", "subresource": "", "verb": verb}
		for code, n := range scrape.SumBy("apiserver_request_total", match, "code") {
			out[code] += n
		}
	}
	return out
}

// managerMemory reads the manager's peak and current resident set sizes
// (kB) from /proc.
func managerMemory() (hwm, rss int) {
	pid := env.Manager.PID()
	gomega.ExpectWithOffset(1, pid).NotTo(gomega.BeZero())
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred())
	for line := range strings.SplitSeq(string(data), "\n") {
		key, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(value)
		if len(f) == 0 {
			continue
		}
		n, err := strconv.Atoi(f[0])
		if err != nil {
			continue
		}
		switch key {
		case "VmHWM":
			hwm = n
		case "VmRSS":
			rss = n
		}
	}
	return hwm, rss
}
