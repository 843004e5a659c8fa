package webhook_test

import (
	"context"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/cmd/manager/app"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
	"github.com/sidecarset-operator/sidecarset-operator/test/integration/framework"
)

// The SidecarSetPatchPodMetadataDefaultsAllowed gate is a start-up option,
// so its on state runs against a control plane and operator of its own.
var _ = ginkgo.Describe("The patchPodMetadata whitelist with SidecarSetPatchPodMetadataDefaultsAllowed on", ginkgo.Ordered, func() {
	var gated client.Client
	ginkgo.BeforeAll(func(ctx ginkgo.SpecContext) {
		gatedEnv, err := framework.Start(framework.Options{Webhooks: true})
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		ginkgo.DeferCleanup(gatedEnv.Stop)
		gated = gatedEnv.Client
		gomega.Expect(gated.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: framework.OperatorNamespace}})).To(gomega.Succeed())
		mgrCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
		ginkgo.DeferCleanup(stop)
		gomega.Expect(gatedEnv.StartManager(mgrCtx, framework.ManagerOptions{Mutate: func(o *app.Options) {
			o.PatchMetadataDefaultsAllowed = true
		}})).To(gomega.Succeed())
	}, ginkgo.NodeTimeout(2*time.Minute))

	ginkgo.It("should accept any key and patch pods while the ConfigMap is missing", func(ctx ginkgo.SpecContext) {
		s := builder.MakeSidecarSet("owner", "app", "gated").
			PatchPodMetadata(appsv1beta1.SidecarSetRetainPatchPolicy, map[string]string{"team.example.com/owner": "platform"}).
			Containers(builder.MakeContainer("agent", "busybox:1.36")).Obj()
		gomega.Expect(gated.Create(ctx, s)).To(gomega.Succeed())
		p := builder.MakePod("pod", "default").Label("app", "gated").Obj()
		gomega.Eventually(func(g gomega.Gomega) {
			dry := p.DeepCopy()
			g.Expect(gated.Create(ctx, dry, client.DryRunAll)).To(gomega.Succeed())
			g.Expect(dry.Annotations).To(gomega.HaveKeyWithValue("team.example.com/owner", "platform"))
			g.Expect(containerNames(dry.Spec.Containers)).To(gomega.Equal([]string{"agent", "main"}))
		}).WithContext(ctx).Should(gomega.Succeed())
	})

	ginkgo.It("should accept keys of a SidecarSet no rule selects, and still enforce the rules that select one", func(ctx ginkgo.SpecContext) {
		gomega.Expect(gated.Create(ctx, seedWhitelist())).To(gomega.Succeed())
		unselected := builder.MakeSidecarSet("unselected", "app", "other").
			PatchPodMetadata(appsv1beta1.SidecarSetRetainPatchPolicy, map[string]string{"anything": "x"}).
			Containers(builder.MakeContainer("agent", "busybox:1.36")).Obj()
		selected := builder.MakeSidecarSet("selected", "app", "third").Label("sidecar", "log-agent").
			PatchPodMetadata(appsv1beta1.SidecarSetRetainPatchPolicy, map[string]string{"anything": "x"}).
			Containers(builder.MakeContainer("agent", "busybox:1.36")).Obj()
		gomega.Eventually(func(g gomega.Gomega) {
			g.Expect(causes(gated.Create(ctx, selected.DeepCopy(), client.DryRunAll))).To(gomega.Equal([]string{
				`spec.patchPodMetadata[0].annotations[anything]: Forbidden: sidecarSet patch metadata annotation(anything) is not allowed: ` +
					`it matches no pattern of the whitelist rules that select this SidecarSet: ` + seedRules}))
		}).WithContext(ctx).Should(gomega.Succeed())
		gomega.Expect(gated.Create(ctx, unselected)).To(gomega.Succeed())
	})
})
