package webhook_test

import (
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sidecarset-operator/sidecarset-operator/version"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/names"
)

// The manager records its version where kubectl sidecarset version reads
// it: the pod webhooks' configuration, written with their scope. Taken
// away, it is written again.
var _ = ginkgo.Describe("The manager's version", func() {
	ginkgo.It("should be recorded on the pod webhooks' configuration, and restored", func(ctx ginkgo.SpecContext) {
		read := func(g gomega.Gomega) *admissionregistrationv1.MutatingWebhookConfiguration {
			cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
			g.Expect(k8s.Get(ctx, types.NamespacedName{Name: names.MutatingConfigName}, cfg)).To(gomega.Succeed())
			return cfg
		}
		expectRecorded := func() {
			gomega.EventuallyWithOffset(1, func(g gomega.Gomega) {
				info, ok := version.FromAnnotations(read(g).Annotations)
				g.Expect(ok).To(gomega.BeTrue())
				g.Expect(info).To(gomega.Equal(version.Get()))
			}).WithContext(ctx).Should(gomega.Succeed())
		}
		expectRecorded()

		gomega.Eventually(func(g gomega.Gomega) {
			cfg := read(g)
			delete(cfg.Annotations, version.Annotation)
			g.Expect(k8s.Update(ctx, cfg)).To(gomega.Succeed())
		}).WithContext(ctx).Should(gomega.Succeed())
		expectRecorded()
	})
})
