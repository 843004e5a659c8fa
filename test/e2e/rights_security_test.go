package e2e_test

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
)

// The author's rights bound what the operator does for them (issue 38): a
// SidecarSet author who may only create pods in a namespace cannot have the
// operator evict them (recreate-pods) or resize them (a resources change);
// an author who may evict and resize there can. And a SidecarSet naming a
// hundred namespaces is written by an author allowed in each.

// rightsActor is a user bound to the SidecarSet editor role and, in the
// given namespaces, to the given ClusterRoles.
type rightsActor struct {
	name   string
	client client.Client
}

// newRightsActor binds a user to the SidecarSet editor role and, in the
// namespaces, to the roles.
func newRightsActor(ctx context.Context, name string, roles []string, namespaces ...string) rightsActor {
	return rightsActor{name: name, client: bindActor(ctx, name, []string{"sidecarset-operator-sidecarset-editor"}, roles, namespaces...)}
}

// rightsRoles creates the ClusterRoles the actors are bound to: creating
// pods, and evicting and resizing them.
func rightsRoles(ctx context.Context) (pods, evictResize string) {
	pods, evictResize = "e2e-rights-pods", "e2e-rights-evict-resize"
	for name, rules := range map[string][]rbacv1.PolicyRule{
		pods: {{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create", "get", "list", "watch"}}},
		evictResize: {
			{APIGroups: []string{""}, Resources: []string{"pods/eviction"}, Verbs: []string{"create"}},
			{APIGroups: []string{""}, Resources: []string{"pods/resize"}, Verbs: []string{"patch"}},
		},
	} {
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
		err := env.Client.Create(ctx, role)
		if !apierrors.IsAlreadyExists(err) {
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
		}
	}
	return pods, evictResize
}

// refusedFor expects a refusal by the operator's webhook naming the user.
func refusedFor(err error, user string, parts ...string) {
	ginkgo.GinkgoHelper()
	gomega.Expect(err).To(gomega.HaveOccurred(), "%s was let through", user)
	ginkgo.GinkgoWriter.Printf("as %s: %v\n", user, err)
	gomega.Expect(apierrors.IsForbidden(err)).To(gomega.BeTrue(), "%v", err)
	gomega.Expect(err.Error()).To(gomega.ContainSubstring(`admission webhook "vsidecarset.sidecarset-operator.dev" denied the request`))
	for _, p := range parts {
		gomega.Expect(err.Error()).To(gomega.ContainSubstring(p))
	}
}

var _ = ginkgo.Describe("The author's rights bound what the operator does for them", ginkgo.Label("security", "rights"), func() {
	ginkgo.It("should evict pods for an author only where the author may evict them", func(ctx ginkgo.SpecContext) {
		ns := createNamespace(ctx, "rights-evict")
		pods, evictResize := rightsRoles(ctx)
		creator := newRightsActor(ctx, "e2e-pods-only-"+ns, []string{pods}, ns)
		evictor := newRightsActor(ctx, "e2e-evictor-"+ns, []string{pods, evictResize}, ns)

		gomega.Expect(env.Client.Create(ctx, app(ns, "web", 3).Obj())).To(gomega.Succeed())
		var before []types.UID
		gomega.Eventually(func(g gomega.Gomega) {
			running := listPods(ctx, g, ns, appLabels)
			g.Expect(running).To(gomega.HaveLen(3))
			before = nil
			for _, p := range running {
				g.Expect(podReady(&p)).To(gomega.BeTrue())
				before = append(before, p.UID)
			}
		}).WithContext(ctx).Should(gomega.Succeed())

		recreating := sidecarSet(ns, "agent", "busybox:1.36").Annotation(appsv1beta1.RecreatePodsAnnotation, "true").Obj()
		refusedFor(creator.client.Create(ctx, recreating.DeepCopy()), creator.name,
			`metadata.annotations[sidecarset-operator.dev/recreate-pods]: the operator evicts, for the SidecarSet's author, the pods it selects and cannot upgrade in place (recreate-pods)`,
			fmt.Sprintf(`that requires permission to create pods/eviction in namespace %q, which user %q does not have`, ns, creator.name))
		// Nor by turning it on later.
		plain := sidecarSet(ns, "agent", "busybox:1.36").Obj()
		gomega.Expect(creator.client.Create(ctx, plain)).To(gomega.Succeed())
		ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
			gomega.Expect(client.IgnoreNotFound(env.Client.Delete(ctx, plain))).To(gomega.Succeed())
		})
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			s := &appsv1beta1.SidecarSet{}
			if err := creator.client.Get(ctx, client.ObjectKeyFromObject(plain), s); err != nil {
				return err
			}
			s.Annotations = map[string]string{appsv1beta1.RecreatePodsAnnotation: "true"}
			return creator.client.Update(ctx, s)
		})
		refusedFor(err, creator.name, "create pods/eviction")
		// The pods created before the SidecarSet were left alone.
		gomega.Consistently(func(g gomega.Gomega) {
			var uids []types.UID
			for _, p := range listPods(ctx, g, ns, appLabels) {
				uids = append(uids, p.UID)
			}
			g.Expect(uids).To(gomega.ConsistOf(before))
		}).WithContext(ctx).WithTimeout(5 * time.Second).Should(gomega.Succeed())

		// The author who may evict turns it on: the pods are recreated with
		// the sidecar.
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			s := &appsv1beta1.SidecarSet{}
			if err := evictor.client.Get(ctx, client.ObjectKeyFromObject(plain), s); err != nil {
				return err
			}
			s.Annotations = map[string]string{appsv1beta1.RecreatePodsAnnotation: "true"}
			return evictor.client.Update(ctx, s)
		})
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		for _, p := range expectReadyPods(ctx, ns, appLabels, 3, plain.Name) {
			gomega.Expect(slices.Contains(before, p.UID)).To(gomega.BeFalse(), "pod %s was not recreated", p.Name)
			gomega.Expect(containerNames(p.Spec.Containers)).To(gomega.ContainElement("agent"))
		}
	})

	ginkgo.It("should resize running pods for an author only where the author may resize them", func(ctx ginkgo.SpecContext) {
		ns := createNamespace(ctx, "rights-resize")
		pods, evictResize := rightsRoles(ctx)
		creator := newRightsActor(ctx, "e2e-pods-only-"+ns, []string{pods}, ns)
		resizer := newRightsActor(ctx, "e2e-resizer-"+ns, []string{pods, evictResize}, ns)

		s := sidecarSet(ns, "agent", "busybox:1.36").Obj()
		s.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}
		gomega.Expect(creator.client.Create(ctx, s)).To(gomega.Succeed())
		ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
			gomega.Expect(client.IgnoreNotFound(env.Client.Delete(ctx, s))).To(gomega.Succeed())
		})
		expectObserved(ctx, s.Name)
		runDeployment(ctx, app(ns, "web", 2).Obj(), s.Name)

		resize := func(c client.Client, memory string) error {
			return retry.RetryOnConflict(retry.DefaultRetry, func() error {
				got := &appsv1beta1.SidecarSet{}
				if err := c.Get(ctx, client.ObjectKeyFromObject(s), got); err != nil {
					return err
				}
				got.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(memory)}
				return c.Update(ctx, got)
			})
		}
		refusedFor(resize(creator.client, "32Mi"), creator.name,
			`spec.containers[0].resources: the operator resizes, for the SidecarSet's author, the running pods it selects (pods/resize)`,
			fmt.Sprintf(`that requires permission to patch pods/resize in namespace %q, which user %q does not have`, ns, creator.name))
		gomega.Expect(resize(resizer.client, "32Mi")).To(gomega.Succeed())
		gomega.Eventually(func(g gomega.Gomega) {
			running := listPods(ctx, g, ns, appLabels)
			g.Expect(running).To(gomega.HaveLen(2))
			for _, p := range running {
				agent := specContainer(&p, "agent")
				g.Expect(agent).NotTo(gomega.BeNil())
				g.Expect(agent.Resources.Limits.Memory().String()).To(gomega.Equal("32Mi"), "pod %s resized in place", p.Name)
			}
		}).WithContext(ctx).Should(gomega.Succeed())
	})

	ginkgo.It("should let an author allowed in each of a hundred namespaces create, update and delete a SidecarSet naming them", func(ctx ginkgo.SpecContext) {
		pods, _ := rightsRoles(ctx)
		var names []string
		for range 100 {
			names = append(names, createNamespace(ctx, "rights-list"))
		}
		author := newRightsActor(ctx, "e2e-lister-"+names[0], []string{pods}, names...)
		listed := func(namespaces []string) *appsv1beta1.SidecarSet {
			s := builder.MakeSidecarSet("rights-list-"+names[0], "app", "listed").
				Containers(builder.MakeContainer("listed", "busybox:1.36").Command("sleep", "999d")).Obj()
			s.Spec.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: appsv1beta1.NamespaceNameLabel, Operator: metav1.LabelSelectorOpIn, Values: namespaces,
			}}}
			return s
		}
		outsider := createNamespace(ctx, "rights-outsider")
		refusedFor(author.client.Create(ctx, listed(append(slices.Clone(names), outsider))), author.name,
			fmt.Sprintf(`requires permission to create pods in each of them, which user %q does not have in namespace %q`, author.name, outsider))

		var timings []time.Duration
		timed := func(f func() error) {
			start := time.Now()
			gomega.Expect(f()).To(gomega.Succeed())
			timings = append(timings, time.Since(start))
		}
		for _, who := range []rightsActor{author, {name: "cluster-admin", client: env.Client}} {
			s := listed(names)
			timed(func() error { return who.client.Create(ctx, s) })
			timed(func() error {
				return retry.RetryOnConflict(retry.DefaultRetry, func() error {
					if err := who.client.Get(ctx, client.ObjectKeyFromObject(s), s); err != nil {
						return err
					}
					s.Spec.Containers[0].Image = "busybox:1.37"
					return who.client.Update(ctx, s)
				})
			})
			timed(func() error { return who.client.Delete(ctx, s) })
			gomega.Eventually(func() bool {
				return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(s), &appsv1beta1.SidecarSet{}))
			}).WithContext(ctx).Should(gomega.BeTrue())
		}
		ginkgo.AddReportEntry("writes of a SidecarSet naming 100 namespaces (create, update, delete; the author, then cluster-admin)",
			fmt.Sprint(timings))
	})
})
