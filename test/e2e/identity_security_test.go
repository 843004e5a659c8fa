package e2e_test

import (
	"context"
	"fmt"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
)

// The objects a SidecarSet was judged against, by name, when it was
// written (issue 38, N5 and N7): a canary's base, and the namespaces it
// names. The webhook records their UIDs; an object deleted and created
// again under the same name is not the one judged, and the SidecarSet does
// not act on it until someone allowed to writes it again.
var _ = ginkgo.Describe("Identity", ginkgo.Label("security", "identity"), func() {
	ginkgo.It("should refuse a canary before its base, and not replace a base created again until the canary is written again by someone allowed to", func(ctx ginkgo.SpecContext) {
		ns := createNamespace(ctx, "id-canary")
		spec := map[string]string{identitySpecLabel: ns}
		editor := identityActor(ctx, "identity-e2e-editor-"+ns, nil, ns)
		wide := identityActor(ctx, "identity-e2e-all-namespaces-"+ns, []string{"inject-all-namespaces"}, ns)
		baseName, canaryName := ns+"-mesh", ns+"-mesh-canary"
		canary := builder.MakeSidecarSet(canaryName, identitySpecLabel, ns).Namespace(ns).NotUpdate().
			Annotation(appsv1beta1.SidecarSetCanaryAnnotation, "true").Annotation(appsv1beta1.SidecarSetBaseAnnotation, baseName).
			Containers(builder.MakeContainer("proxy", imageNext).Command("sleep", "999d")).Obj()
		deleteSidecarSetNamedAtEnd(canaryName)
		deleteSidecarSetNamedAtEnd(baseName)

		ginkgo.By("a canary naming a base that does not exist yet")
		err := editor.Create(ctx, canary.DeepCopy())
		gomega.Expect(apierrors.IsInvalid(err)).To(gomega.BeTrue(), "refused as invalid: %v", err)
		gomega.Expect(err.Error()).To(gomega.ContainSubstring(fmt.Sprintf(
			"no SidecarSet named %q exists: create the base first, or remove the canary annotations", baseName)))

		ginkgo.By("the administrator's base, confined to the team's namespace, and the editor's canary of it")
		base := builder.MakeSidecarSet(baseName, identitySpecLabel, ns).Namespace(ns).
			Containers(builder.MakeContainer("proxy", imageLater).Command("sleep", "999d")).Obj()
		createAdmin(ctx, base.DeepCopy())
		gomega.Eventually(func() error { return editor.Create(ctx, canary.DeepCopy()) }).WithContext(ctx).Should(gomega.Succeed())
		first := getSidecarSet(ctx, gomega.Default, baseName)
		gomega.Expect(getSidecarSet(ctx, gomega.Default, canaryName).Annotations).To(
			gomega.HaveKeyWithValue(appsv1beta1.CanaryBaseUIDAnnotation, string(first.UID)))
		p, _ := createPodWhen(ctx, identityPod(ns, spec), injectedWith(canaryName))
		gomega.Expect(injected(p, baseName)).To(gomega.BeFalse(), "the canary replaces its base")

		ginkgo.By("the base deleted and created again, now for every namespace")
		gomega.Expect(env.Client.Delete(ctx, first)).To(gomega.Succeed())
		gomega.Eventually(func() bool {
			return apierrors.IsNotFound(env.Client.Get(ctx, types.NamespacedName{Name: baseName}, &appsv1beta1.SidecarSet{}))
		}).WithContext(ctx).Should(gomega.BeTrue())
		again := base.DeepCopy()
		again.Spec.NamespaceSelector = nil
		createAdmin(ctx, again)
		p, warnings := createPodWhen(ctx, identityPod(ns, spec), injectedWith(baseName))
		gomega.Expect(injected(p, canaryName)).To(gomega.BeFalse(), "the canary does not replace a base it was not judged against")
		gomega.Expect(warnings).To(gomega.ContainElement(gomega.ContainSubstring(fmt.Sprintf(
			"SidecarSet %q is not injected: its base %q was deleted and created again since the canary was written", canaryName, baseName))))
		gomega.Eventually(func(g gomega.Gomega) {
			c := meta.FindStatusCondition(getSidecarSet(ctx, g, canaryName).Status.Conditions, appsv1beta1.SidecarSetConditionInjected)
			g.Expect(c).NotTo(gomega.BeNil())
			g.Expect(c.Message).To(gomega.ContainSubstring("the canary's base was deleted and created again since the canary was written"))
		}).WithContext(ctx).Should(gomega.Succeed())

		ginkgo.By("the editor writes the canary again: judged against the new base, which it may not shadow")
		err = identityTouch(ctx, editor, canaryName)
		gomega.Expect(apierrors.IsForbidden(err)).To(gomega.BeTrue(), "refused as forbidden: %v", err)
		gomega.Expect(err.Error()).To(gomega.ContainSubstring(fmt.Sprintf(
			"a canary of SidecarSet %q replaces its sidecars in the pods it selects, which needs the authority over %q: permission to inject-all-namespaces",
			baseName, baseName)))

		ginkgo.By("an author allowed to inject into every namespace writes it again: it replaces the new base")
		gomega.Expect(identityTouch(ctx, wide, canaryName)).To(gomega.Succeed())
		gomega.Expect(getSidecarSet(ctx, gomega.Default, canaryName).Annotations).To(
			gomega.HaveKeyWithValue(appsv1beta1.CanaryBaseUIDAnnotation, string(again.UID)))
		p, _ = createPodWhen(ctx, identityPod(ns, spec), injectedWith(canaryName))
		gomega.Expect(injected(p, baseName)).To(gomega.BeFalse(), "the canary replaces the base it was judged against")
	})

	ginkgo.It("should not inject a SidecarSet into a namespace deleted and created again until someone allowed there writes it again", func(ctx ginkgo.SpecContext) {
		name := createNamespace(ctx, "id-ns")
		spec := map[string]string{identitySpecLabel: name}
		teamA := identityActor(ctx, "identity-e2e-team-a-"+name, nil, name)
		agent := name + "-agent"
		deleteSidecarSetNamedAtEnd(agent)
		set := builder.MakeSidecarSet(agent, identitySpecLabel, name).Namespace(name).
			Containers(builder.MakeContainer("agent", imageNext).Command("sleep", "999d")).Obj()
		gomega.Expect(teamA.Create(ctx, set)).To(gomega.Succeed())
		first := &corev1.Namespace{}
		gomega.Expect(env.Client.Get(ctx, types.NamespacedName{Name: name}, first)).To(gomega.Succeed())
		gomega.Expect(getSidecarSet(ctx, gomega.Default, agent).Annotations).To(gomega.HaveKeyWithValue(
			appsv1beta1.NamespaceUIDsAnnotation, fmt.Sprintf(`{%q:%q}`, name, first.UID)))
		createPodWhen(ctx, identityPod(name, spec), injectedWith(agent))
		// The cleanup the docs advise: one owned by its namespace goes with it.
		owned := name + "-owned"
		deleteSidecarSetNamedAtEnd(owned)
		ownedSet := builder.MakeSidecarSet(owned, identitySpecLabel+"-owned", name).Namespace(name).
			Containers(builder.MakeContainer("owned", imageNext).Command("sleep", "999d")).Obj()
		ownedSet.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Namespace", Name: name, UID: first.UID}}
		gomega.Expect(teamA.Create(ctx, ownedSet)).To(gomega.Succeed())

		ginkgo.By("the namespace deleted, and created again for another team")
		gomega.Expect(env.Client.Delete(ctx, first)).To(gomega.Succeed())
		gomega.Eventually(func() bool {
			return apierrors.IsNotFound(env.Client.Get(ctx, types.NamespacedName{Name: name}, &corev1.Namespace{}))
		}).WithContext(ctx).WithTimeout(3*time.Minute).Should(gomega.BeTrue(), "namespace %s deleted", name)
		gomega.Eventually(func() bool {
			return apierrors.IsNotFound(env.Client.Get(ctx, types.NamespacedName{Name: owned}, &appsv1beta1.SidecarSet{}))
		}).WithContext(ctx).WithTimeout(2*time.Minute).Should(gomega.BeTrue(), "the garbage collector deletes the SidecarSet owned by the namespace")
		second := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		gomega.Expect(env.Client.Create(ctx, second)).To(gomega.Succeed())
		gomega.Expect(second.UID).NotTo(gomega.Equal(first.UID))
		gomega.Eventually(func(g gomega.Gomega) {
			g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: name, Name: "default"}, &corev1.ServiceAccount{})).To(gomega.Succeed())
		}).WithContext(ctx).Should(gomega.Succeed(), "the default ServiceAccount of %s", name)

		p, warnings := createPodWhen(ctx, identityPod(name, spec), func(g gomega.Gomega, p *corev1.Pod) {
			g.Expect(injected(p, agent)).To(gomega.BeFalse(), "the old namespace's SidecarSet injected into the new namespace")
		})
		gomega.Expect(specContainer(p, "agent")).To(gomega.BeNil())
		gomega.Expect(warnings).To(gomega.ContainElement(fmt.Sprintf(
			"SidecarSet %q is not injected: namespace %q was deleted and created again since the SidecarSet was written (UID %s then, %s now): "+
				"it applies there only once someone allowed to create pods there writes it again", agent, name, first.UID, second.UID)))
		gomega.Eventually(func(g gomega.Gomega) {
			c := meta.FindStatusCondition(getSidecarSet(ctx, g, agent).Status.Conditions, appsv1beta1.SidecarSetConditionInjected)
			g.Expect(c).NotTo(gomega.BeNil())
			g.Expect(c.Message).To(gomega.ContainSubstring("its namespace was deleted and created again since the SidecarSet was written"))
		}).WithContext(ctx).Should(gomega.Succeed())

		ginkgo.By("the old team, without rights in the new namespace, cannot write it again")
		err := identityTouch(ctx, teamA, agent)
		gomega.Expect(apierrors.IsForbidden(err)).To(gomega.BeTrue(), "refused as forbidden: %v", err)
		gomega.Expect(err.Error()).To(gomega.ContainSubstring(fmt.Sprintf("requires permission to create pods in namespace %q", name)))

		ginkgo.By("the new team, allowed to create pods there, writes it again: it applies there")
		teamB := identityActor(ctx, "identity-e2e-team-b-"+name, nil, name)
		gomega.Expect(identityTouch(ctx, teamB, agent)).To(gomega.Succeed())
		gomega.Expect(getSidecarSet(ctx, gomega.Default, agent).Annotations).To(gomega.HaveKeyWithValue(
			appsv1beta1.NamespaceUIDsAnnotation, fmt.Sprintf(`{%q:%q}`, name, second.UID)))
		createPodWhen(ctx, identityPod(name, spec), injectedWith(agent))
	})
})

// identitySpecLabel is the pod label the spec's SidecarSets select, with
// the spec's namespace as its value.
const identitySpecLabel = "identity-e2e/spec"

// identityPod is a pod of the spec.
func identityPod(ns string, labels map[string]string) *corev1.Pod {
	w := builder.MakePod("id", ns)
	for k, v := range labels {
		w.Label(k, v)
	}
	return w.Obj()
}

// deleteSidecarSetNamedAtEnd deletes a SidecarSet, whoever wrote it, when the spec ends.
func deleteSidecarSetNamedAtEnd(name string) {
	ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
		set := &appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: name}}
		gomega.Expect(client.IgnoreNotFound(env.Client.Delete(ctx, set))).To(gomega.Succeed())
	})
}

// identityActor is a user bound to the SidecarSet editor role and the
// given inject-* roles, and to edit in the namespaces, until the spec
// ends; it returns the user's client once RBAC grants it.
func identityActor(ctx context.Context, user string, verbs []string, namespaces ...string) client.Client {
	roles := []string{"sidecarset-operator-sidecarset-editor"}
	for _, v := range verbs {
		roles = append(roles, "sidecarset-operator-"+v)
	}
	return bindActor(ctx, user, roles, []string{"edit"}, namespaces...)
}

// identityTouch writes a SidecarSet again as the user, changing only a
// label: a write that changes nothing it injects.
func identityTouch(ctx context.Context, c client.Client, name string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		set := &appsv1beta1.SidecarSet{}
		if err := env.Client.Get(ctx, types.NamespacedName{Name: name}, set); err != nil {
			return err
		}
		if set.Labels == nil {
			set.Labels = map[string]string{}
		}
		set.Labels["identity-e2e/written"] = time.Now().UTC().Format("150405.000000")
		return c.Update(ctx, set)
	})
}
