package authoring_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
)

// frank writes SidecarSets and may create pods in each of the hundred
// namespaces of the list, by a RoleBinding in each; in the last three he
// may evict and resize pods too.
const frank = "frank"

// listed is a SidecarSet naming namespaces one by one.
func listed(name string, namespaces []string) *appsv1beta1.SidecarSet {
	s := builder.MakeSidecarSet(name, "app", "listed").Containers(builder.MakeContainer("listed", "agent:1")).Obj()
	s.Spec.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: appsv1beta1.NamespaceNameLabel, Operator: metav1.LabelSelectorOpIn, Values: namespaces,
	}}}
	return s
}

// updateAs changes a SidecarSet as it is stored, again on a conflict (the
// operator writes its status and records).
func updateAs(ctx context.Context, c client.Client, s *appsv1beta1.SidecarSet, change func(*appsv1beta1.SidecarSet)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(s), s); err != nil {
			return err
		}
		change(s)
		return c.Update(ctx, s)
	})
}

var _ = ginkgo.Describe("A SidecarSet naming a hundred namespaces", ginkgo.Ordered, func() {
	var names []string
	var frankClient client.Client
	// timings are the admission times of the writes, by who made them.
	timings := map[string][]time.Duration{}

	ginkgo.BeforeAll(func(ctx ginkgo.SpecContext) {
		// The API server evaluates the policy (the case that failed: its CEL
		// cost limit), the webhook checks the namespaces.
		kubectl(ctx, "apply", "-k", filepath.Join(repoRoot(), "policy", "authoring"))
		for i := range 100 {
			ns := fmt.Sprintf("listed-%02d", i)
			names = append(names, ns)
			gomega.Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(gomega.Succeed())
			gomega.Expect(env.Client.Create(ctx, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: frank, Namespace: ns},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: workloads},
				Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: frank}},
			})).To(gomega.Succeed())
		}
		gomega.Expect(env.Client.Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: frank + "-editor"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "sidecarset-operator-sidecarset-editor"},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: frank}},
		})).To(gomega.Succeed())
		gomega.Expect(env.Client.Create(ctx, &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "evict-and-resize"},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"pods/eviction"}, Verbs: []string{"create"}},
				{APIGroups: []string{""}, Resources: []string{"pods/resize"}, Verbs: []string{"patch"}},
			},
		})).To(gomega.Succeed())
		for _, ns := range names[97:] {
			gomega.Expect(env.Client.Create(ctx, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: frank + "-evict-and-resize", Namespace: ns},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "evict-and-resize"},
				Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: frank}},
			})).To(gomega.Succeed())
		}
		var err error
		frankClient, err = env.NewUserClient(frank)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		// The RBAC cache of the API server and the policy's informer.
		gomega.Eventually(func() error {
			return frankClient.Create(ctx, listed("listed-probe", names), client.DryRunAll)
		}).WithContext(ctx).Should(gomega.Succeed())
	}, ginkgo.NodeTimeout(2*time.Minute))

	ginkgo.AfterAll(func() {
		for who, ds := range timings {
			slices.Sort(ds)
			ginkgo.GinkgoWriter.Printf("admission of a SidecarSet naming 100 namespaces, %s: %v (median %v)\n", who, ds, ds[len(ds)/2])
			ginkgo.AddReportEntry("admission time, 100 namespaces, "+who, fmt.Sprint(ds))
		}
	})

	// write makes a write as who and records how long the API server took.
	write := func(ctx context.Context, who string, c client.Client, f func(context.Context, client.Client) error) error {
		start := time.Now()
		err := f(ctx, c)
		timings[who] = append(timings[who], time.Since(start))
		return err
	}

	for _, who := range []string{"cluster-admin", frank} {
		ginkgo.It("should be created, updated and deleted by "+who, func(ctx ginkgo.SpecContext) {
			c := env.Client
			if who == frank {
				c = frankClient
			}
			name := "listed-" + who
			s := listed(name, names)
			gomega.Expect(write(ctx, who, c, func(ctx context.Context, c client.Client) error { return c.Create(ctx, s) })).To(gomega.Succeed())
			gomega.Expect(write(ctx, who, c, func(ctx context.Context, c client.Client) error {
				return updateAs(ctx, c, s, func(s *appsv1beta1.SidecarSet) { s.Spec.Containers[0].Image = "agent:2" })
			})).To(gomega.Succeed())
			gomega.Expect(write(ctx, who, c, func(ctx context.Context, c client.Client) error { return c.Delete(ctx, s) })).To(gomega.Succeed())
		})
	}

	ginkgo.It("should be refused to an author missing namespaces, naming them", func(ctx ginkgo.SpecContext) {
		err := frankClient.Create(ctx, listed("listed-more", append(slices.Clone(names), "team-b", "listed-none")), client.DryRunAll)
		gomega.Expect(err).To(gomega.HaveOccurred())
		gomega.Expect(apierrors.IsForbidden(err)).To(gomega.BeTrue(), "%v", err)
		gomega.Expect(err.Error()).To(gomega.Equal(namespaceRefusal("listed-more",
			`spec.namespaceSelector: creating a SidecarSet that injects into the pods of namespaces "listed-00", "listed-01", "listed-02", `+
				`"listed-03", "listed-04", "listed-05", "listed-06", "listed-07", "listed-08", "listed-09" and 92 more requires permission `+
				`to create pods in each of them, which user "frank" does not have in namespaces "team-b", "listed-none"`)))
	})

	ginkgo.It("should let an author recreate or resize pods only where they may evict and resize them", func(ctx ginkgo.SpecContext) {
		recreating := func(namespaces []string) *appsv1beta1.SidecarSet {
			s := listed("listed-recreate", namespaces)
			s.Annotations = map[string]string{appsv1beta1.RecreatePodsAnnotation: "true"}
			return s
		}
		err := frankClient.Create(ctx, recreating(names), client.DryRunAll)
		gomega.Expect(err).To(gomega.HaveOccurred())
		gomega.Expect(err.Error()).To(gomega.Equal(namespaceRefusal("listed-recreate",
			`metadata.annotations[sidecarset-operator.dev/recreate-pods]: the operator evicts, for the SidecarSet's author, the pods it `+
				`selects and cannot upgrade in place (recreate-pods); that requires permission to create pods/eviction in each of namespaces `+
				`"listed-00", "listed-01", "listed-02", "listed-03", "listed-04", "listed-05", "listed-06", "listed-07", "listed-08", "listed-09" `+
				`and 90 more, which user "frank" does not have in namespaces "listed-00", "listed-01", "listed-02", "listed-03", "listed-04", `+
				`"listed-05", "listed-06", "listed-07", "listed-08", "listed-09" and 87 more`)))
		allowed := recreating(names[97:])
		gomega.Expect(frankClient.Create(ctx, allowed)).To(gomega.Succeed())
		gomega.Expect(frankClient.Delete(ctx, allowed)).To(gomega.Succeed())

		// Resources: refused where frank may not resize, allowed where he may.
		s := listed("listed-resize", names[96:])
		gomega.Expect(frankClient.Create(ctx, s)).To(gomega.Succeed())
		limit := func(s *appsv1beta1.SidecarSet) {
			s.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}
		}
		err = updateAs(ctx, frankClient, s, limit)
		gomega.Expect(err).To(gomega.HaveOccurred())
		gomega.Expect(err.Error()).To(gomega.Equal(namespaceRefusal("listed-resize",
			`spec.containers[0].resources: the operator resizes, for the SidecarSet's author, the running pods it selects (pods/resize); `+
				`that requires permission to patch pods/resize in each of namespaces "listed-96", "listed-97", "listed-98", "listed-99", `+
				`which user "frank" does not have in namespace "listed-96"`)))
		gomega.Expect(updateAs(ctx, frankClient, s, func(s *appsv1beta1.SidecarSet) {
			s.Spec.NamespaceSelector.MatchExpressions[0].Values = names[97:]
		})).To(gomega.Succeed())
		gomega.Expect(updateAs(ctx, frankClient, s, limit)).To(gomega.Succeed())
	})
})
