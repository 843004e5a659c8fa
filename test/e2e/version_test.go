package e2e_test

import (
	"encoding/json"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sidecarset-operator/sidecarset-operator/version"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/names"
)

// The operator's version travels from the manager to the plugin through the
// pod webhooks' configuration: the manager records it there, the plugin
// reads it. Both are built here without the release ldflags, so both are
// development builds, and the plugin says it cannot compare them.
var _ = ginkgo.Describe("kubectl sidecarset version", ginkgo.Label("plugin"), func() {
	ginkgo.BeforeEach(buildPlugin)

	ginkgo.It("should print the version the manager records on its webhook configuration", func(ctx ginkgo.SpecContext) {
		var recorded version.Info
		var config string
		gomega.Eventually(func(g gomega.Gomega) {
			list := &admissionregistrationv1.MutatingWebhookConfigurationList{}
			g.Expect(env.Client.List(ctx, list)).To(gomega.Succeed())
			for _, cfg := range list.Items {
				for _, w := range cfg.Webhooks {
					if w.Name == names.PodWebhookName {
						config = cfg.Name
						var ok bool
						recorded, ok = version.FromAnnotations(cfg.Annotations)
						g.Expect(ok).To(gomega.BeTrue(), "annotations of %s: %v", cfg.Name, cfg.Annotations)
					}
				}
			}
		}).WithContext(ctx).Should(gomega.Succeed())
		gomega.Expect(recorded.Version).To(gomega.Equal(version.DevelVersion))

		r := execPlugin(ctx, "version")
		ginkgo.AddReportEntry("kubectl sidecarset version", r.Stdout+r.Stderr)
		gomega.Expect(r.ExitCode).To(gomega.Equal(0), r.Stderr)
		gomega.Expect(r.Stdout).To(gomega.Equal("Plugin:   " + version.DevelVersion + "\n" +
			"Operator: " + recorded.String() + " (MutatingWebhookConfiguration " + config + ")\n"))
		gomega.Expect(r.Stderr).To(gomega.ContainSubstring("development build"))

		out, err := runPlugin(ctx, "version", "-o", "json")
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		var report struct {
			Operator struct {
				Version, Revision, Configuration string
			}
			Skew struct{ Level string }
		}
		gomega.Expect(json.Unmarshal([]byte(out), &report)).To(gomega.Succeed())
		gomega.Expect(report.Operator.Version).To(gomega.Equal(recorded.Version))
		gomega.Expect(report.Operator.Configuration).To(gomega.Equal(config))
		gomega.Expect(report.Skew.Level).To(gomega.Equal(string(version.SkewUnknown)))
	})

	// The viewer role reads the configuration of config/default by name;
	// this cluster's has another name, so a viewer learns the plugin's
	// version and why the operator's is unknown, and the command succeeds.
	ginkgo.It("should still print the plugin's version to a user who cannot read the configuration", func(ctx ginkgo.SpecContext) {
		const user = "version-viewer"
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "e2e-version-viewer"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "sidecarset-operator-sidecarset-viewer"},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
		}
		gomega.Expect(env.Client.Create(ctx, binding)).To(gomega.Succeed())
		ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
			gomega.Expect(client.IgnoreNotFound(env.Client.Delete(ctx, binding))).To(gomega.Succeed())
		})
		gomega.Expect(env.Client.Get(ctx, types.NamespacedName{Name: names.MutatingConfigName},
			&admissionregistrationv1.MutatingWebhookConfiguration{})).NotTo(gomega.Succeed(), "this cluster's configuration has another name")

		r := execPlugin(ctx, "version", "--as="+user)
		gomega.Expect(r.ExitCode).To(gomega.Equal(0), r.Stderr)
		gomega.Expect(r.Stdout).To(gomega.HavePrefix("Plugin:   " + version.DevelVersion + "\n"))
		gomega.Expect(r.Stdout).To(gomega.ContainSubstring("Operator: unknown: the MutatingWebhookConfiguration " + names.MutatingConfigName))
		gomega.Expect(strings.Count(r.Stdout, "\n")).To(gomega.Equal(2))
		gomega.Expect(r.Stderr).To(gomega.ContainSubstring("the operator's version is unknown"))
	})
})
