package e2e_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	"github.com/sidecarset-operator/sidecarset-operator/api/revision"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
	"github.com/sidecarset-operator/sidecarset-operator/test/e2e/framework"
)

// The history and bookkeeping bounds of issue 38 (security review N3, N8,
// N4): an editor who may write SidecarSets reaching one namespace tries to
// flood the operator's namespace with ControllerRevisions, to store a huge
// SidecarSet, and to forge the pod's reach record through patchPodMetadata;
// someone who can write ControllerRevisions plants one for a
// customVersion pin.

// historyEditor is the user the specs impersonate: the SidecarSet editor
// role, and the built-in edit role in the spec's namespace.
const historyEditor = "history-e2e-editor"

var _ = ginkgo.Describe("History and bookkeeping bounds", ginkgo.Label("security", "history"), ginkgo.Ordered, func() {
	var (
		ns     string
		editor client.Client
		warned *warnings
	)

	ginkgo.BeforeAll(func(ctx ginkgo.SpecContext) {
		ns = createNamespace(ctx, "history-sec")
		bindHistoryEditor(ctx, ns)
		warned = &warnings{}
		cfg := rest.CopyConfig(env.Config)
		cfg.WarningHandler = warned
		cfg.Impersonate = rest.ImpersonationConfig{UserName: historyEditor, Groups: []string{"system:authenticated"}}
		var err error
		editor, err = client.New(cfg, client.Options{Scheme: framework.Scheme})
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
	})

	ginkgo.It("should keep at most the maximum of revisions, with a warning, when an editor floods the history", func(ctx ginkgo.SpecContext) {
		name := ns + "-flood"
		set := builder.MakeSidecarSet(name, "app", "nothing").Namespace(ns).RevisionHistoryLimit(2147483647).
			Containers(builder.MakeContainer("hoard", "busybox:1.36").Env("BLOB", "0")).Obj()
		createAs(ctx, editor, set)
		gomega.Expect(warned.all()).To(gomega.ContainElement(fmt.Sprintf(
			"spec.revisionHistoryLimit: 2147483647 is above the maximum of %d: the controller keeps at most %d ControllerRevisions "+
				"of this SidecarSet (the value is clamped to %d)", revision.MaxHistoryLimit, revision.MaxHistoryLimit, revision.MaxHistoryLimit)))
		expectObserved(ctx, name)

		// Each change is a new revision: the controller records each
		// before the next one (else it would record only the last).
		changes := revision.MaxHistoryLimit + 5
		for i := 1; i <= changes; i++ {
			updateAsEditor(ctx, editor, name, func(s *appsv1beta1.SidecarSet) { s.Spec.Containers[0].Env[0].Value = fmt.Sprint(i) })
			expectObserved(ctx, name)
		}
		gomega.Eventually(func(g gomega.Gomega) {
			latest := getSidecarSet(ctx, g, name).Status.LatestRevision
			names := revisions(ctx, g, name)
			g.Expect(names).To(gomega.HaveLen(revision.MaxHistoryLimit), "%d changes were recorded", changes+1)
			g.Expect(names).To(gomega.ContainElement(latest))
		}).WithContext(ctx).Should(gomega.Succeed())
	}, ginkgo.NodeTimeout(rolloutTimeout))

	ginkgo.It("should refuse a SidecarSet above the size bound", func(ctx ginkgo.SpecContext) {
		set := builder.MakeSidecarSet(ns+"-huge", "app", "nothing").Namespace(ns).
			Containers(builder.MakeContainer("hoard", "busybox:1.36").Env("BLOB", strings.Repeat("x", 200<<10))).Obj()
		err := editor.Create(ctx, set)
		gomega.Expect(err).To(gomega.HaveOccurred())
		// The webhook weighs the object it is given, defaulted and with its
		// hash annotations: a few hundred bytes more than the env value.
		weighs := regexp.MustCompile(`spec: Forbidden: the SidecarSet weighs (\d+) bytes as each of its ControllerRevisions records it`).
			FindStringSubmatch(err.Error())
		gomega.Expect(weighs).To(gomega.HaveLen(2), "the refusal names the size: %v", err)
		size, convErr := strconv.Atoi(weighs[1])
		gomega.Expect(convErr).NotTo(gomega.HaveOccurred())
		gomega.Expect(size).To(gomega.BeNumerically(">", 200<<10))
		gomega.Expect(err.Error()).To(gomega.ContainSubstring("more than the bound of 131072 bytes (128 KiB)"))
	})

	ginkgo.It("should not inject a planted revision without controller for a customVersion pin", func(ctx ginkgo.SpecContext) {
		name := ns + "-pin"
		set := builder.MakeSidecarSet(name, "app", "pinned").Namespace(ns).CustomVersion("v1").
			Containers(builder.MakeContainer("agent", "busybox:1.36").Command("sleep", "999d")).Obj()
		createSidecarSet(ctx, set)
		var own string
		gomega.Eventually(func(g gomega.Gomega) {
			names := revisions(ctx, g, name)
			g.Expect(names).To(gomega.HaveLen(1))
			own = names[0]
		}).WithContext(ctx).Should(gomega.Succeed())

		// Someone who may write ControllerRevisions in the operator's
		// namespace plants one carrying the version, numbered as the newest,
		// with no owner.
		stored := &appsv1beta1.SidecarSet{}
		gomega.Expect(env.Client.Get(ctx, types.NamespacedName{Name: name}, stored)).To(gomega.Succeed())
		stored.Spec.Containers[0].Image = "attacker/exfil:1"
		planted, err := revision.New(stored, framework.OperatorNamespace, 999999, new(int32(7)))
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		planted.OwnerReferences = nil
		gomega.Expect(env.Client.Create(ctx, planted)).To(gomega.Succeed())
		ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
			gomega.Expect(client.IgnoreNotFound(env.Client.Delete(ctx, planted))).To(gomega.Succeed())
		})

		updateSidecarSet(ctx, name, func(s *appsv1beta1.SidecarSet) {
			s.Spec.CustomVersion = "v2"
			s.Spec.Containers[0].Image = "busybox:1.37"
			s.Spec.InjectionStrategy.Revision = &appsv1beta1.SidecarSetInjectRevision{CustomVersion: new("v1")}
		})
		expectObserved(ctx, name)
		pod := builder.MakePod("pinned", ns).Label("app", "pinned").Obj()
		created, _ := createPodWhen(ctx, pod, func(g gomega.Gomega, p *corev1.Pod) {
			g.Expect(injected(p, name)).To(gomega.BeTrue())
			g.Expect(specContainer(p, "agent").Image).To(gomega.Equal("busybox:1.36"), "the pin resolves to the SidecarSet's own revision")
		})
		hashes, err := podstate.DecodeHashes(created.Annotations[appsv1beta1.SidecarSetHashAnnotation])
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(hashes[name].ControllerRevision).To(gomega.Equal(own))
		gomega.Expect(revisions(ctx, gomega.Default, name)).To(gomega.ContainElement(planted.Name), "the planted revision is left alone")
	})

	ginkgo.It("should not write a forged reach record through patchPodMetadata at an in-place upgrade", func(ctx ginkgo.SpecContext) {
		(&securitySuite{}).useWhitelist(ctx, `{"rules": [{"allowedAnnotationKeyExprs": [".*"]}]}`)
		name := ns + "-forger"
		set := builder.MakeSidecarSet(name, "app", "forged").Namespace(ns).
			Containers(builder.MakeContainer("agent", "busybox:1.36").Command("sleep", "999d")).
			PatchPodMetadata(appsv1beta1.SidecarSetMergePatchJSONPatchPolicy, map[string]string{
				appsv1beta1.ReachAnnotation: `{"mesh":""}`, "history-e2e/patched": `{"by":"forger"}`,
			}).Obj()
		createAs(ctx, editor, set)
		gomega.Expect(warned.all()).To(gomega.ContainElement(fmt.Sprintf("spec.patchPodMetadata[0].annotations[%s]: holds SidecarSet state, "+
			"which only the operator writes: it is never patched onto pods", appsv1beta1.ReachAnnotation)))
		expectObserved(ctx, name)

		pod := builder.MakePod("forged", ns).Label("app", "forged").Obj()
		created, podWarnings := createPodWhen(ctx, pod, injectedWith(name))
		gomega.Expect(podWarnings).To(gomega.ContainElement(fmt.Sprintf(
			"SidecarSet %q: patchPodMetadata: annotation %s holds SidecarSet state and was not patched", name, appsv1beta1.ReachAnnotation)))
		recorded := created.Annotations[appsv1beta1.ReachAnnotation]
		gomega.Expect(recorded).To(gomega.Equal(fmt.Sprintf(`{%q:""}`, name)), "injection records the SidecarSet's own reach")
		gomega.Eventually(func(g gomega.Gomega) {
			g.Expect(podReady(getPod(ctx, g, created))).To(gomega.BeTrue())
		}).WithContext(ctx).Should(gomega.Succeed())

		updateAsEditor(ctx, editor, name, func(s *appsv1beta1.SidecarSet) { s.Spec.Containers[0].Image = "busybox:1.37" })
		upgraded := expectRolledOut(ctx, ns, map[string]string{"app": "forged"}, "agent", "busybox:1.37", rolloutTimeout)
		gomega.Expect(upgraded).To(gomega.HaveLen(1))
		gomega.Expect(upgraded[0].Annotations).To(gomega.HaveKeyWithValue(appsv1beta1.ReachAnnotation, recorded),
			"the upgrade leaves the reach record as injection wrote it")
		gomega.Expect(upgraded[0].Annotations).To(gomega.HaveKeyWithValue("history-e2e/patched", `{"by":"forger"}`))
	}, ginkgo.NodeTimeout(rolloutTimeout+rolloutTimeout/2))
})

// bindHistoryEditor binds historyEditor to the SidecarSet editor role and
// to edit in the namespace, until the container ends, and waits until RBAC
// grants it.
func bindHistoryEditor(ctx context.Context, ns string) {
	subject := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: historyEditor}}
	cluster := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: historyEditor},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "sidecarset-operator-sidecarset-editor"},
		Subjects:   subject,
	}
	edit := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: historyEditor, Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects:   subject,
	}
	for _, b := range []client.Object{cluster, edit} {
		gomega.Expect(env.Client.Create(ctx, b)).To(gomega.Succeed())
		ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
			gomega.Expect(client.IgnoreNotFound(env.Client.Delete(ctx, b))).To(gomega.Succeed())
		})
	}
	for _, attrs := range []authorizationv1.ResourceAttributes{
		{Verb: "create", Group: appsv1beta1.GroupVersion.Group, Resource: "sidecarsets"},
		{Verb: "create", Resource: "pods", Namespace: ns},
	} {
		gomega.Eventually(func(g gomega.Gomega) {
			review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User: historyEditor, Groups: []string{"system:authenticated"}, ResourceAttributes: &attrs,
			}}
			got, err := env.Clientset.AuthorizationV1().SubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
			g.Expect(err).NotTo(gomega.HaveOccurred())
			g.Expect(got.Status.Allowed).To(gomega.BeTrue())
		}).WithContext(ctx).Should(gomega.Succeed(), "%s may %s %s in %q", historyEditor, attrs.Verb, attrs.Resource, attrs.Namespace)
	}
}

// createAs creates a SidecarSet as the user's client, deleted (by the
// administrator) when the spec ends.
func createAs(ctx context.Context, c client.Client, s *appsv1beta1.SidecarSet) {
	gomega.ExpectWithOffset(1, c.Create(ctx, s)).To(gomega.Succeed())
	ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
		gomega.Expect(client.IgnoreNotFound(env.Client.Delete(ctx, s))).To(gomega.Succeed())
	})
}

// updateAsEditor changes a SidecarSet through the client, retrying on
// conflicts.
func updateAsEditor(ctx context.Context, c client.Client, name string, mutate func(*appsv1beta1.SidecarSet)) {
	gomega.ExpectWithOffset(1, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s := &appsv1beta1.SidecarSet{}
		if err := env.Client.Get(ctx, types.NamespacedName{Name: name}, s); err != nil {
			return err
		}
		mutate(s)
		return c.Update(ctx, s)
	})).To(gomega.Succeed())
}
