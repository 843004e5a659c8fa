package crd_test

import (
	"errors"
	"fmt"
	"slices"

	"github.com/google/go-cmp/cmp"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// validSidecarSet is the base every rule case mutates.
func validSidecarSet(name string) *appsv1beta1.SidecarSet {
	return &appsv1beta1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1beta1.SidecarSetSpec{
			Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"app": "nginx"}},
			Containers: []appsv1beta1.SidecarContainer{{Container: corev1.Container{Name: "sidecar1", Image: "centos:6.7"}}},
		},
	}
}

// causes formats the field causes of an API error as "field: message".
func causes(err error) []string {
	var status *apierrors.StatusError
	if !errors.As(err, &status) || status.ErrStatus.Details == nil {
		return []string{fmt.Sprintf("not a field error: %v", err)}
	}
	var out []string
	for _, c := range status.ErrStatus.Details.Causes {
		out = append(out, c.Field+": "+c.Message)
	}
	slices.Sort(out)
	return out
}

func intOrString(s string) *intstr.IntOrString {
	v := intstr.Parse(s)
	return &v
}

var _ = ginkgo.Describe("The SidecarSet schema rules", func() {
	ginkgo.DescribeTable("should reject an invalid SidecarSet at creation with the field path",
		func(ctx ginkgo.SpecContext, mutate func(*appsv1beta1.SidecarSet), want []string) {
			s := validSidecarSet("rule-case")
			mutate(s)
			err := env.Client.Create(ctx, s)
			if err == nil {
				_ = env.Client.Delete(ctx, s)
			}
			gomega.Expect(err).To(gomega.HaveOccurred())
			gomega.Expect(apierrors.IsInvalid(err)).To(gomega.BeTrue(), "%v", err)
			gomega.Expect(cmp.Diff(want, causes(err))).To(gomega.BeEmpty(), "(-want +got)")
		},
		ginkgo.Entry("a missing selector", func(s *appsv1beta1.SidecarSet) { s.Spec.Selector = nil },
			[]string{`<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation`, `spec.selector: Required value`}),
		ginkgo.Entry("an empty selector", func(s *appsv1beta1.SidecarSet) { s.Spec.Selector = &metav1.LabelSelector{} },
			[]string{`spec.selector: Invalid value: selector must not be empty: it would match every pod in the cluster`}),
		ginkgo.Entry("no container at all", func(s *appsv1beta1.SidecarSet) { s.Spec.Containers = nil },
			[]string{`spec.containers: Invalid value: at least one container or initContainer is required`}),
		ginkgo.Entry("an empty namespaceSelector", func(s *appsv1beta1.SidecarSet) { s.Spec.NamespaceSelector = &metav1.LabelSelector{} },
			[]string{`spec.namespaceSelector: Invalid value: namespaceSelector must not be empty: omit it to select every namespace`}),
		ginkgo.Entry("two containers with the same name", func(s *appsv1beta1.SidecarSet) {
			s.Spec.Containers = append(s.Spec.Containers, s.Spec.Containers[0])
		}, []string{`spec.containers[1]: Duplicate value: {"name":"sidecar1"}`}),
		ginkgo.Entry("an unknown podInjectPolicy", func(s *appsv1beta1.SidecarSet) { s.Spec.Containers[0].PodInjectPolicy = "First" },
			[]string{`<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation`, `spec.containers[0].podInjectPolicy: Unsupported value: "First": supported values: "BeforeAppContainer", "AfterAppContainer"`}),
		ginkgo.Entry("an unknown shareVolumePolicy type", func(s *appsv1beta1.SidecarSet) { s.Spec.Containers[0].ShareVolumePolicy.Type = "yes" },
			[]string{`<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation`, `spec.containers[0].shareVolumePolicy.type: Unsupported value: "yes": supported values: "enabled", "disabled"`}),
		ginkgo.Entry("a hot upgrade without its empty image", func(s *appsv1beta1.SidecarSet) {
			s.Spec.Containers[0].UpgradeStrategy.UpgradeType = appsv1beta1.SidecarContainerHotUpgrade
		}, []string{`spec.containers[0].upgradeStrategy.hotUpgradeEmptyImage: Invalid value: hotUpgradeEmptyImage is required when upgradeType is HotUpgrade`}),
		ginkgo.Entry("an unknown upgradeType", func(s *appsv1beta1.SidecarSet) { s.Spec.Containers[0].UpgradeStrategy.UpgradeType = "WarmUpgrade" },
			[]string{`<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation`, `spec.containers[0].upgradeStrategy.upgradeType: Unsupported value: "WarmUpgrade": supported values: "ColdUpgrade", "HotUpgrade"`}),
		ginkgo.Entry("a transferEnv with two sources", func(s *appsv1beta1.SidecarSet) {
			s.Spec.Containers[0].TransferEnv = []appsv1beta1.TransferEnvVar{{
				SourceContainerName:     "main",
				SourceContainerNameFrom: &appsv1beta1.SourceContainerNameSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}},
				EnvName:                 "PROXY_IP",
			}}
		}, []string{`spec.containers[0].transferEnv[0]: Invalid value: exactly one of sourceContainerName and sourceContainerNameFrom is required`}),
		ginkgo.Entry("a transferEnv without env names", func(s *appsv1beta1.SidecarSet) {
			s.Spec.Containers[0].TransferEnv = []appsv1beta1.TransferEnvVar{{SourceContainerName: "main"}}
		}, []string{`spec.containers[0].transferEnv[0]: Invalid value: at least one of envName and envNames is required`}),
		ginkgo.Entry("a transferEnv fieldRef on an unsupported field", func(s *appsv1beta1.SidecarSet) {
			s.Spec.Containers[0].TransferEnv = []appsv1beta1.TransferEnvVar{{
				SourceContainerNameFrom: &appsv1beta1.SourceContainerNameSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}},
				EnvName:                 "TC",
			}}
		}, []string{`spec.containers[0].transferEnv[0].sourceContainerNameFrom.fieldRef: Invalid value: fieldPath must be metadata.name, metadata.labels['<key>'] or metadata.annotations['<key>']`}),
		ginkgo.Entry("resourcesPolicy together with resources", func(s *appsv1beta1.SidecarSet) {
			s.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resourceQuantity("100m")}
			s.Spec.Containers[0].ResourcesPolicy = &appsv1beta1.ResourcesPolicy{
				TargetContainerMode: appsv1beta1.TargetContainerModeSum,
				ResourceExpr:        appsv1beta1.ResourceExpr{Limits: &appsv1beta1.ResourceExprLimits{CPU: "cpu*50%"}},
			}
		}, []string{`spec.containers[0].resourcesPolicy: Invalid value: resourcesPolicy and resources cannot be configured together`}),
		ginkgo.Entry("an unknown update strategy type", func(s *appsv1beta1.SidecarSet) { s.Spec.UpdateStrategy.Type = "Recreate" },
			[]string{`<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation`, `spec.updateStrategy.type: Unsupported value: "Recreate": supported values: "RollingUpdate", "NotUpdate"`}),
		ginkgo.Entry("a partition above 100%", func(s *appsv1beta1.SidecarSet) { s.Spec.UpdateStrategy.Partition = intOrString("150%") },
			[]string{`spec.updateStrategy.partition: Invalid value: "150%": partition must be a non-negative integer or a percentage from 0% to 100%`}),
		ginkgo.Entry("a negative partition", func(s *appsv1beta1.SidecarSet) { s.Spec.UpdateStrategy.Partition = intOrString("-1") },
			[]string{`spec.updateStrategy.partition: Invalid value: -1: partition must be a non-negative integer or a percentage from 0% to 100%`}),
		ginkgo.Entry("a maxUnavailable that is a number in a string", func(s *appsv1beta1.SidecarSet) {
			s.Spec.UpdateStrategy.MaxUnavailable = &intstr.IntOrString{Type: intstr.String, StrVal: "5"}
		},
			[]string{`spec.updateStrategy.maxUnavailable: Invalid value: "5": maxUnavailable must be a non-negative integer or a percentage from 0% to 100%`}),
		ginkgo.Entry("a partition together with an update selector", func(s *appsv1beta1.SidecarSet) {
			s.Spec.UpdateStrategy.Partition = intOrString("90")
			s.Spec.UpdateStrategy.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"canary.release": "true"}}
		}, []string{`spec.updateStrategy.partition: Invalid value: partition and selector cannot be used together in a RollingUpdate strategy`}),
		ginkgo.Entry("a weight of 0", func(s *appsv1beta1.SidecarSet) {
			s.Spec.UpdateStrategy.PriorityStrategy = &appsv1beta1.UpdatePriorityStrategy{WeightPriority: []appsv1beta1.UpdatePriorityWeightTerm{{
				Weight: 0, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"k": "v"}}}}}
		}, []string{`spec.updateStrategy.priorityStrategy.weightPriority[0].weight: Invalid value: 0: spec.updateStrategy.priorityStrategy.weightPriority[0].weight in body should be greater than or equal to 1`}),
		ginkgo.Entry("weight and order priorities together", func(s *appsv1beta1.SidecarSet) {
			s.Spec.UpdateStrategy.PriorityStrategy = &appsv1beta1.UpdatePriorityStrategy{
				WeightPriority: []appsv1beta1.UpdatePriorityWeightTerm{{Weight: 50, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"k": "v"}}}},
				OrderPriority:  []appsv1beta1.UpdatePriorityOrderTerm{{OrderedKey: "some-label-key"}},
			}
		}, []string{`spec.updateStrategy.priorityStrategy: Invalid value: weightPriority and orderPriority are mutually exclusive`}),
		ginkgo.Entry("a repeated scatter term", func(s *appsv1beta1.SidecarSet) {
			s.Spec.UpdateStrategy.ScatterStrategy = appsv1beta1.UpdateScatterStrategy{{Key: "foo", Value: "bar"}, {Key: "foo", Value: "bar"}}
		}, []string{`spec.updateStrategy.scatterStrategy[1]: Duplicate value: {"key":"foo","value":"bar"}`}),
		ginkgo.Entry("a pinned revision naming nothing", func(s *appsv1beta1.SidecarSet) {
			s.Spec.InjectionStrategy.Revision = &appsv1beta1.SidecarSetInjectRevision{Policy: appsv1beta1.AlwaysSidecarSetInjectRevisionPolicy}
		}, []string{`spec.injectionStrategy.revision: Invalid value: one of revisionName and customVersion is required`}),
		ginkgo.Entry("an unknown patchPolicy", func(s *appsv1beta1.SidecarSet) {
			s.Spec.PatchPodMetadata = []appsv1beta1.SidecarSetPatchPodMetadata{{Annotations: map[string]string{"oom-score": "1"}, PatchPolicy: "Merge"}}
		}, []string{`<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation`, `spec.patchPodMetadata[0].patchPolicy: Unsupported value: "Merge": supported values: "Retain", "Overwrite", "MergePatchJson"`}),
		ginkgo.Entry("a patchPodMetadata without annotations", func(s *appsv1beta1.SidecarSet) {
			s.Spec.PatchPodMetadata = []appsv1beta1.SidecarSetPatchPodMetadata{{PatchPolicy: appsv1beta1.SidecarSetOverwritePatchPolicy}}
		}, []string{`<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation`, `spec.patchPodMetadata[0].annotations: Required value`}),
	)

	ginkgo.It("should keep upgradeType immutable on update", func(ctx ginkgo.SpecContext) {
		s := validSidecarSet("immutable-upgrade-type")
		s.Spec.Containers[0].UpgradeStrategy.UpgradeType = appsv1beta1.SidecarContainerColdUpgrade
		gomega.Expect(env.Client.Create(ctx, s)).To(gomega.Succeed())
		ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) { gomega.Expect(env.Client.Delete(ctx, s)).To(gomega.Succeed()) })

		s.Spec.Containers[0].UpgradeStrategy = appsv1beta1.SidecarContainerUpgradeStrategy{
			UpgradeType: appsv1beta1.SidecarContainerHotUpgrade, HotUpgradeEmptyImage: "busybox:empty",
		}
		err := env.Client.Update(ctx, s)
		gomega.Expect(cmp.Diff([]string{
			`spec.containers[0].upgradeStrategy.upgradeType: Invalid value: upgradeType is immutable: create a new SidecarSet to change it`,
		}, causes(err))).To(gomega.BeEmpty(), "(-want +got)")

		ginkgo.By("changing only the image, which is allowed")
		gomega.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(s), s)).To(gomega.Succeed())
		s.Spec.Containers[0].Image = "centos:7"
		gomega.Expect(env.Client.Update(ctx, s)).To(gomega.Succeed())
	})
})
