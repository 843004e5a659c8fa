package e2e_test

import (
	"fmt"
	"slices"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/controllers"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
)

// A pod its SidecarSet selects but that runs without its sidecar is no
// longer invisible: the status counts it, a condition names it, an event
// says so, and the wide output of kubectl shows the count.
var _ = ginkgo.Describe("Pods without their sidecars", ginkgo.Label("detect"), func() {
	ginkgo.It("should be counted, named and announced, and cleared when they go", func(ctx ginkgo.SpecContext) {
		ns := createNamespace(ctx, "detect")
		early := builder.MakePod("early", ns).Name("early").Label("app", "web").
			Containers(builder.MakeContainer("main", "nginx:1.25")).Obj()
		gomega.Expect(env.Client.Create(ctx, early)).To(gomega.Succeed())
		s := createSidecarSet(ctx, sidecarSet(ns, "sidecar", v1).Obj())

		want := fmt.Sprintf("1 pod it selects runs without its sidecars: %s/early (created before the SidecarSet)", ns)
		gomega.Eventually(func(g gomega.Gomega) {
			got := getSidecarSet(ctx, g, s.Name)
			g.Expect(got.Status.NotInjectedPods).To(gomega.Equal(int32(1)))
			c := meta.FindStatusCondition(got.Status.Conditions, appsv1beta1.SidecarSetConditionInjected)
			g.Expect(c).NotTo(gomega.BeNil())
			g.Expect(c.Status).To(gomega.Equal(metav1.ConditionFalse))
			g.Expect(c.Message).To(gomega.Equal(want))
			g.Expect(kubectl(ctx, "get", "events", "-A", "--field-selector",
				"reason="+controllers.EventPodsNotInjected+",involvedObject.name="+s.Name, "-o", "jsonpath={.items[*].message}")).To(gomega.ContainSubstring(want))
		}).WithContext(ctx).Should(gomega.Succeed())
		wide := kubectl(ctx, "get", "sidecarset", s.Name, "-o", "wide")
		header := strings.Fields(strings.SplitN(wide, "\n", 2)[0])
		gomega.Expect(header).To(gomega.ContainElement("NOT-INJECTED"))
		gomega.Expect(tableRows(wide)[0][column(header, "NOT-INJECTED")]).To(gomega.Equal("1"))
		gomega.Expect(strings.Fields(strings.SplitN(kubectl(ctx, "get", "sidecarset", s.Name), "\n", 2)[0])).
			To(gomega.Equal([]string{"NAME", "MATCHED", "UPDATED", "READY", "AGE"}), "the default columns stay as the manual shows them")

		ginkgo.By("deleting the pod")
		gomega.Expect(env.Client.Delete(ctx, early, client.GracePeriodSeconds(0))).To(gomega.Succeed())
		gomega.Eventually(func(g gomega.Gomega) {
			got := getSidecarSet(ctx, g, s.Name)
			g.Expect(got.Status.NotInjectedPods).To(gomega.BeZero())
			g.Expect(meta.FindStatusCondition(got.Status.Conditions, appsv1beta1.SidecarSetConditionInjected)).To(gomega.BeNil())
			g.Expect(kubectl(ctx, "get", "events", "-A", "--field-selector",
				"reason="+controllers.EventPodsInjected+",involvedObject.name="+s.Name, "-o", "jsonpath={.items[*].message}")).
				To(gomega.ContainSubstring("Every pod the SidecarSet selects carries its sidecars"))
		}).WithContext(ctx).Should(gomega.Succeed())
	})
})

// column is the index of a column of a kubectl table's header row.
func column(header []string, name string) int {
	return slices.IndexFunc(header, func(c string) bool { return strings.EqualFold(c, name) })
}
