package lifecycle_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
	"github.com/sidecarset-operator/sidecarset-operator/test/e2e/framework"
)

const (
	// appNamespace holds the pods the specs create, selected by keepSet.
	appNamespace = "apps"
	// sidecarName is keepSet's sidecar.
	sidecarName = "proxy"
	keepSet     = "keep"
	// doomedSet is deleted once the operator is gone.
	doomedSet = "doomed"
	// settle is how long the load goes on after a procedure's last step.
	settle = 5 * time.Second
)

var _ = ginkgo.Describe("Day-two procedures", ginkgo.Ordered, ginkgo.Label("lifecycle"), func() {
	var kruise *kruiseManager

	ginkgo.BeforeAll(func(ctx ginkgo.SpecContext) {
		var err error
		kruise, err = startKruiseManager()
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
			deleteKruiseWebhooks(ctx)
			gomega.Expect(kruise.stop()).To(gomega.Succeed())
		})
		gomega.Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: appNamespace}})).To(gomega.Succeed())
	})

	ginkgo.It("make undeploy removes the operator and keeps every SidecarSet, the namespace, the ControllerRevisions and kruise-configuration", func(ctx ginkgo.SpecContext) {
		ginkgo.By("creating SidecarSets, the whitelist and an injected pod while the operator runs")
		keep := builder.MakeSidecarSet(keepSet, "app", "web").Namespace(appNamespace).
			Containers(builder.MakeContainer(sidecarName, "busybox:1.36").Command("sleep", "999d")).Obj()
		doomed := builder.MakeSidecarSet(doomedSet, "app", "other").
			Containers(builder.MakeContainer("other", "busybox:1.36").Command("sleep", "999d")).Obj()
		for _, s := range []*appsv1beta1.SidecarSet{keep, doomed} {
			gomega.Expect(env.Client.Create(ctx, s)).To(gomega.Succeed())
			expectObserved(ctx, s.Name)
		}
		whitelist := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kruise-configuration", Namespace: framework.OperatorNamespace},
			Data: map[string]string{"SidecarSet_ServiceAccount_Whitelist": `[]`}}
		gomega.Expect(env.Client.Create(ctx, whitelist)).To(gomega.Succeed())
		revisions := &appsv1.ControllerRevisionList{}
		gomega.Eventually(func(g gomega.Gomega) {
			g.Expect(env.Client.List(ctx, revisions, client.InNamespace(framework.OperatorNamespace),
				client.MatchingLabels{appsv1beta1.SidecarSetNameLabel: keepSet})).To(gomega.Succeed())
			g.Expect(revisions.Items).NotTo(gomega.BeEmpty())
		}).WithContext(ctx).Should(gomega.Succeed())
		gomega.Expect(createPod(ctx, "before-undeploy")).To(gomega.HaveField("Spec.Containers", gomega.ContainElement(gomega.HaveField("Name", sidecarName))))

		ginkgo.By("running make undeploy against the cluster, then stopping the manager as the Deployment's deletion does")
		started := time.Now()
		makeTarget(ctx, "undeploy")
		gomega.Expect(env.Manager.Stop(15 * time.Second)).To(gomega.Succeed())
		ginkgo.AddReportEntry("make undeploy", time.Since(started).String(), ginkgo.ReportEntryVisibilityAlways)

		ginkgo.By("seeing the operator gone: its webhook configurations first, then the rest")
		for _, o := range []client.Object{
			&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: mutatingConfiguration}},
			&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: validatingConfiguration}},
			&admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "sidecarset-operator-authoring"}},
			&admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "sidecarset-operator-authoring"}},
			&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "sidecarset-operator-manager"}},
			&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "sidecarset-operator-manager"}},
			&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "sidecarset-operator", Namespace: framework.OperatorNamespace}},
			&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "sidecarset-operator-webhook", Namespace: framework.OperatorNamespace}},
			&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "sidecarset-operator", Namespace: framework.OperatorNamespace}},
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "sidecarset-operator", Namespace: framework.OperatorNamespace}},
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sidecarset-operator-webhook-cert", Namespace: framework.OperatorNamespace}},
		} {
			gomega.Eventually(func() error { return env.Client.Get(ctx, client.ObjectKeyFromObject(o), o) }).WithContext(ctx).
				Should(gomega.Satisfy(apierrors.IsNotFound), "%T %s", o, o.GetName())
		}

		ginkgo.By("seeing the CRD, both SidecarSets, the namespace, the revisions and the whitelist kept")
		gomega.Expect(env.Client.Get(ctx, types.NamespacedName{Name: "sidecarsets.apps.kruise.io"}, &apiextensionsv1.CustomResourceDefinition{})).To(gomega.Succeed())
		for _, name := range []string{keepSet, doomedSet} {
			s := &appsv1beta1.SidecarSet{}
			gomega.Expect(env.Client.Get(ctx, types.NamespacedName{Name: name}, s)).To(gomega.Succeed())
			gomega.Expect(s.DeletionTimestamp).To(gomega.BeNil())
		}
		ns := &corev1.Namespace{}
		gomega.Expect(env.Client.Get(ctx, types.NamespacedName{Name: framework.OperatorNamespace}, ns)).To(gomega.Succeed())
		gomega.Expect(ns.Status.Phase).To(gomega.Equal(corev1.NamespaceActive))
		for _, r := range revisions.Items {
			gomega.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(&r), &appsv1.ControllerRevision{})).To(gomega.Succeed(), "revision %s", r.Name)
		}
		gomega.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(whitelist), &corev1.ConfigMap{})).To(gomega.Succeed())

		ginkgo.By("creating a selected pod and deleting a SidecarSet with no manager: neither is refused")
		gomega.Expect(createPod(ctx, "after-undeploy")).NotTo(gomega.HaveField("Spec.Containers", gomega.ContainElement(gomega.HaveField("Name", sidecarName))))
		gomega.Expect(env.Client.Delete(ctx, doomed)).To(gomega.Succeed())
		gomega.Eventually(func() error { return env.Client.Get(ctx, client.ObjectKeyFromObject(doomed), doomed) }).WithContext(ctx).
			Should(gomega.Satisfy(apierrors.IsNotFound))
	}, ginkgo.SpecTimeout(5*time.Minute))

	ginkgo.It("the old first step of the takeover, OpenKruise's manager stopped with its webhooks left, refuses pods", func(ctx ginkgo.SpecContext) {
		ginkgo.By("registering OpenKruise's webhook configurations, answered by its manager")
		createKruiseWebhooks(ctx, kruise)
		load := startPodLoad(ctx, appNamespace, "scaled")
		time.Sleep(settle)
		ginkgo.By("scaling OpenKruise's manager to 0, as the takeover's first step said, and creating pods")
		stopped := time.Now()
		gomega.Expect(kruise.stop()).To(gomega.Succeed())
		time.Sleep(settle)
		cs := load.stop()
		report("OpenKruise's manager stopped first (whole load)", cs, time.Since(load.start))
		s := report("OpenKruise's manager stopped first (after it stopped)", sentAfter(cs, stopped), time.Since(stopped))
		gomega.Expect(s.refused).To(gomega.BeNumerically(">", 0), "no pod was refused: mpod.kb.io (Fail) was not in the path")
		gomega.Expect(kruise.start()).To(gomega.Succeed())
		deleteKruiseWebhooks(ctx)
	}, ginkgo.SpecTimeout(3*time.Minute))

	ginkgo.It("takes over from OpenKruise 1.9 with its webhook configurations present and refuses no pod", func(ctx ginkgo.SpecContext) {
		ginkgo.By("OpenKruise running: its manager answers its webhook configurations")
		createKruiseWebhooks(ctx, kruise)
		load := startPodLoad(ctx, appNamespace, "takeover")
		time.Sleep(settle)
		started := time.Now()

		ginkgo.By("step 1: installing the operator beside OpenKruise and waiting until it is ready")
		gomega.Expect(env.InstallHostManager(ctx, options)).To(gomega.Succeed())
		owned := expectInjecting(ctx, "takeover-probe")

		ginkgo.By("step 2: removing OpenKruise's pod and SidecarSet entries while its manager still answers them")
		withoutKruiseEntries(ctx, kruiseSidecarSetEntries)

		ginkgo.By("step 3 (OpenKruise not kept): deleting its webhook configurations, then stopping its manager once the API server no longer calls it")
		deleteKruiseWebhooks(ctx)
		expectNotSentTo(ctx, kruise, "/mutate-pod", "takeover-unsent")
		gomega.Expect(kruise.stop()).To(gomega.Succeed())
		time.Sleep(settle)
		cs := load.stop()
		s := report("takeover", cs, time.Since(started))
		gomega.Expect(s.refused).To(gomega.BeZero(), "first refusal: %s", s.firstRefusal)
		gomega.Expect(kruise.answered("/mutate-pod")).To(gomega.BeNumerically(">", 0), "OpenKruise's pod webhook was never called: %s", kruise)
		expectSidecarsAfter(cs, owned)
		gomega.Expect(kruise.start()).To(gomega.Succeed())
	}, ginkgo.SpecTimeout(5*time.Minute))

	ginkgo.It("moves back to OpenKruise, refusing no pod and keeping every SidecarSet", func(ctx ginkgo.SpecContext) {
		before := &appsv1beta1.SidecarSetList{}
		gomega.Expect(env.Client.List(ctx, before)).To(gomega.Succeed())
		gomega.Expect(before.Items).NotTo(gomega.BeEmpty())
		load := startPodLoad(ctx, appNamespace, "back")
		time.Sleep(settle)
		started := time.Now()

		ginkgo.By("step 1: installing OpenKruise's webhook configurations with its manager running")
		answered := kruise.answered("/mutate-pod")
		createKruiseWebhooks(ctx, kruise)
		gomega.Eventually(func() int { return kruise.answered("/mutate-pod") }).WithContext(ctx).Should(gomega.BeNumerically(">", answered))

		ginkgo.By("step 2: make undeploy (the operator's webhook configurations first), then the manager stops")
		makeTarget(ctx, "undeploy")
		gomega.Expect(env.Manager.Stop(15 * time.Second)).To(gomega.Succeed())
		time.Sleep(settle)
		s := report("moving back", load.stop(), time.Since(started))
		gomega.Expect(s.refused).To(gomega.BeZero(), "first refusal: %s", s.firstRefusal)

		ginkgo.By("seeing every SidecarSet as it was")
		after := &appsv1beta1.SidecarSetList{}
		gomega.Expect(env.Client.List(ctx, after)).To(gomega.Succeed())
		gomega.Expect(after.Items).To(gomega.HaveLen(len(before.Items)))
		for i := range before.Items {
			gomega.Expect(after.Items[i].UID).To(gomega.Equal(before.Items[i].UID))
			gomega.Expect(after.Items[i].Spec).To(gomega.Equal(before.Items[i].Spec))
		}
	}, ginkgo.SpecTimeout(5*time.Minute))

	ginkgo.It("make purge needs CONFIRM=yes, then deletes every SidecarSet and the CRD and keeps the namespace", func(ctx ginkgo.SpecContext) {
		deleteKruiseWebhooks(ctx)
		out, err := runMake(ctx, "purge")
		gomega.Expect(err).To(gomega.HaveOccurred(), "make purge ran without CONFIRM=yes:\n%s", out)
		gomega.Expect(env.Client.Get(ctx, types.NamespacedName{Name: "sidecarsets.apps.kruise.io"}, &apiextensionsv1.CustomResourceDefinition{})).To(gomega.Succeed())

		makeTarget(ctx, "purge", "CONFIRM=yes")
		gomega.Eventually(func() error {
			return env.Client.Get(ctx, types.NamespacedName{Name: "sidecarsets.apps.kruise.io"}, &apiextensionsv1.CustomResourceDefinition{})
		}).WithContext(ctx).Should(gomega.Satisfy(apierrors.IsNotFound))
		ns := &corev1.Namespace{}
		gomega.Expect(env.Client.Get(ctx, types.NamespacedName{Name: framework.OperatorNamespace}, ns)).To(gomega.Succeed())
		gomega.Expect(ns.DeletionTimestamp).To(gomega.BeNil())
	}, ginkgo.SpecTimeout(3*time.Minute))
})

// runMake runs a target of the repository's Makefile against the suite's
// cluster, as a user with that kubeconfig does, with the cluster's kubectl
// (bin/k8s, already built: DEPLOY_KUBECTL_DEP empty builds nothing).
func runMake(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "make", append([]string{"--no-print-directory", "-C", env.RepoRoot,
		"DEPLOY_KUBECTL=" + env.Cluster.Kubectl(), "DEPLOY_KUBECTL_DEP="}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.Cluster.KubeconfigPath())
	return cmd.CombinedOutput()
}

// makeTarget runs a target that must succeed.
func makeTarget(ctx context.Context, args ...string) {
	out, err := runMake(ctx, args...)
	ginkgo.GinkgoWriter.Printf("make %v:\n%s\n", args, out)
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred(), "make %v:\n%s", args, out)
}

// createPod creates one pod selected by keepSet and returns it as admitted.
func createPod(ctx context.Context, name string) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: appNamespace, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"lifecycle.sidecarset-operator.dev/nowhere": "true"},
			Containers:   []corev1.Container{{Name: "main", Image: "nginx:1.25"}},
		},
	}
	gomega.ExpectWithOffset(1, env.Client.Create(ctx, pod)).To(gomega.Succeed())
	return pod
}

// expectInjecting waits until the operator injects new pods (its manager
// has made its webhooks' scope live) and returns when the first injected
// probe was sent.
func expectInjecting(ctx context.Context, prefix string) time.Time {
	var sent time.Time
	i := 0
	gomega.EventuallyWithOffset(1, func(g gomega.Gomega) {
		i++
		sent = time.Now()
		pod := createPod(ctx, fmt.Sprintf("%s-%03d", prefix, i))
		g.Expect(pod.Spec.Containers).To(gomega.ContainElement(gomega.HaveField("Name", sidecarName)))
	}).WithContext(ctx).Should(gomega.Succeed())
	return sent
}

// expectNotSentTo waits until the API server admits a new pod without
// sending it to the stand-in's path. The API server applies a webhook
// configuration's change asynchronously (its own informer): a manager stopped
// the moment its entries are removed can still be called for a pod created
// in that window, and refuse it (failurePolicy Fail). docs/migration.md's
// step 3 says to check this before stopping OpenKruise's manager.
func expectNotSentTo(ctx context.Context, m *kruiseManager, path, prefix string) {
	i := 0
	gomega.EventuallyWithOffset(1, func() bool {
		i++
		name := fmt.Sprintf("%s-%03d", prefix, i)
		createPod(ctx, name)
		return m.reviewed(path, name)
	}).WithContext(ctx).Should(gomega.BeFalse(), "the API server still sends new pods to %s", path)
}

// sentAfter keeps the creations sent after a moment.
func sentAfter(cs []creation, t time.Time) []creation {
	var out []creation
	for _, c := range cs {
		if c.sent.After(t) {
			out = append(out, c)
		}
	}
	return out
}

// expectSidecarsAfter checks that every pod whose creation was sent after
// the operator owned injection has the sidecar.
func expectSidecarsAfter(cs []creation, owned time.Time) {
	n := 0
	for _, c := range cs {
		if c.err == nil && c.sent.After(owned) {
			n++
			gomega.ExpectWithOffset(1, c.sidecar).To(gomega.BeTrue(), "pod %s, created %s after the operator owned injection, has no sidecar", c.name, c.sent.Sub(owned))
		}
	}
	gomega.ExpectWithOffset(1, n).To(gomega.BeNumerically(">", 0), "no pod was created after the operator owned injection")
}

// expectObserved waits until the manager has seen the SidecarSet's
// generation.
func expectObserved(ctx context.Context, name string) {
	gomega.EventuallyWithOffset(1, func(g gomega.Gomega) {
		s := &appsv1beta1.SidecarSet{}
		g.Expect(env.Client.Get(ctx, types.NamespacedName{Name: name}, s)).To(gomega.Succeed())
		g.Expect(s.Status.ObservedGeneration).To(gomega.Equal(s.Generation))
	}).WithContext(ctx).Should(gomega.Succeed())
}
