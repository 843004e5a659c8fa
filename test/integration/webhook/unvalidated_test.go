package webhook_test

import (
	"context"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// validatingConfiguration is the ValidatingWebhookConfiguration installed
// from config/webhook.
const validatingConfiguration = "sidecarset-operator-validating"

// unvalidatedLabel marks the SidecarSets that createUnvalidated admits
// without the validating webhook.
const unvalidatedLabel = "test.sidecarset-operator.dev/unvalidated"

// createUnvalidated creates a SidecarSet that our validation would reject,
// as one created before the operator took over (under OpenKruise's laxer
// validation) would exist: the validating webhook is told to skip objects
// with unvalidatedLabel while it is created, then restored. The
// defaulting webhook still runs. The SidecarSet is deleted when the spec
// ends.
func createUnvalidated(ctx context.Context, s *appsv1beta1.SidecarSet) *appsv1beta1.SidecarSet {
	if s.Labels == nil {
		s.Labels = map[string]string{}
	}
	s.Labels[unvalidatedLabel] = "true"
	setValidationBypass(ctx, true)
	ginkgo.DeferCleanup(setValidationBypass, false)

	gomega.Eventually(func(g gomega.Gomega) {
		g.Expect(k8s.Create(ctx, s.DeepCopy(), client.DryRunAll)).To(gomega.Succeed())
	}).WithContext(ctx).Should(gomega.Succeed())
	gomega.Expect(k8s.Create(ctx, s)).To(gomega.Succeed())
	deleteSidecarSetAtEnd(s)

	setValidationBypass(ctx, false)
	// A copy under another name conflicts with s: only our validation
	// rejects it, once the bypass is gone.
	probe := s.DeepCopy()
	probe.ObjectMeta = metav1.ObjectMeta{Name: s.Name + "-probe", Labels: s.Labels}
	gomega.Eventually(func(g gomega.Gomega) {
		err := k8s.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring(validationWebhook)))
	}).WithContext(ctx).Should(gomega.Succeed())
	return s
}

// setValidationBypass makes the validating webhook skip (or stop skipping)
// SidecarSets labelled unvalidatedLabel.
func setValidationBypass(ctx context.Context, on bool) {
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	gomega.Expect(k8s.Get(ctx, keyOf(validatingConfiguration), cfg)).To(gomega.Succeed())
	for i := range cfg.Webhooks {
		if on {
			cfg.Webhooks[i].ObjectSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: unvalidatedLabel, Operator: metav1.LabelSelectorOpDoesNotExist}}}
		} else {
			cfg.Webhooks[i].ObjectSelector = &metav1.LabelSelector{}
		}
	}
	gomega.Expect(k8s.Update(ctx, cfg)).To(gomega.Succeed())
}
