package webhook_test

import (
	"context"
	"fmt"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
)

// rejection returns the causes of the validating webhook's rejection of a
// SidecarSet, waiting until the webhook's cache has the SidecarSets it
// conflicts with (until then it is accepted: dry runs create nothing).
func rejection(ctx context.Context, s *appsv1beta1.SidecarSet) []string {
	var err error
	gomega.EventuallyWithOffset(1, func(g gomega.Gomega) {
		err = k8s.Create(ctx, s.DeepCopy(), client.DryRunAll)
		g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring(validationWebhook)))
	}).WithContext(ctx).Should(gomega.Succeed())
	return causes(err)
}

// nameConflict is the cause of a sidecar name another SidecarSet injects.
func nameConflict(path, name, other string) string {
	return fmt.Sprintf(`%s: Duplicate value: %q: container name %q is also injected by SidecarSet %q, which can select the same pods; `+
		`rename one of them or make their selectors disjoint`, path, name, name, other)
}

var _ = ginkgo.Describe("SidecarSet admission conflicts", func() {
	var ns string
	var first *appsv1beta1.SidecarSet
	ginkgo.BeforeEach(func(ctx ginkgo.SpecContext) {
		ns = newNamespace(ctx, nil)
		first, _ = createSidecarSet(ctx, logAgent(ns, "first").
			Containers(builder.MakeContainer("proxy", "envoy:v1").Mount("shared", "/shared")).
			Volumes(builder.EmptyDir("shared")).
			PatchPodMetadata(appsv1beta1.SidecarSetOverwritePatchPolicy, map[string]string{oomScore: `{"first":1}`}).Obj())
	})

	ginkgo.It("should reject a container name that an overlapping SidecarSet injects", func(ctx ginkgo.SpecContext) {
		second := sidecarSet(ns, "second").SelectorLabel("tier", "web").
			Containers(builder.MakeContainer("logger", "fluentbit:v1"), builder.MakeContainer("proxy", "envoy:v2")).Obj()
		gomega.Expect(rejection(ctx, second)).To(gomega.Equal([]string{
			nameConflict("spec.containers[1].name", "proxy", first.Name)}))
	})

	ginkgo.It("should reject an init container named like an overlapping SidecarSet's container", func(ctx ginkgo.SpecContext) {
		second := sidecarSet(ns, "second").InitContainers(builder.MakeContainer("proxy", "busybox:1.36")).Obj()
		gomega.Expect(rejection(ctx, second)).To(gomega.Equal([]string{
			nameConflict("spec.initContainers[0].name", "proxy", first.Name)}))
	})

	ginkgo.It("should reject a volume an overlapping SidecarSet declares differently, and accept an identical one", func(ctx ginkgo.SpecContext) {
		second := sidecarSet(ns, "second").Containers(builder.MakeContainer("logger", "fluentbit:v1").Mount("shared", "/shared")).
			Volumes(builder.HostPath("shared", "/data")).Obj()
		gomega.Expect(rejection(ctx, second)).To(gomega.Equal([]string{fmt.Sprintf(
			`spec.volumes[0]: Invalid value: "shared": volume "shared" is also declared by SidecarSet %q, which can select the same pods, `+
				`with a different definition, and a pod gets only one of them; make the definitions identical, rename one of them, `+
				`or make their selectors disjoint`, first.Name)}))

		identical := second.DeepCopy()
		identical.Spec.Volumes = []corev1.Volume{{Name: "shared", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		createSidecarSet(ctx, identical)
	})

	ginkgo.It("should reject an annotation an overlapping SidecarSet overwrites, and accept Retain", func(ctx ginkgo.SpecContext) {
		second := logAgent(ns, "second").Containers(builder.MakeContainer("logger", "fluentbit:v1")).
			PatchPodMetadata(appsv1beta1.SidecarSetMergePatchJSONPatchPolicy, map[string]string{oomScore: `{"second":2}`}).Obj()
		gomega.Expect(rejection(ctx, second)).To(gomega.Equal([]string{fmt.Sprintf(
			`spec.patchPodMetadata[0].annotations[oom-score]: Invalid value: "oom-score": annotation "oom-score" is patched with `+
				`MergePatchJson here and with Overwrite by SidecarSet %q, which can select the same pods, so the pods' value would `+
				`depend on which one is applied last; keep the key in one SidecarSet, use Retain or MergePatchJson on both, `+
				`or make their selectors disjoint`, first.Name)}))

		retain := second.DeepCopy()
		retain.Spec.PatchPodMetadata[0].PatchPolicy = appsv1beta1.SidecarSetRetainPatchPolicy
		createSidecarSet(ctx, retain)
	})

	ginkgo.It("should accept the same names under disjoint selectors, and reject an Exists on a key the other omits", func(ctx ginkgo.SpecContext) {
		// OpenKruise's heuristic calls these disjoint; a pod labelled
		// canary=anything matches both.
		exists := sidecarSet(ns, "exists").SelectorExpression("canary", metav1.LabelSelectorOpExists).
			Containers(builder.MakeContainer("proxy", "envoy:v2")).Obj()
		gomega.Expect(rejection(ctx, exists)).To(gomega.Equal([]string{nameConflict("spec.containers[0].name", "proxy", first.Name)}))

		disjoint := builder.MakeSidecarSet(ns+"-disjoint", specLabel, ns+"-other").
			Containers(builder.MakeContainer("proxy", "envoy:v2")).Obj()
		_, warnings := createSidecarSet(ctx, disjoint)
		gomega.Expect(warnings).To(gomega.BeEmpty())
	})

	ginkgo.It("should admit an update of a SidecarSet whose conflict predates it, with a warning", func(ctx ginkgo.SpecContext) {
		legacy := createUnvalidated(ctx, sidecarSet(ns, "legacy").Containers(builder.MakeContainer("proxy", "envoy:v1")).Obj())

		warnings, err := patchSidecarSet(ctx, legacy, func(s *appsv1beta1.SidecarSet) { s.Spec.Containers[0].Image = "envoy:v3" })
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(warnings).To(gomega.Equal([]string{nameConflict("spec.containers[0].name", "proxy", first.Name) +
			" (accepted because this conflict predates the update; resolve it)"}))
	})
})
