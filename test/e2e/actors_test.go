package e2e_test

import (
	"context"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sidecarset-operator/sidecarset-operator/test/e2e/framework"
)

// bindActor binds a user, impersonated by the suite, to ClusterRoles
// cluster-wide (until the spec ends) and to namespaceRoles in each of the
// namespaces (deleted with them), and returns its client once RBAC lets it
// create pods in each namespace.
func bindActor(ctx context.Context, user string, clusterRoles, namespaceRoles []string, namespaces ...string) client.Client {
	ginkgo.GinkgoHelper()
	subjects := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}
	for _, role := range clusterRoles {
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: user + "-" + role},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   subjects,
		}
		gomega.Expect(env.Client.Create(ctx, binding)).To(gomega.Succeed())
		ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
			gomega.Expect(client.IgnoreNotFound(env.Client.Delete(ctx, binding))).To(gomega.Succeed())
		})
	}
	for _, ns := range namespaces {
		for _, role := range namespaceRoles {
			gomega.Expect(env.Client.Create(ctx, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: user + "-" + role, Namespace: ns},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
				Subjects:   subjects,
			})).To(gomega.Succeed())
		}
	}
	for _, ns := range namespaces {
		gomega.Eventually(func(g gomega.Gomega) {
			review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User: user, Groups: []string{"system:authenticated"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "create", Resource: "pods", Namespace: ns},
			}}
			g.Expect(env.Client.Create(ctx, review)).To(gomega.Succeed())
			g.Expect(review.Status.Allowed).To(gomega.BeTrue())
		}).WithContext(ctx).Should(gomega.Succeed(), "%s may create pods in %s", user, ns)
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	c, err := client.New(cfg, client.Options{Scheme: framework.Scheme})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return c
}
