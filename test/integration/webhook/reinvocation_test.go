package webhook_test

import (
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
	"github.com/sidecarset-operator/sidecarset-operator/test/integration/framework"
)

// otherMutator is another team's mutating webhook: it adds the label
// mutated-by=other and the container "added-by-other" to every pod that
// lacks them.
type otherMutator struct {
	calls atomic.Int32
}

func (m *otherMutator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer ginkgo.GinkgoRecover()
	m.calls.Add(1)
	review := &admissionv1.AdmissionReview{}
	gomega.Expect(json.NewDecoder(r.Body).Decode(review)).To(gomega.Succeed())
	p := &corev1.Pod{}
	gomega.Expect(json.Unmarshal(review.Request.Object.Raw, p)).To(gomega.Succeed())

	var ops []map[string]any
	if p.Labels == nil {
		ops = append(ops, map[string]any{"op": "add", "path": "/metadata/labels", "value": map[string]string{}})
	}
	if p.Labels["mutated-by"] == "" {
		ops = append(ops, map[string]any{"op": "add", "path": "/metadata/labels/mutated-by", "value": "other"})
	}
	if !slices.ContainsFunc(p.Spec.Containers, func(c corev1.Container) bool { return c.Name == "added-by-other" }) {
		ops = append(ops, map[string]any{"op": "add", "path": "/spec/containers/-",
			"value": corev1.Container{Name: "added-by-other", Image: "busybox:1.36"}})
	}
	resp := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
	if len(ops) > 0 {
		patch, err := json.Marshal(ops)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		resp.Patch, resp.PatchType = patch, new(admissionv1.PatchTypeJSONPatch)
	}
	review.Response, review.Request = resp, nil
	w.Header().Set("Content-Type", "application/json")
	gomega.Expect(json.NewEncoder(w).Encode(review)).To(gomega.Succeed())
}

// registerOtherMutator serves otherMutator over TLS and registers it, for
// the pods of one namespace, as a MutatingWebhookConfiguration named name
// (the API server calls configurations in name order) with
// reinvocationPolicy IfNeeded. Both go away when the spec ends.
func registerOtherMutator(ctx ginkgo.SpecContext, name, ns string) *otherMutator {
	m := &otherMutator{}
	srv := httptest.NewTLSServer(m)
	ginkgo.DeferCleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    "other.test.sidecarset-operator.dev",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: new(srv.URL + "/mutate"), CABundle: ca},
			AdmissionReviewVersions: []string{"v1"},
			SideEffects:             new(admissionregistrationv1.SideEffectClassNone),
			FailurePolicy:           new(admissionregistrationv1.Fail),
			ReinvocationPolicy:      new(admissionregistrationv1.IfNeededReinvocationPolicy),
			TimeoutSeconds:          new(int32(5)),
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
			}},
		}},
	}
	gomega.Expect(k8s.Create(ctx, cfg)).To(gomega.Succeed())
	deleteAtEnd(cfg)
	return m
}

var _ = ginkgo.Describe("Pod injection next to another mutating webhook", func() {
	var ns string
	ginkgo.BeforeEach(func(ctx ginkgo.SpecContext) {
		ns = newNamespace(ctx, nil)
	})

	ginkgo.DescribeTable("should inject the sidecars exactly once when the webhooks are invoked again",
		func(ctx ginkgo.SpecContext, configuration string, reinvokedUs bool) {
			s, _ := createSidecarSet(ctx, sidecarSet(ns, "mesh").
				Containers(builder.MakeContainer("proxy", "envoy:v1")).
				InitContainers(builder.MakeContainer("mesh-init", "busybox:1.36"), builder.MakeContainer("agent", "agent:v1").RestartAlways()).
				ImagePullSecrets("registry").Obj())
			other := registerOtherMutator(ctx, configuration, ns)
			alreadyInjected := map[string]string{"sidecarset": s.Name, "outcome": "AlreadyInjected"}

			waitForDryRun(ctx, pod(ns).Obj(), func(g gomega.Gomega, dry *corev1.Pod) {
				g.Expect(containerNames(dry.Spec.Containers)).To(gomega.ContainElement("added-by-other"))
				g.Expect(dry.Annotations[appsv1beta1.SidecarSetListAnnotation]).To(gomega.Equal(s.Name))
			})
			calls, reinvocations := other.calls.Load(), metricValue(injectionsMetric, alreadyInjected)
			p, _, err := createPod(ctx, pod(ns).Obj())
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			wantCalls, wantReinvocations := calls+1, reinvocations
			if reinvokedUs {
				wantReinvocations++ // our webhook ran again and found the pod injected
			} else {
				wantCalls++ // the other webhook ran again after ours
			}
			gomega.Expect(other.calls.Load()).To(gomega.Equal(wantCalls))
			gomega.Expect(metricValue(injectionsMetric, alreadyInjected)).To(gomega.Equal(wantReinvocations))
			gomega.Expect(containerNames(p.Spec.Containers)).To(gomega.Equal([]string{"proxy", "main", "added-by-other"}))
			gomega.Expect(containerNames(p.Spec.InitContainers)).To(gomega.Equal([]string{"agent", "mesh-init"}))
			gomega.Expect(p.Spec.ImagePullSecrets).To(gomega.Equal([]corev1.LocalObjectReference{{Name: "registry"}}))
			gomega.Expect(p.Labels).To(gomega.HaveKeyWithValue("mutated-by", "other"))
			gomega.Expect(readState(p).Hashes).To(gomega.HaveLen(1))
			gomega.Expect(envStrings(container(p.Spec.Containers, "proxy").Env)).To(gomega.Equal([]string{"IS_INJECTED=true"}))
			gomega.Expect(envStrings(container(p.Spec.Containers, "added-by-other").Env)).To(gomega.BeEmpty())
		},
		ginkgo.Entry("when the other webhook runs after ours, ours is invoked again", "zzz-test-other-mutator", true),
		ginkgo.Entry("when the other webhook runs before ours, it is invoked again", "aaa-test-other-mutator", false),
	)

	// The operator's label exempts its pods in its own namespace only, not
	// a pod in any namespace from every required SidecarSet.
	ginkgo.It("should never see the operator's own pods in its namespace, whatever they match, and only there", func(ctx ginkgo.SpecContext) {
		s, _ := createSidecarSet(ctx, sidecarSet(ns, "all").Containers(builder.MakeContainer("proxy", "envoy:v1")).Obj())
		createInjected(ctx, pod(ns).Obj(), s.Name) // the webhook has seen s

		// Elsewhere, the label is a label like any other.
		labelled, _ := createInjected(ctx, pod(ns).Label(appsv1beta1.OperatorPodLabel, appsv1beta1.OperatorPodName).Obj(), s.Name)
		gomega.Expect(containerNames(labelled.Spec.Containers)).To(gomega.Equal([]string{"proxy", "main"}))

		// In the operator's namespace, a SidecarSet selecting every pod
		// does not reach the operator's own.
		everything := builder.MakeSidecarSet(ns+"-operator-ns", specLabel, ns).Namespace(framework.OperatorNamespace).
			Containers(builder.MakeContainer("operator-ns-proxy", "envoy:v1")).Obj()
		everything.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "none", Operator: metav1.LabelSelectorOpDoesNotExist}}}
		createSidecarSet(ctx, everything)
		createInjected(ctx, builder.MakePod("other", framework.OperatorNamespace).Obj(), everything.Name)
		admissions := metricValue(admissionDurationMetric, nil)
		operator, warnings, err := createPod(ctx, builder.MakePod("operator", framework.OperatorNamespace).
			Label(appsv1beta1.OperatorPodLabel, appsv1beta1.OperatorPodName).Obj())
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		deleteAtEnd(operator)
		gomega.Expect(warnings).To(gomega.BeEmpty())
		gomega.Expect(containerNames(operator.Spec.Containers)).To(gomega.Equal([]string{"main"}))
		gomega.Expect(operator.Annotations).To(gomega.BeEmpty())
		gomega.Expect(metricValue(admissionDurationMetric, nil)).To(gomega.Equal(admissions), "the pod webhook was not called")
	})
})
