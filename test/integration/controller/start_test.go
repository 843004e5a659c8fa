package controller_test

import (
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
	"github.com/sidecarset-operator/sidecarset-operator/test/integration/framework"
)

// withoutPodList is a user that may do what the operator does except list
// and watch pods: a manager running as it never completes its pod list,
// as a manager starting in a cluster of many pods has not yet.
const withoutPodList = "sidecarset-operator-without-pod-list"

var _ = ginkgo.Describe("The manager's start", func() {
	ginkgo.It("should serve the webhooks before the pods are listed", func(ctx ginkgo.SpecContext) {
		grantAllButPodList(ctx, withoutPodList)
		ns := newNamespace(ctx)
		createSidecarSet(ctx, builder.MakeSidecarSet(ns, specLabel, ns).Containers(builder.MakeContainer("agent", "agent:1")).Obj())

		gomega.Expect(env.StopManager()).To(gomega.Succeed())
		ginkgo.DeferCleanup(func() {
			// The controller of this manager waits for its pod list until
			// it gives up; that error is not this spec's.
			_ = env.StopManager()
			gomega.Expect(env.StartManager(managerCtx, framework.ManagerOptions{})).To(gomega.Succeed())
		})
		// StartManager returns once the webhooks serve (within a minute);
		// before, the manager served nothing until every pod was listed.
		gomega.Expect(env.StartManager(managerCtx, framework.ManagerOptions{User: withoutPodList})).To(gomega.Succeed())

		// And they inject from the SidecarSets they listed.
		pod := builder.MakePod("pod", ns).Label(specLabel, ns).Obj()
		gomega.Expect(k8s.Create(ctx, pod)).To(gomega.Succeed())
		gomega.Expect(containerNames(pod)).To(gomega.ContainElement("agent"))
	})
})

// grantAllButPodList binds user to a ClusterRole that allows everything
// in the API groups the operator uses except listing and watching pods.
func grantAllButPodList(ctx ginkgo.SpecContext, user string) {
	all := []string{"*"}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"apps.kruise.io", "apps", "admissionregistration.k8s.io", "apiextensions.k8s.io",
			"authorization.k8s.io", "coordination.k8s.io", "events.k8s.io", "policy"}, Resources: all, Verbs: all},
		{APIGroups: []string{""}, Resources: []string{"namespaces", "configmaps", "secrets", "services", "events", "pods/eviction", "pods/resize", "pods/status"}, Verbs: all},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "create", "update", "patch", "delete"}},
	}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}
	for _, o := range []client.Object{role, binding} {
		gomega.Expect(k8s.Create(ctx, o)).To(gomega.Succeed())
		ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
			gomega.Expect(client.IgnoreNotFound(k8s.Delete(ctx, o))).To(gomega.Succeed())
		})
	}
}
