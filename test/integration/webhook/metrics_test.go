package webhook_test

import (
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
)

// Metric names the webhooks export.
const (
	injectionsMetric        = "sidecarset_injections_total"
	admissionDurationMetric = "sidecarset_pod_admission_duration_seconds"
)

// metricValue sums, over the samples of a metric in controller-runtime's
// registry (the operator runs in this process) whose labels include want,
// the counter and gauge values or the histogram sample counts.
func metricValue(name string, want map[string]string) float64 {
	families, err := metrics.Registry.Gather()
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred())
	total := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if !hasLabels(m, want) {
				continue
			}
			switch {
			case m.GetCounter() != nil:
				total += m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				total += m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				total += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return total
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	found := 0
	for _, l := range m.GetLabel() {
		if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
			found++
		}
	}
	return found == len(want)
}

var _ = ginkgo.Describe("Pod injection metrics", func() {
	ginkgo.It("should count injections, skips and admission durations in the manager's registry", func(ctx ginkgo.SpecContext) {
		ns := newNamespace(ctx, nil)
		s, _ := createSidecarSet(ctx, sidecarSet(ns, "metrics").Containers(builder.MakeContainer("proxy", "envoy:v1")).Obj())
		createInjected(ctx, pod(ns).Obj(), s.Name) // the webhook has seen s

		injected := map[string]string{"sidecarset": s.Name, "outcome": "injected"}
		conflict := map[string]string{"sidecarset": s.Name, "outcome": "NameConflict"}
		durations := map[string]string{"result": "injected"}
		unchanged := map[string]string{"result": "unchanged"}
		before := []float64{metricValue(injectionsMetric, injected), metricValue(injectionsMetric, conflict),
			metricValue(admissionDurationMetric, durations), metricValue(admissionDurationMetric, unchanged)}

		_, _, err := createPod(ctx, pod(ns).Obj())
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		_, warnings, err := createPod(ctx, pod(ns).Containers(builder.MakeContainer("proxy", "my-proxy:v1")).Obj())
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(warnings).To(gomega.HaveLen(1))

		after := []float64{metricValue(injectionsMetric, injected), metricValue(injectionsMetric, conflict),
			metricValue(admissionDurationMetric, durations), metricValue(admissionDurationMetric, unchanged)}
		gomega.Expect(after).To(gomega.Equal([]float64{before[0] + 1, before[1] + 1, before[2] + 1, before[3] + 1}))
	})
})
