package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

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
		gomega.Expect(hwm).To(gomega.BeNumerically(">", 0))
	})
})

// metricLabel matches one label of a Prometheus text-format sample.
var metricLabel = regexp.MustCompile(`(\w+)="((?:[^"\\]|\\.)*)"`)

// podWrites reads the API server's apiserver_request_total for PATCH and
// UPDATE of pods (the main resource, no subresource), summed by response
// code.
func podWrites(ctx context.Context) map[string]float64 {
	raw, err := env.Clientset.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred())
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, "apiserver_request_total{")
		if !ok {
			continue
		}
		end := strings.LastIndexByte(rest, '}')
		gomega.ExpectWithOffset(1, end).To(gomega.BeNumerically(">=", 0), line)
		labels := map[string]string{}
		for _, m := range metricLabel.FindAllStringSubmatch(rest[:end], -1) {
			labels[m[1]] = m[2]
		}
		if labels["resource"] != "pods" || labels["group"] != "" || labels["subresource"] != "" ||
			(labels["verb"] != "PATCH" && labels["verb"] != "UPDATE") {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(rest[end+1:]), 64)
		gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred(), line)
		out[labels["code"]] += v
	}
	gomega.ExpectWithOffset(1, sc.Err()).NotTo(gomega.HaveOccurred())
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
