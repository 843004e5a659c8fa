package webhook_test

import (
	"context"
	"fmt"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
	"github.com/sidecarset-operator/sidecarset-operator/test/integration/framework"
)

// Annotation keys the seed whitelist allows to SidecarSets labelled
// sidecar=log-agent.
const (
	oomScore       = "oom-score"
	launchPriority = "apps.kruise.io/container-launch-priority"
	sidecarConfig  = "custom.example.com/sidecar-configuration"
)

// seedRules describes the seed whitelist's rule in denial messages.
const seedRules = `rules[0] ["^apps.kruise.io/container-launch-priority$" "^oom-score$" "^custom.example.com/sidecar-configuration$"]`

// logAgent starts a SidecarSet the seed whitelist applies to.
func logAgent(ns, suffix string) *builder.SidecarSetWrapper {
	return sidecarSet(ns, suffix).Label("sidecar", "log-agent")
}

// putWhitelist replaces the whitelist document of the kruise-configuration
// ConfigMap (creating the ConfigMap if it is absent).
func putWhitelist(ctx context.Context, whitelist string) {
	cm := &corev1.ConfigMap{}
	err := k8s.Get(ctx, client.ObjectKeyFromObject(seedWhitelist()), cm)
	if client.IgnoreNotFound(err) != nil {
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
	}
	if err != nil {
		gomega.Expect(k8s.Create(ctx, builder.WhitelistConfigMap(framework.OperatorNamespace, whitelist))).To(gomega.Succeed())
		return
	}
	cm.Data = map[string]string{appsv1beta1.PatchPodMetadataWhiteListKey: whitelist}
	gomega.Expect(k8s.Update(ctx, cm)).To(gomega.Succeed())
}

// restoreSeedWhitelist puts the seed whitelist back and waits until it is
// in force.
func restoreSeedWhitelist(ctx context.Context, probe *appsv1beta1.SidecarSet) {
	putWhitelist(ctx, seedWhitelist().Data[appsv1beta1.PatchPodMetadataWhiteListKey])
	gomega.Eventually(func(g gomega.Gomega) {
		g.Expect(k8s.Create(ctx, probe.DeepCopy(), client.DryRunAll)).NotTo(gomega.Succeed())
	}).WithContext(ctx).Should(gomega.Succeed())
}

var _ = ginkgo.Describe("Pod metadata patches", func() {
	var ns string
	ginkgo.BeforeEach(func(ctx ginkgo.SpecContext) {
		ns = newNamespace(ctx, nil)
	})

	ginkgo.It("should apply Retain, Overwrite and MergePatchJson of several SidecarSets in name order", func(ctx ginkgo.SpecContext) {
		a, _ := createSidecarSet(ctx, logAgent(ns, "a").
			PatchPodMetadata(appsv1beta1.SidecarSetMergePatchJSONPatchPolicy, map[string]string{oomScore: `{"a":1}`}).
			PatchPodMetadata(appsv1beta1.SidecarSetRetainPatchPolicy, map[string]string{launchPriority: "Ordered"}).
			Containers(builder.MakeContainer("agent-a", "busybox:1.36")).Obj())
		b, _ := createSidecarSet(ctx, logAgent(ns, "b").
			PatchPodMetadata(appsv1beta1.SidecarSetMergePatchJSONPatchPolicy, map[string]string{oomScore: `{"b":2,"pod":9}`}).
			PatchPodMetadata(appsv1beta1.SidecarSetOverwritePatchPolicy, map[string]string{sidecarConfig: `{"command":"b"}`}).
			Containers(builder.MakeContainer("agent-b", "busybox:1.36")).Obj())

		annotated, _ := createInjected(ctx, pod(ns).Annotation(oomScore, `{"pod":0,"z":true}`).
			Annotation(launchPriority, "Manual").Annotation(sidecarConfig, "old").Obj(), a.Name, b.Name)
		gomega.Expect(annotated.Annotations).To(gomega.HaveKeyWithValue(oomScore, `{"a":1,"b":2,"pod":9,"z":true}`))
		gomega.Expect(annotated.Annotations).To(gomega.HaveKeyWithValue(launchPriority, "Manual"))
		gomega.Expect(annotated.Annotations).To(gomega.HaveKeyWithValue(sidecarConfig, `{"command":"b"}`))

		bare, _ := createInjected(ctx, pod(ns).Obj(), a.Name, b.Name)
		gomega.Expect(bare.Annotations).To(gomega.HaveKeyWithValue(oomScore, `{"a":1,"b":2,"pod":9}`))
		gomega.Expect(bare.Annotations).To(gomega.HaveKeyWithValue(launchPriority, "Ordered"))
		gomega.Expect(bare.Annotations).To(gomega.HaveKeyWithValue(sidecarConfig, `{"command":"b"}`))
	})

	ginkgo.It("should deny a pod whose annotation a MergePatchJson entry cannot merge into", func(ctx ginkgo.SpecContext) {
		s, _ := createSidecarSet(ctx, logAgent(ns, "merge").
			PatchPodMetadata(appsv1beta1.SidecarSetMergePatchJSONPatchPolicy, map[string]string{oomScore: `{"a":1}`}).
			Containers(builder.MakeContainer("agent", "busybox:1.36")).Obj())
		createInjected(ctx, pod(ns).Obj(), s.Name)

		_, _, err := createPod(ctx, pod(ns).Annotation(oomScore, "not-json").Obj())
		gomega.Expect(err).To(gomega.MatchError(denial(podWebhook, fmt.Sprintf(
			`SidecarSet %q: patchPodMetadata: annotation oom-score: merging %q into "not-json": the pod's value is not JSON`,
			s.Name, `{"a":1}`))))
	})
})

var _ = ginkgo.Describe("The patchPodMetadata whitelist", ginkgo.Ordered, func() {
	var ns string
	var owner *appsv1beta1.SidecarSet // patches a key the seed whitelist does not allow
	ginkgo.BeforeAll(func(ctx ginkgo.SpecContext) {
		ns = newNamespace(ctx, nil)
		owner = logAgent(ns, "owner").
			PatchPodMetadata(appsv1beta1.SidecarSetRetainPatchPolicy, map[string]string{"team.example.com/owner": "platform"}).
			Containers(builder.MakeContainer("agent", "busybox:1.36")).Obj()
		ginkgo.DeferCleanup(restoreSeedWhitelist, owner)
	})

	ginkgo.It("should reject keys the seed whitelist does not allow, naming the rules that apply", func(ctx ginkgo.SpecContext) {
		err := k8s.Create(ctx, owner.DeepCopy())
		gomega.Expect(causes(err)).To(gomega.Equal([]string{
			`spec.patchPodMetadata[0].annotations[team.example.com/owner]: Forbidden: sidecarSet patch metadata annotation(team.example.com/owner) ` +
				`is not allowed: it matches no pattern of the whitelist rules that select this SidecarSet: ` + seedRules}))

		unlabelled := sidecarSet(ns, "unlabelled").
			PatchPodMetadata(appsv1beta1.SidecarSetRetainPatchPolicy, map[string]string{oomScore: "1"}).
			Containers(builder.MakeContainer("agent", "busybox:1.36")).Obj()
		err = k8s.Create(ctx, unlabelled)
		gomega.Expect(causes(err)).To(gomega.Equal([]string{
			`spec.patchPodMetadata[0].annotations[oom-score]: Forbidden: sidecarSet patch metadata annotation(oom-score) is not allowed: ` +
				`no rule of the whitelist allows a key for this SidecarSet (1 rules, 0 selecting its labels "")`}))
	})

	ginkgo.It("should accept them once the ConfigMap allows them, without a restart", func(ctx ginkgo.SpecContext) {
		putWhitelist(ctx, `{"rules":[{"allowedAnnotationKeyExprs":["^team\\.example\\.com/owner$"]}]}`)
		gomega.Eventually(func(g gomega.Gomega) {
			g.Expect(k8s.Create(ctx, owner.DeepCopy(), client.DryRunAll)).To(gomega.Succeed())
		}).WithContext(ctx).Should(gomega.Succeed())
		s, _ := createSidecarSet(ctx, owner.DeepCopy())
		p, _ := createInjected(ctx, pod(ns).Obj(), s.Name)
		gomega.Expect(p.Annotations).To(gomega.HaveKeyWithValue("team.example.com/owner", "platform"))
	})

	ginkgo.It("should keep the last good whitelist and report a Warning event when the ConfigMap is malformed", func(ctx ginkgo.SpecContext) {
		putWhitelist(ctx, `{"rules":[{"annotationKeyExprs":["^.*$"]}]}`)
		cm := &corev1.ConfigMap{}
		gomega.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(seedWhitelist()), cm)).To(gomega.Succeed())
		want := fmt.Sprintf(`SidecarSet_PatchPodMetadata_WhiteList is malformed, the last good whitelist stays in force: `+
			`ConfigMap kruise-system/kruise-configuration resourceVersion %s: rules[0]: json: unknown field "annotationKeyExprs" `+
			`(a rule has the fields selector and allowedAnnotationKeyExprs)`, cm.ResourceVersion)
		gomega.Eventually(func(g gomega.Gomega) {
			events := &eventsv1.EventList{}
			g.Expect(k8s.List(ctx, events, client.InNamespace(framework.OperatorNamespace))).To(gomega.Succeed())
			var notes []string
			for _, e := range events.Items {
				if e.Reason == "InvalidWhitelist" && e.Regarding.Kind == "ConfigMap" && e.Regarding.Name == cm.Name &&
					e.Type == corev1.EventTypeWarning {
					notes = append(notes, e.Note)
				}
			}
			g.Expect(notes).To(gomega.ContainElement(want))
		}).WithContext(ctx).Should(gomega.Succeed())

		gomega.Expect(k8s.Create(ctx, owner.DeepCopy(), client.DryRunAll)).To(gomega.Succeed(), "the last good whitelist allows the key")
		other := logAgent(ns, "other").PatchPodMetadata(appsv1beta1.SidecarSetRetainPatchPolicy, map[string]string{"anything": "x"}).
			Containers(builder.MakeContainer("agent", "busybox:1.36")).Obj()
		gomega.Expect(causes(k8s.Create(ctx, other, client.DryRunAll))).To(gomega.Equal([]string{
			`spec.patchPodMetadata[0].annotations[anything]: Forbidden: sidecarSet patch metadata annotation(anything) is not allowed: ` +
				`it matches no pattern of the whitelist rules that select this SidecarSet: rules[0] ["^team\\.example\\.com/owner$"]`}))
	})

	ginkgo.It("should reject patchPodMetadata while the ConfigMap is missing, with the gate off", func(ctx ginkgo.SpecContext) {
		gomega.Expect(k8s.Delete(ctx, seedWhitelist())).To(gomega.Succeed())
		gomega.Eventually(func(g gomega.Gomega) {
			err := k8s.Create(ctx, owner.DeepCopy(), client.DryRunAll)
			g.Expect(causes(err)).To(gomega.Equal([]string{
				`spec.patchPodMetadata: Forbidden: SidecarSet patch metadata whitelist not found: the kruise-configuration ConfigMap ` +
					`or its SidecarSet_PatchPodMetadata_WhiteList key is missing; add a rule allowing these annotation keys, ` +
					`or turn on the SidecarSetPatchPodMetadataDefaultsAllowed feature gate`}))
		}).WithContext(ctx).Should(gomega.Succeed())
	})
})
