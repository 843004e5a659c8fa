package webhook_test

import (
	"context"
	"net/http"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/sidecarset-operator/sidecarset-operator/api/v1alpha1"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/cmd/manager/app"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
	"github.com/sidecarset-operator/sidecarset-operator/test/integration/framework"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/crdconversion"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/crdwatch"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/names"
)

var _ = ginkgo.Describe("Both API versions", func() {
	var ns string
	ginkgo.BeforeEach(func(ctx ginkgo.SpecContext) {
		ns = newNamespace(ctx, nil)
	})

	ginkgo.It("should default, hash and validate a v1alpha1 write as a v1beta1 one, warning when namespace overrides a namespaceSelector", func(ctx ginkgo.SpecContext) {
		hub := sidecarSet(ns, "beta").Containers(builder.MakeContainer("agent", "agent:1")).Obj()
		created, warnings := createSidecarSet(ctx, hub)
		gomega.Expect(warnings).To(gomega.BeEmpty())

		alpha := &appsv1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: ns + "-alpha"}}
		alpha.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{specLabel: ns + "-other"}}
		alpha.Spec.Namespace = ns
		alpha.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
		alpha.Spec.Containers = []appsv1beta1.SidecarContainer{{Container: builder.MakeContainer("agent", "agent:1").Obj()}}
		wctx, collected := framework.WithWarnings(ctx)
		gomega.Expect(k8s.Create(wctx, alpha)).To(gomega.Succeed())
		deleteSidecarSetAtEnd(&appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: alpha.Name}})
		gomega.Expect(collected.List()).To(gomega.ContainElement(gomega.ContainSubstring(
			`spec.namespaceSelector is dropped: spec.namespace "` + ns + `" wins`)))

		stored := &appsv1beta1.SidecarSet{}
		gomega.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(alpha), stored)).To(gomega.Succeed())
		gomega.Expect(stored.Spec.NamespaceSelector).To(gomega.Equal(appsv1beta1.SelectNamespace(ns)))
		gomega.Expect(stored.Spec.UpdateStrategy.Type).To(gomega.Equal(appsv1beta1.RollingUpdateSidecarSetStrategyType), "defaulted")
		gomega.Expect(stored.Annotations[appsv1beta1.SidecarSetHashAnnotation]).To(gomega.Equal(created.Annotations[appsv1beta1.SidecarSetHashAnnotation]),
			"the same sidecars hash the same, whatever the version written")

		ginkgo.By("refusing a v1alpha1 namespace that is no namespace name, naming the field")
		bad := alpha.DeepCopy()
		bad.ResourceVersion, bad.Name, bad.Spec.Namespace = "", ns+"-bad", "Not A Namespace"
		err := k8s.Create(ctx, bad)
		gomega.Expect(err).To(gomega.HaveOccurred())
		gomega.Expect(causes(err)).To(gomega.ContainElement(gomega.HavePrefix(`spec.namespace: Invalid value: "Not A Namespace"`)), "%v", err)
	})

	// rewriteConversion rewrites the CRD's conversion as another installer
	// would (same server, other review versions), so that the next Sync
	// writes; envtest's conversion is put back after the spec. It returns
	// envtest's conversion.
	rewriteConversion := func(ctx ginkgo.SpecContext) *apiextensionsv1.CustomResourceConversion {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		gomega.Expect(k8s.Get(ctx, client.ObjectKey{Name: names.SidecarSetCRDName}, crd)).To(gomega.Succeed())
		envtests := crd.Spec.Conversion.DeepCopy()
		ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
			live := &apiextensionsv1.CustomResourceDefinition{}
			gomega.Expect(k8s.Get(ctx, client.ObjectKey{Name: names.SidecarSetCRDName}, live)).To(gomega.Succeed())
			patch := client.MergeFrom(live.DeepCopy())
			live.Spec.Conversion = envtests
			gomega.Expect(k8s.Patch(ctx, live, patch)).To(gomega.Succeed())
			env.SidecarSetWatches.StorageReplaced(time.Now())
			gomega.Eventually(func() bool {
				live, _ := env.SidecarSetWatches.Live(time.Now())
				return live
			}).WithTimeout(time.Minute).Should(gomega.BeTrue(), "the operator's SidecarSet watch is back")
		})
		patch := client.MergeFrom(crd.DeepCopy())
		crd.Spec.Conversion.Webhook.ConversionReviewVersions = []string{"v1"}
		gomega.Expect(k8s.Patch(ctx, crd, patch)).To(gomega.Succeed())
		return envtests
	}

	ginkgo.It("should keep the CRD's conversion webhook at the operator's SidecarSet webhook", func(ctx ginkgo.SpecContext) {
		keeper := &crdconversion.ConversionConfig{Reader: k8s, Client: k8s, MutatingConfig: names.MutatingConfigName}
		ginkgo.By("rewriting the conversion as another installer would: same server, other review versions")
		envtests := rewriteConversion(ctx)
		crd := &apiextensionsv1.CustomResourceDefinition{}

		changed, err := keeper.Sync(ctx)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(changed).To(gomega.BeTrue())
		gomega.Expect(k8s.Get(ctx, client.ObjectKey{Name: names.SidecarSetCRDName}, crd)).To(gomega.Succeed())
		gomega.Expect(crd.Spec.Conversion.Webhook.ConversionReviewVersions).To(gomega.Equal([]string{"v1", "v1beta1"}))
		gomega.Expect(*crd.Spec.Conversion.Webhook.ClientConfig.URL).To(gomega.HaveSuffix(names.ConversionPath))
		gomega.Expect(crd.Spec.Conversion.Webhook.ClientConfig.CABundle).To(gomega.Equal(envtests.Webhook.ClientConfig.CABundle))

		changed, err = keeper.Sync(ctx)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(changed).To(gomega.BeFalse(), "a second sync writes nothing")

		ginkgo.By("converting through it: a v1alpha1 read of a v1beta1 object")
		written := sidecarSet(ns, "read").Containers(builder.MakeContainer("agent", "agent:1")).CustomVersion("v7").Obj()
		createSidecarSet(ctx, written)
		read := &appsv1alpha1.SidecarSet{}
		gomega.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(written), read)).To(gomega.Succeed())
		gomega.Expect(read.Labels).To(gomega.HaveKeyWithValue(appsv1alpha1.SidecarSetCustomVersionLabel, "v7"))
	})

	// The API server replaces a CRD's storage when its spec is written and
	// ends the watches of the old one about a second later; a SidecarSet
	// created before the informer's watch is back was missed by the pod
	// webhooks' scope (make demo, right after a fresh install, failed so).
	ginkgo.It("should be ready only once the SidecarSet watch is reopened after the CRD is written", func(ctx ginkgo.SpecContext) {
		watches := crdwatch.NewSidecarSetWatches()
		opts := app.CacheOptions(framework.OperatorNamespace, watches, names.MutatingConfigName)
		opts.Scheme = framework.Scheme
		sets, err := cache.New(env.Config, opts)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		cacheCtx, stop := context.WithCancel(context.Background())
		ginkgo.DeferCleanup(stop)
		go func() { _ = sets.Start(cacheCtx) }()
		_, err = sets.GetInformer(ctx, &appsv1beta1.SidecarSet{})
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(sets.WaitForCacheSync(ctx)).To(gomega.BeTrue())
		keeper := &crdconversion.ConversionConfig{Reader: k8s, Client: k8s, MutatingConfig: names.MutatingConfigName, Watches: watches}
		ready := keeper.ReadyCheck()
		gomega.Expect(ready(nil)).To(gomega.MatchError(gomega.ContainSubstring("is not set yet")))

		rewriteConversion(ctx)
		changed, err := keeper.Sync(ctx)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(changed).To(gomega.BeTrue())
		gomega.Expect(ready(nil)).To(gomega.MatchError(gomega.ContainSubstring("not yet reopened")),
			"the watch opened before the write is still open")

		ginkgo.By("the API server ends the old watch; the informer opens a new one")
		gomega.Eventually(ready).WithArguments((*http.Request)(nil)).WithTimeout(20 * time.Second).Should(gomega.Succeed())
		_, waited := watches.Live(time.Now())
		gomega.Expect(waited).To(gomega.BeNumerically("<", 20*time.Second), "ready because the watch was reopened, not by the timeout")

		ginkgo.By("a SidecarSet created now reaches the cache at once")
		created, _ := createSidecarSet(ctx, sidecarSet(ns, "after").Containers(builder.MakeContainer("agent", "agent:1")).Obj())
		gomega.Eventually(func() error {
			return sets.Get(ctx, client.ObjectKeyFromObject(created), &appsv1beta1.SidecarSet{})
		}).WithTimeout(2 * time.Second).Should(gomega.Succeed())

		ginkgo.By("once passed, the check stays passed")
		rewriteConversion(ctx)
		_, err = keeper.Sync(ctx)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(ready(nil)).To(gomega.Succeed())
	})
})
