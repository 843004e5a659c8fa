package e2e_test

import (
	"context"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/sidecarset-operator/sidecarset-operator/api/v1alpha1"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/e2e/framework"
	"github.com/sidecarset-operator/sidecarset-operator/test/fixtures"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/names"
)

// kruiseConversionURL is where OpenKruise 1.9's manager served the CRD's
// conversion webhook when it wrote the fixtures (test/fixtures/kruise-v1.9,
// crd-sidecarsets.yaml); nothing listens there any more.
const kruiseConversionURL = "https://127.0.0.1:19876/convert"

// Taking over a cluster that OpenKruise 1.8 ran and that was then upgraded
// to OpenKruise 1.9, as the API server holds it: the CRD stores v1beta1,
// lists [v1alpha1, v1beta1] in status.storedVersions and converts through
// OpenKruise's webhook (gone now); etcd holds the SidecarSets 1.8 wrote as
// v1alpha1 (spec.namespace, the custom-version label) next to those 1.9
// wrote as v1beta1 (test/fixtures); ControllerRevisions of both, owned
// through the version each wrote; pods injected by both. Then the operator
// is installed (its CRD and webhooks) and started.
var _ = ginkgo.Describe("Taking over from OpenKruise 1.9", ginkgo.Label("takeover", "kruise19"), func() {
	ginkgo.It("should serve every SidecarSet through both versions, upgrade Kruise's pods in place, reuse its revisions and let them be collected", func(ctx ginkgo.SpecContext) {
		t := ginkgo.GinkgoT()
		fx18 := loadKruiseFixtures()
		fx19 := loadFixtures(fixtures.Kruise19, "sidecarsets-injected-v1beta1.yaml", "sidecarsets-upgraded-v1beta1.yaml")
		ours := liveCRD(ctx)

		ginkgo.By("stopping the operator, removing its webhooks and its CRD (with every SidecarSet)")
		gomega.Expect(env.Manager.Kill()).To(gomega.Succeed())
		restore := withoutWebhooks(ctx)
		installed := false
		ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
			if !installed {
				installOperator(ctx, restore)
			}
		})
		ginkgo.DeferCleanup(deleteKruiseObjects)
		gomega.Expect(env.Client.Delete(ctx, ours.DeepCopy())).To(gomega.Succeed())
		gomega.Eventually(func() bool {
			return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(ours), &apiextensionsv1.CustomResourceDefinition{}))
		}).WithContext(ctx).Should(gomega.BeTrue())

		ginkgo.By("installing OpenKruise 1.8's CRD (v1alpha1 only, stored) and what 1.8 wrote: SidecarSets, revisions owned through v1alpha1, injected pods")
		createCRD(ctx, kruise18CRD(ours))
		for _, ns := range []*corev1.Namespace{
			{ObjectMeta: metav1.ObjectMeta{Name: "fx"}},
			{ObjectMeta: metav1.ObjectMeta{Name: "fx19", Labels: map[string]string{"fx19-inject": "true"}}},
		} {
			gomega.Expect(client.IgnoreAlreadyExists(env.Client.Create(ctx, ns))).To(gomega.Succeed())
		}
		uids := map[string]types.UID{}
		for _, s := range fixtures.MustList[appsv1alpha1.SidecarSet](t, fixtures.Kruise18, "sidecarsets-injected.yaml") {
			uids[s.Name] = createStoredV1alpha1(ctx, asKruise18Stored(s))
		}
		createRevisions(ctx, ownedThrough(fx18.revisions, appsv1alpha1.GroupVersion.String()), uids)
		for i := range fx18.pods {
			gomega.Expect(env.Client.Create(ctx, asCreated(&fx18.pods[i]))).To(gomega.Succeed())
		}

		ginkgo.By("upgrading to OpenKruise 1.9's CRD (v1beta1 stored, its conversion webhook) and what 1.9 wrote through v1beta1")
		gomega.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			live := liveCRD(ctx)
			live.Spec = kruise19CRD(ours).Spec
			return env.Client.Update(ctx, live)
		})).To(gomega.Succeed())
		stored19 := fixtures.MustList[appsv1beta1.SidecarSet](t, fixtures.Kruise19, "sidecarsets-injected-v1beta1.yaml")
		gomega.Eventually(func(g gomega.Gomega) {
			g.Expect(liveCRD(ctx).Status.StoredVersions).To(gomega.Equal([]string{"v1alpha1", "v1beta1"}))
			// The API server serves the new version a moment after the
			// update: a create before then is a 404. (A dry run, in the
			// stored version: nothing to convert, and nothing listens at
			// OpenKruise's conversion URL.)
			probe := stored19[0].DeepCopy()
			clearServerFields(&probe.ObjectMeta)
			g.Expect(env.Client.Create(ctx, probe, client.DryRunAll)).To(gomega.Succeed())
		}).WithContext(ctx).Should(gomega.Succeed())
		for _, s := range stored19 {
			uids[s.Name] = createAsStored(ctx, s)
		}
		createRevisions(ctx, fx19.revisions, uids)
		for i := range fx19.pods {
			gomega.Expect(env.Client.Create(ctx, asCreated(&fx19.pods[i]))).To(gomega.Succeed())
		}
		before := append(expectRunning(ctx, "fx", len(fx18.pods)), expectRunning(ctx, "fx19", len(fx19.pods))...)

		ginkgo.By("installing and starting the operator: its CRD keeps every stored object and points the conversion at the operator")
		installOperator(ctx, restore)
		installed = true
		expectConversionAtOperator(ctx)
		gomega.Expect(liveCRD(ctx).Status.StoredVersions).To(gomega.Equal([]string{"v1alpha1", "v1beta1"}))
		var names []string
		for _, s := range append(slices.Clone(fx18.sets), fx19.sets...) {
			names = append(names, "sidecarset.apps.kruise.io/"+s.Name)
		}
		for _, resource := range []string{"sidecarsets.v1alpha1.apps.kruise.io", "sidecarsets.v1beta1.apps.kruise.io"} {
			out := kubectl(ctx, "get", resource, "-o", "name")
			gomega.Expect(strings.Fields(out)).To(gomega.ContainElements(names), resource)
		}
		versioned := getSidecarSet(ctx, gomega.Default, "fx-versioned")
		gomega.Expect(versioned.Spec.NamespaceSelector).To(gomega.Equal(appsv1beta1.SelectNamespace("fx")), "1.8's spec.namespace, read as v1beta1")
		gomega.Expect(versioned.Spec.CustomVersion).To(gomega.Equal("version-1"), "1.8's custom-version label, read as v1beta1")

		ginkgo.By("counting Kruise's pods and keeping its revisions")
		for _, s := range append(slices.Clone(fx18.sets), fx19.sets...) {
			want := counts{Matched: s.Status.MatchedPods, Updated: s.Status.MatchedPods, Ready: s.Status.MatchedPods, UpdatedReady: s.Status.MatchedPods}
			gomega.Eventually(func(g gomega.Gomega) {
				got := getSidecarSet(ctx, g, s.Name)
				g.Expect(got.Status.ObservedGeneration).To(gomega.Equal(got.Generation))
				g.Expect(countsOf(got)).To(gomega.Equal(want), s.Name)
				g.Expect(got.Status.LatestRevision).To(gomega.Equal(s.Status.LatestRevision), s.Name)
			}).WithContext(ctx).Should(gomega.Succeed())
			expectRevisions(ctx, s.Name, uids[s.Name], revisionNumbers(append(slices.Clone(fx18.revisions), fx19.revisions...), s.Name))
		}
		gomega.Consistently(func(g gomega.Gomega) {
			for _, p := range before {
				g.Expect(getPod(ctx, g, &p).Spec.Containers).To(gomega.Equal(p.Spec.Containers), "pod %s was changed by the takeover", p.Name)
			}
		}).WithContext(ctx).Should(gomega.Succeed())

		ginkgo.By("changing images as OpenKruise did: fx19-customversion through v1beta1 (customVersion version-b), fx19-namespace through v1alpha1, fx-basic (stored by 1.8)")
		updateSidecarSet(ctx, "fx19-customversion", func(s *appsv1beta1.SidecarSet) {
			s.Spec.CustomVersion = "version-b"
			sidecarContainer(s, "versioned").Image = "versioned:v2"
		})
		gomega.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			s := &appsv1alpha1.SidecarSet{}
			if err := env.Client.Get(ctx, types.NamespacedName{Name: "fx19-namespace"}, s); err != nil {
				return err
			}
			s.Spec.Containers[0].Image = "centos:7"
			return env.Client.Update(ctx, s)
		})).To(gomega.Succeed())
		setImage(ctx, "fx-basic", "sidecar1", "centos:7")

		ginkgo.By("seeing each pod upgraded in place as OpenKruise upgraded its own, and the revision history continue OpenKruise's")
		for _, c := range []struct {
			fx        *kruiseFixtures
			ns, pod   string
			set, name string
		}{{fx19, "fx19", "customversion", "fx19-customversion", "versioned"}, {fx19, "fx19", "namespace", "fx19-namespace", "sidecar1"}, {fx18, "fx", "basic", "fx-basic", "sidecar1"}} {
			want := c.fx.upgradedPod(c.pod)
			old := podNamed(before, c.pod)
			gomega.Eventually(func(g gomega.Gomega) {
				p := getPod(ctx, g, old)
				g.Expect(p.UID).To(gomega.Equal(old.UID), "pod %s was recreated", p.Name)
				g.Expect(containerStatus(p, c.name).Image).To(gomega.Equal(qualified(specContainer(want, c.name).Image)))
				g.Expect(containerStatus(p, c.name).RestartCount).To(gomega.Equal(int32(1)))
				g.Expect(podReady(p)).To(gomega.BeTrue())
			}, rolloutTimeout).WithContext(ctx).Should(gomega.Succeed())
			expectSameRecord(getPod(ctx, gomega.Default, old), want, c.set)

			upgraded := c.fx.upgradedSet(c.set)
			gomega.Eventually(func(g gomega.Gomega) {
				g.Expect(getSidecarSet(ctx, g, c.set).Status.LatestRevision).To(gomega.Equal(upgraded.Status.LatestRevision))
			}).WithContext(ctx).Should(gomega.Succeed())
			got := expectRevisions(ctx, c.set, uids[c.set], revisionNumbers(c.fx.upgradedRevisions, c.set))
			for _, r := range c.fx.upgradedRevisions {
				if i := slices.IndexFunc(got, func(g appsv1.ControllerRevision) bool { return g.Name == r.Name }); i >= 0 {
					gomega.Expect(string(got[i].Data.Raw)).To(gomega.Equal(string(r.Data.Raw)), "revision %s", r.Name)
					gomega.Expect(got[i].Labels[appsv1beta1.SidecarSetCustomVersionLabel]).To(gomega.Equal(r.Labels[appsv1beta1.SidecarSetCustomVersionLabel]), "revision %s", r.Name)
				}
			}
		}

		ginkgo.By("deleting SidecarSets: the garbage collector resolves their revisions' owners, through v1beta1 (1.9's) and v1alpha1 (1.8's), and deletes them")
		for _, name := range []string{"fx19-nsselector", "fx-second"} {
			gomega.Expect(env.Client.Delete(ctx, &appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(gomega.Succeed())
			gomega.Eventually(func(g gomega.Gomega) {
				list := &appsv1.ControllerRevisionList{}
				g.Expect(env.Client.List(ctx, list, client.InNamespace(framework.OperatorNamespace),
					client.MatchingLabels{appsv1beta1.SidecarSetNameLabel: name})).To(gomega.Succeed())
				g.Expect(list.Items).To(gomega.BeEmpty(), "the revisions of %s", name)
			}, rolloutTimeout).WithContext(ctx).Should(gomega.Succeed())
		}
	}, ginkgo.SpecTimeout(2*managerReadyTimeout+4*rolloutTimeout))
})

// The conversion webhook: served by the operator, reached through the CRD
// that the operator keeps pointing at it. While the operator is stopped,
// what needs no conversion keeps working; everything recovers when it is
// back.
var _ = ginkgo.Describe("The v1beta1 API and its conversion", ginkgo.Label("conversion"), func() {
	ginkgo.It("should inject and upgrade a SidecarSet written as OpenKruise's current docs write it, through both versions", func(ctx ginkgo.SpecContext) {
		ns := createNamespace(ctx, "v1beta1")
		expectConversionAtOperator(ctx)
		manifest := `apiVersion: apps.kruise.io/v1beta1
kind: SidecarSet
metadata:
  name: ` + ns + `
spec:
  customVersion: version-1
  namespaceSelector:
    matchLabels:
      kubernetes.io/metadata.name: ` + ns + `
  selector:
    matchLabels:
      app: web
  updateStrategy:
    type: RollingUpdate
    maxUnavailable: 2
  containers:
  - name: log-agent
    image: busybox:1.0
    command: ["sleep", "999d"]
`
		applyManifest(ctx, manifest)
		ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
			gomega.Expect(client.IgnoreNotFound(env.Client.Delete(ctx, &appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: ns}}))).To(gomega.Succeed())
		})
		expectObserved(ctx, ns)
		pods := runDeployment(ctx, app(ns, "web", 3).Obj(), ns)
		gomega.Expect(pods).To(gomega.HaveLen(3))

		ginkgo.By("reading it through v1alpha1: the custom version is the label, the namespace a selector")
		alpha := &appsv1alpha1.SidecarSet{}
		gomega.Expect(env.Client.Get(ctx, types.NamespacedName{Name: ns}, alpha)).To(gomega.Succeed())
		gomega.Expect(alpha.Labels).To(gomega.HaveKeyWithValue(appsv1alpha1.SidecarSetCustomVersionLabel, "version-1"))
		gomega.Expect(alpha.Spec.Namespace).To(gomega.BeEmpty())
		gomega.Expect(alpha.Spec.NamespaceSelector).To(gomega.Equal(appsv1beta1.SelectNamespace(ns)))
		out := kubectl(ctx, "describe", "sidecarsets.v1alpha1.apps.kruise.io", ns)
		gomega.Expect(out).To(gomega.MatchRegexp(`Collision Count:\s+0\n`), "kubectl describe shows the collision count, as in the manual")

		ginkgo.By("upgrading it through v1beta1, in place")
		generation := setImage(ctx, ns, "log-agent", "busybox:2.0")
		upgraded := expectRolledOut(ctx, ns, appLabels, "log-agent", "busybox:2.0", rolloutTimeout)
		for _, p := range upgraded {
			gomega.Expect(slices.ContainsFunc(pods, func(o corev1.Pod) bool { return o.UID == p.UID })).To(gomega.BeTrue(), "pod %s was recreated", p.Name)
		}
		expectStatus(ctx, ns, generation, counts{Matched: 3, Updated: 3, Ready: 3, UpdatedReady: 3})
		rev := getSidecarSet(ctx, gomega.Default, ns).Status.LatestRevision
		got := &appsv1.ControllerRevision{}
		gomega.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: framework.OperatorNamespace, Name: rev}, got)).To(gomega.Succeed())
		gomega.Expect(got.Labels).To(gomega.HaveKeyWithValue(appsv1beta1.SidecarSetCustomVersionLabel, "version-1"))
		gomega.Expect(metav1.GetControllerOf(got).APIVersion).To(gomega.Equal("apps.kruise.io/v1beta1"))
	})

	ginkgo.It("should keep v1beta1 reads working while the operator is stopped, refuse v1alpha1 with a clear error, and recover when it restarts", func(ctx ginkgo.SpecContext) {
		ns := createNamespace(ctx, "conversion")
		createSidecarSet(ctx, sidecarSet(ns, "agent", "busybox:1.0").Obj())
		expectConversionAtOperator(ctx)

		ginkgo.By("stopping the operator")
		gomega.Expect(env.Manager.Kill()).To(gomega.Succeed())
		running := false
		ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
			if !running {
				gomega.Expect(env.StartManager(ctx)).To(gomega.Succeed())
			}
		})
		out := kubectl(ctx, "get", "sidecarsets.v1beta1.apps.kruise.io", ns, "-o", "name")
		gomega.Expect(out).To(gomega.Equal("sidecarset.apps.kruise.io/" + ns + "\n"))
		_, err := env.Cluster.RunKubectl(ctx, "get", "sidecarsets.v1alpha1.apps.kruise.io", ns)
		gomega.Expect(err).To(gomega.HaveOccurred())
		gomega.Expect(err.Error()).To(gomega.ContainSubstring(`conversion webhook for apps.kruise.io/v1beta1, Kind=SidecarSet failed`))
		gomega.Expect(err.Error()).To(gomega.ContainSubstring(`https://localhost:19443/convert`))
		_, err = env.Cluster.RunKubectl(ctx, "label", "sidecarsets.v1alpha1.apps.kruise.io", ns, "team=web")
		gomega.Expect(err).To(gomega.HaveOccurred())
		gomega.Expect(err.Error()).To(gomega.ContainSubstring("localhost:19443"), "the error names the operator's webhook it could not reach")

		ginkgo.By("restarting the operator")
		gomega.Expect(env.StartManager(ctx)).To(gomega.Succeed())
		running = true
		gomega.Eventually(func() error {
			_, err := env.Cluster.RunKubectl(ctx, "label", "sidecarsets.v1alpha1.apps.kruise.io", ns, "team=web")
			return err
		}).WithContext(ctx).Should(gomega.Succeed())
		alpha := &appsv1alpha1.SidecarSet{}
		gomega.Expect(env.Client.Get(ctx, types.NamespacedName{Name: ns}, alpha)).To(gomega.Succeed())
		gomega.Expect(alpha.Labels).To(gomega.HaveKeyWithValue("team", "web"))
	}, ginkgo.SpecTimeout(2*managerReadyTimeout+waitTimeout))
})

// liveCRD reads the SidecarSet CRD.
func liveCRD(ctx context.Context) *apiextensionsv1.CustomResourceDefinition {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	gomega.ExpectWithOffset(1, env.Client.Get(ctx, types.NamespacedName{Name: names.SidecarSetCRDName}, crd)).To(gomega.Succeed())
	return crd
}

// expectConversionAtOperator waits until the CRD converts through the
// operator: its webhook's URL with /convert, and the CA bundle of its
// SidecarSet webhook.
func expectConversionAtOperator(ctx context.Context) {
	gomega.EventuallyWithOffset(1, func(g gomega.Gomega) {
		config := &admissionregistrationv1.MutatingWebhookConfiguration{}
		g.Expect(env.Client.Get(ctx, types.NamespacedName{Name: "sidecarset-operator-local-mutating"}, config)).To(gomega.Succeed())
		i := slices.IndexFunc(config.Webhooks, func(w admissionregistrationv1.MutatingWebhook) bool { return w.Name == names.SidecarSetWebhookName })
		g.Expect(i).To(gomega.BeNumerically(">=", 0))
		conv := liveCRD(ctx).Spec.Conversion
		g.Expect(conv.Strategy).To(gomega.Equal(apiextensionsv1.WebhookConverter))
		g.Expect(conv.Webhook.ClientConfig.URL).To(gomega.Equal(new("https://localhost:19443/convert")))
		g.Expect(conv.Webhook.ClientConfig.CABundle).To(gomega.Equal(config.Webhooks[i].ClientConfig.CABundle))
	}).WithContext(ctx).Should(gomega.Succeed())
}

// kruise18CRD is the CRD as OpenKruise 1.8 installs it (the operator's
// schemas): v1alpha1 only, stored, no conversion.
func kruise18CRD(ours *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
	crd := newCRD(ours)
	crd.Spec.Conversion = nil
	crd.Spec.Versions = slices.DeleteFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Name != "v1alpha1" })
	crd.Spec.Versions[0].Storage = true
	return crd
}

// kruise19CRD is the CRD as OpenKruise 1.9 left it (fixture
// crd-sidecarsets.yaml, with the operator's schemas, which the fixture
// leaves out): both versions served, v1beta1 stored, converted through
// OpenKruise's webhook.
func kruise19CRD(ours *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
	crd := newCRD(ours)
	for i := range crd.Spec.Versions {
		crd.Spec.Versions[i].Served, crd.Spec.Versions[i].Storage = true, crd.Spec.Versions[i].Name == "v1beta1"
	}
	crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{
			ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: new(kruiseConversionURL)},
			ConversionReviewVersions: []string{"v1", "v1beta1"},
		}}
	return crd
}

// newCRD is a copy of a CRD that can be created.
func newCRD(from *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: from.Name}, Spec: *from.Spec.DeepCopy()}
	crd.Labels = maps.Clone(from.Labels)
	return crd
}

// createCRD creates a CRD and waits until it is established.
func createCRD(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) {
	gomega.ExpectWithOffset(1, env.Client.Create(ctx, crd)).To(gomega.Succeed())
	gomega.EventuallyWithOffset(1, func(g gomega.Gomega) {
		live := liveCRD(ctx)
		established := slices.ContainsFunc(live.Status.Conditions, func(c apiextensionsv1.CustomResourceDefinitionCondition) bool {
			return c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue
		})
		g.Expect(established).To(gomega.BeTrue())
	}).WithContext(ctx).Should(gomega.Succeed())
}

// installOperator installs the operator as the suite did (its CRD,
// webhooks and RBAC: config/e2e), brings back its webhook configurations
// and starts it.
func installOperator(ctx context.Context, restore func(context.Context)) {
	_, err := env.Cluster.RunKubectl(ctx, "apply", "--server-side", "--force-conflicts", "-k", filepath.Join(env.RepoRoot, "config", "e2e"))
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred())
	restore(ctx)
	gomega.ExpectWithOffset(1, env.StartManager(ctx)).To(gomega.Succeed())
}

// asKruise18Stored is a SidecarSet of the 1.8 fixtures as OpenKruise 1.8
// stored it, in v1alpha1: the fixtures were read back from a 1.9 build, which
// shows spec.namespace as the namespaceSelector it converts to; 1.8 kept
// spec.namespace (fx-versioned's manifest, input-sidecarsets.yaml, has
// namespace: fx).
func asKruise18Stored(s appsv1alpha1.SidecarSet) appsv1alpha1.SidecarSet {
	if sel := s.Spec.NamespaceSelector; sel != nil && len(sel.MatchLabels) == 1 && sel.MatchLabels[appsv1beta1.NamespaceNameLabel] != "" {
		s.Spec.Namespace, s.Spec.NamespaceSelector = sel.MatchLabels[appsv1beta1.NamespaceNameLabel], nil
	}
	return s
}

// createStoredV1alpha1 creates a v1alpha1 SidecarSet with its status, as
// OpenKruise 1.8 stored it, and returns its UID.
func createStoredV1alpha1(ctx context.Context, stored appsv1alpha1.SidecarSet) types.UID {
	s := stored.DeepCopy()
	clearServerFields(&s.ObjectMeta)
	status := s.Status
	gomega.ExpectWithOffset(1, env.Client.Create(ctx, s)).To(gomega.Succeed(), s.Name)
	s.Status = status
	gomega.ExpectWithOffset(1, env.Client.Status().Update(ctx, s)).To(gomega.Succeed(), s.Name)
	return s.UID
}

// ownedThrough is a copy of revisions whose SidecarSet owner references
// name the given API version (1.8 wrote v1alpha1).
func ownedThrough(revisions []appsv1.ControllerRevision, apiVersion string) []appsv1.ControllerRevision {
	out := make([]appsv1.ControllerRevision, len(revisions))
	for i := range revisions {
		revisions[i].DeepCopyInto(&out[i])
		for j := range out[i].OwnerReferences {
			out[i].OwnerReferences[j].APIVersion = apiVersion
		}
	}
	return out
}

// revisionNumbers are a SidecarSet's revisions among revisions, by name.
func revisionNumbers(revisions []appsv1.ControllerRevision, set string) map[string]int64 {
	out := map[string]int64{}
	for _, r := range revisions {
		if r.Labels[appsv1beta1.SidecarSetNameLabel] == set {
			out[r.Name] = r.Revision
		}
	}
	return out
}

// applyManifest applies a manifest with kubectl, as a user does.
func applyManifest(ctx context.Context, manifest string) {
	_, err := env.Cluster.RunKubectlStdin(ctx, []byte(manifest), "apply", "-f", "-")
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred())
}
