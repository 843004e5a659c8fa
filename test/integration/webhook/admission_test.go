package webhook_test

import (
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
)

// notChecked is the cause the API server adds when the CRD's CEL rules
// were skipped because the object failed its schema.
const notChecked = `<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; ` +
	`correct the existing errors to complete validation`

var _ = ginkgo.Describe("SidecarSet admission", func() {
	var ns string
	ginkgo.BeforeEach(func(ctx ginkgo.SpecContext) {
		ns = newNamespace(ctx, nil)
	})

	ginkgo.It("should record OpenKruise's hashes of the defaulted spec (the dns-f test vector)", func(ctx ginkgo.SpecContext) {
		s, _ := createSidecarSet(ctx, sidecarSet(ns, "vector").Containers(builder.MakeContainer("dns-f", "dns:1.0")).
			InitContainers(builder.MakeContainer("plain-init", "busybox:1.36")).Obj())
		gomega.Expect(s.Annotations).To(gomega.HaveKeyWithValue(appsv1beta1.SidecarSetHashAnnotation,
			"6wbd76bd7984x24fb4f44fv9222cw9v9bcf85x766744wddd4zwx927zzz2zb684"))
		gomega.Expect(s.Annotations).To(gomega.HaveKeyWithValue(appsv1beta1.SidecarSetHashWithoutImageAnnotation,
			"82684vwf9d4cb4wz4vffx4ddfbb47ww4z4wwxdbwb8w2zbb7zvf4524cdd49bv94"))
	})

	ginkgo.It("should store the defaults and the hashes of the defaulted spec", func(ctx ginkgo.SpecContext) {
		proxy := builder.MakeContainer("proxy", "envoy:v1").TransferEnvFromField("metadata.name", "POD_IP")
		proxy.TransferEnv[0].SourceContainerNameFrom.FieldRef.APIVersion = ""
		proxy.Ports = []corev1.ContainerPort{{ContainerPort: 15000}}
		proxy.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(15000)}}}
		secret := corev1.Volume{Name: "certs", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "certs"}}}
		s, _ := createSidecarSet(ctx, sidecarSet(ns, "defaults").Label("sidecar", "log-agent").Containers(proxy).
			InitContainers(builder.MakeContainer("setup", "busybox")).Volumes(secret).
			PatchPodMetadata("", map[string]string{oomScore: "1"}).Obj())

		spec := s.Spec
		gomega.Expect(spec.UpdateStrategy.Type).To(gomega.Equal(appsv1beta1.RollingUpdateSidecarSetStrategyType))
		gomega.Expect(spec.UpdateStrategy.MaxUnavailable).To(gomega.HaveValue(gomega.Equal(intstr.FromInt32(1))))
		gomega.Expect(spec.UpdateStrategy.Partition).To(gomega.HaveValue(gomega.Equal(intstr.FromInt32(0))))
		gomega.Expect(spec.RevisionHistoryLimit).To(gomega.HaveValue(gomega.Equal(int32(10))))
		c := spec.Containers[0]
		gomega.Expect(c.PodInjectPolicy).To(gomega.Equal(appsv1beta1.BeforeAppContainerType))
		gomega.Expect(c.UpgradeStrategy.UpgradeType).To(gomega.Equal(appsv1beta1.SidecarContainerColdUpgrade))
		gomega.Expect(c.ShareVolumePolicy.Type).To(gomega.Equal(appsv1beta1.ShareVolumePolicyDisabled))
		gomega.Expect(c.ImagePullPolicy).To(gomega.Equal(corev1.PullIfNotPresent))
		gomega.Expect(c.TerminationMessagePath).To(gomega.Equal("/dev/termination-log"))
		gomega.Expect(c.TerminationMessagePolicy).To(gomega.Equal(corev1.TerminationMessageReadFile))
		gomega.Expect(c.Ports[0].Protocol).To(gomega.Equal(corev1.ProtocolTCP))
		gomega.Expect(c.ReadinessProbe.TimeoutSeconds).To(gomega.Equal(int32(1)))
		gomega.Expect(c.ReadinessProbe.PeriodSeconds).To(gomega.Equal(int32(10)))
		gomega.Expect(c.ReadinessProbe.SuccessThreshold).To(gomega.Equal(int32(1)))
		gomega.Expect(c.ReadinessProbe.FailureThreshold).To(gomega.Equal(int32(3)))
		gomega.Expect(c.ReadinessProbe.HTTPGet.Path).To(gomega.Equal("/"))
		gomega.Expect(c.ReadinessProbe.HTTPGet.Scheme).To(gomega.Equal(corev1.URISchemeHTTP))
		gomega.Expect(c.TransferEnv[0].SourceContainerNameFrom.FieldRef.APIVersion).To(gomega.Equal("v1"))
		i := spec.InitContainers[0]
		gomega.Expect(i.PodInjectPolicy).To(gomega.Equal(appsv1beta1.AfterAppContainerType))
		gomega.Expect(i.ImagePullPolicy).To(gomega.Equal(corev1.PullAlways))
		gomega.Expect(spec.Volumes[0].Secret.DefaultMode).To(gomega.HaveValue(gomega.Equal(int32(0o644))))
		gomega.Expect(spec.PatchPodMetadata[0].PatchPolicy).To(gomega.Equal(appsv1beta1.SidecarSetRetainPatchPolicy))

		want, err := appsv1beta1.ComputeHashes(&s.Spec)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(s.Annotations).To(gomega.HaveKeyWithValue(appsv1beta1.SidecarSetHashAnnotation, want.Hash))
		gomega.Expect(s.Annotations).To(gomega.HaveKeyWithValue(appsv1beta1.SidecarSetHashWithoutImageAnnotation, want.WithoutImage))
	})

	ginkgo.It("should admit a non-image change with a warning that only new pods get it, and an image change silently", func(ctx ginkgo.SpecContext) {
		s, _ := createSidecarSet(ctx, sidecarSet(ns, "update").Containers(builder.MakeContainer("proxy", "envoy:v1").Env("LEVEL", "info")).Obj())

		warnings, err := patchSidecarSet(ctx, s, func(s *appsv1beta1.SidecarSet) { s.Spec.Containers[0].Image = "envoy:v2" })
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(warnings).To(gomega.BeEmpty())

		warnings, err = patchSidecarSet(ctx, s, func(s *appsv1beta1.SidecarSet) { s.Spec.Containers[0].Env[0].Value = "debug" })
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(warnings).To(gomega.Equal([]string{
			`spec.containers[0] (proxy): env changed; this cannot be applied in place: only pods created from now on get it, ` +
				`existing pods keep their current sidecars (status shows them as not upgradable; ` +
				`sidecarset-operator.dev/recreate-pods: "true" has them recreated)`}))

		warnings, err = patchSidecarSet(ctx, s, func(s *appsv1beta1.SidecarSet) {
			s.Spec.Containers = append(s.Spec.Containers, builder.MakeContainer("logger", "fluentbit:v1").Sidecar())
		})
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(warnings).To(gomega.Equal([]string{
			`spec.containers[1] (logger): added; this cannot be applied in place: only pods created from now on get it, ` +
				`existing pods keep their current sidecars (status shows them as not upgradable; ` +
				`sidecarset-operator.dev/recreate-pods: "true" has them recreated)`}))
		gomega.Expect(s.Spec.Containers).To(gomega.HaveLen(2))
	})

	ginkgo.It("should reject an unknown update strategy type in the schema", func(ctx ginkgo.SpecContext) {
		s := sidecarSet(ns, "strategy").Containers(builder.MakeContainer("proxy", "envoy:v1")).Obj()
		s.Spec.UpdateStrategy.Type = "Recreate"
		gomega.Expect(causes(k8s.Create(ctx, s))).To(gomega.Equal([]string{
			`spec.updateStrategy.type: Unsupported value: "Recreate": supported values: "RollingUpdate", "NotUpdate"`, notChecked}))
	})

	ginkgo.It("should reject an unknown patchPolicy in the schema", func(ctx ginkgo.SpecContext) {
		s := sidecarSet(ns, "policy").Label("sidecar", "log-agent").Containers(builder.MakeContainer("proxy", "envoy:v1")).
			PatchPodMetadata("Merge", map[string]string{oomScore: "1"}).Obj()
		gomega.Expect(causes(k8s.Create(ctx, s))).To(gomega.Equal([]string{
			`spec.patchPodMetadata[0].patchPolicy: Unsupported value: "Merge": supported values: "Retain", "Overwrite", "MergePatchJson"`,
			notChecked}))
	})

	ginkgo.It("should reject a priority weight of 0 in the schema", func(ctx ginkgo.SpecContext) {
		s := sidecarSet(ns, "weight").Containers(builder.MakeContainer("proxy", "envoy:v1")).
			WeightPriority(0, map[string]string{"k": "v"}).Obj()
		gomega.Expect(causes(k8s.Create(ctx, s))).To(gomega.Equal([]string{
			`spec.updateStrategy.priorityStrategy.weightPriority[0].weight: Invalid value: 0: ` +
				`spec.updateStrategy.priorityStrategy.weightPriority[0].weight in body should be greater than or equal to 1`}))
	})

	ginkgo.It("should accept a transferEnv whose source container is the pod's name", func(ctx ginkgo.SpecContext) {
		s, warnings := createSidecarSet(ctx, sidecarSet(ns, "by-name").Containers(
			builder.MakeContainer("proxy", "envoy:v1").TransferEnvFromField("metadata.name", "PORT")).Obj())
		gomega.Expect(warnings).To(gomega.BeEmpty())
		gomega.Expect(s.Spec.Containers[0].TransferEnv).To(gomega.Equal([]appsv1beta1.TransferEnvVar{{
			SourceContainerNameFrom: &appsv1beta1.SourceContainerNameSource{
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}},
			EnvName: "PORT",
		}}))
	})

	ginkgo.It("should let a canary reuse its base's sidecar names and inject the canary instead of the base", func(ctx ginkgo.SpecContext) {
		base, _ := createSidecarSet(ctx, sidecarSet(ns, "base").Containers(builder.MakeContainer("proxy", "envoy:v1")).Obj())
		canary := sidecarSet(ns, "canary").SelectorLabel("canary", "true").NotUpdate().
			Annotation(appsv1beta1.SidecarSetCanaryAnnotation, "true").Annotation(appsv1beta1.SidecarSetBaseAnnotation, base.Name).
			Containers(builder.MakeContainer("proxy", "envoy:v2")).Obj()
		gomega.Eventually(func(g gomega.Gomega) {
			g.Expect(k8s.Create(ctx, canary.DeepCopy(), client.DryRunAll)).To(gomega.Succeed())
		}).WithContext(ctx).Should(gomega.Succeed())
		createSidecarSet(ctx, canary)

		p, _ := createInjected(ctx, pod(ns).Label("canary", "true").Obj(), canary.Name)
		gomega.Expect(container(p.Spec.Containers, "proxy").Image).To(gomega.Equal("envoy:v2"))
		stable, _ := createInjected(ctx, pod(ns).Obj(), base.Name)
		gomega.Expect(container(stable.Spec.Containers, "proxy").Image).To(gomega.Equal("envoy:v1"))
	})
})
