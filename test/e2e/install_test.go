package e2e_test

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	managerapp "github.com/sidecarset-operator/sidecarset-operator/cmd/manager/app"
	"github.com/sidecarset-operator/sidecarset-operator/policy/authoring"
	"github.com/sidecarset-operator/sidecarset-operator/test/e2e/framework"
)

// The install: the manager of every other spec runs with the token of the
// ServiceAccount a real install creates, bound to the RBAC generated from the
// code's markers; these specs check that this is so, that the grant is no
// wider than it should be, and that the real install's manifests are
// accepted by this cluster's apiserver.
var _ = ginkgo.Describe("The install", ginkgo.Label("install"), func() {
	manager := "system:serviceaccount:" + framework.OperatorNamespace + ":" + framework.ManagerServiceAccount

	ginkgo.It("should run the manager as its own ServiceAccount, not as an administrator", func(ctx ginkgo.SpecContext) {
		cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(env.Dir, "manager.kubeconfig"))
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		cs, err := kubernetes.NewForConfig(cfg)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(review.Status.UserInfo.Username).To(gomega.Equal(manager))
		gomega.Expect(review.Status.UserInfo.Groups).NotTo(gomega.ContainElement("system:masters"))
	})

	ginkgo.DescribeTable("should grant the manager exactly what it needs",
		func(ctx ginkgo.SpecContext, allowed bool, attrs authorizationv1.ResourceAttributes) {
			review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User:               manager,
				Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + framework.OperatorNamespace, "system:authenticated"},
				ResourceAttributes: &attrs,
			}}
			got, err := env.Clientset.AuthorizationV1().SubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			gomega.Expect(got.Status.Allowed).To(gomega.Equal(allowed), "%s %s/%s in %q", attrs.Verb, attrs.Resource, attrs.Name, attrs.Namespace)
		},
		ginkgo.Entry("patch pods anywhere", true, authorizationv1.ResourceAttributes{Verb: "patch", Resource: "pods", Namespace: "default"}),
		ginkgo.Entry("patch SidecarSet status", true, authorizationv1.ResourceAttributes{Verb: "patch", Group: "apps.kruise.io", Resource: "sidecarsets", Subresource: "status"}),
		ginkgo.Entry("create ControllerRevisions", true, authorizationv1.ResourceAttributes{Verb: "create", Group: "apps", Resource: "controllerrevisions", Namespace: framework.OperatorNamespace}),
		ginkgo.Entry("create Leases in its namespace", true, authorizationv1.ResourceAttributes{Verb: "create", Group: "coordination.k8s.io", Resource: "leases", Namespace: framework.OperatorNamespace}),
		ginkgo.Entry("update its own Lease", true, authorizationv1.ResourceAttributes{Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Name: managerapp.LeaderElectionID, Namespace: framework.OperatorNamespace}),
		ginkgo.Entry("read the authoring policy's binding", true, authorizationv1.ResourceAttributes{Verb: "get", Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicybindings", Name: authoring.Name}),
		ginkgo.Entry("read the whitelist ConfigMap", true, authorizationv1.ResourceAttributes{Verb: "get", Resource: "configmaps", Name: "kruise-configuration", Namespace: framework.OperatorNamespace}),
		ginkgo.Entry("update its own certificate Secret", true, authorizationv1.ResourceAttributes{Verb: "update", Resource: "secrets", Name: "sidecarset-operator-webhook-cert", Namespace: framework.OperatorNamespace}),
		ginkgo.Entry("not delete pods", false, authorizationv1.ResourceAttributes{Verb: "delete", Resource: "pods", Namespace: "default"}),
		ginkgo.Entry("not create pods", false, authorizationv1.ResourceAttributes{Verb: "create", Resource: "pods", Namespace: "default"}),
		ginkgo.Entry("not read Secrets of other namespaces", false, authorizationv1.ResourceAttributes{Verb: "get", Resource: "secrets", Name: "anything", Namespace: "default"}),
		ginkgo.Entry("watch its own certificate Secret (by name)", true, authorizationv1.ResourceAttributes{Verb: "watch", Resource: "secrets", Name: "sidecarset-operator-webhook-cert", Namespace: framework.OperatorNamespace}),
		ginkgo.Entry("not read other Secrets of its namespace", false, authorizationv1.ResourceAttributes{Verb: "get", Resource: "secrets", Name: "other", Namespace: framework.OperatorNamespace}),
		ginkgo.Entry("not list the Secrets of its namespace", false, authorizationv1.ResourceAttributes{Verb: "list", Resource: "secrets", Namespace: framework.OperatorNamespace}),
		ginkgo.Entry("not update other Secrets of its namespace", false, authorizationv1.ResourceAttributes{Verb: "update", Resource: "secrets", Name: "other", Namespace: framework.OperatorNamespace}),
		ginkgo.Entry("not read other ConfigMaps", false, authorizationv1.ResourceAttributes{Verb: "get", Resource: "configmaps", Name: "other", Namespace: framework.OperatorNamespace}),
		ginkgo.Entry("not modify SidecarSet specs", false, authorizationv1.ResourceAttributes{Verb: "update", Group: "apps.kruise.io", Resource: "sidecarsets"}),
		ginkgo.Entry("pause rollouts (the failure budget)", true, authorizationv1.ResourceAttributes{Verb: "pause-rollouts", Group: "apps.kruise.io", Resource: "sidecarsets", Name: "any"}),
		ginkgo.Entry("not touch other webhook configurations", false, authorizationv1.ResourceAttributes{Verb: "update", Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations", Name: "someone-else"}),
		ginkgo.Entry("watch its own webhook configuration (by name)", true, authorizationv1.ResourceAttributes{Verb: "watch", Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations", Name: "sidecarset-operator-local-mutating"}),
		ginkgo.Entry("not read other webhook configurations", false, authorizationv1.ResourceAttributes{Verb: "get", Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations", Name: "someone-else"}),
		ginkgo.Entry("not list every webhook configuration", false, authorizationv1.ResourceAttributes{Verb: "list", Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations"}),
		ginkgo.Entry("patch the SidecarSet CRD (self-managed certificates)", true, authorizationv1.ResourceAttributes{Verb: "patch", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Name: "sidecarsets.apps.kruise.io"}),
		ginkgo.Entry("not patch other CRDs", false, authorizationv1.ResourceAttributes{Verb: "patch", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Name: "leases.coordination.k8s.io"}),
		ginkgo.Entry("not create ControllerRevisions in other namespaces", false, authorizationv1.ResourceAttributes{Verb: "create", Group: "apps", Resource: "controllerrevisions", Namespace: "default"}),
		ginkgo.Entry("not update SidecarSet status (it patches)", false, authorizationv1.ResourceAttributes{Verb: "update", Group: "apps.kruise.io", Resource: "sidecarsets", Subresource: "status"}),
		ginkgo.Entry("not update other Leases of its namespace", false, authorizationv1.ResourceAttributes{Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Name: "someone-else", Namespace: framework.OperatorNamespace}),
		ginkgo.Entry("not delete its Lease", false, authorizationv1.ResourceAttributes{Verb: "delete", Group: "coordination.k8s.io", Resource: "leases", Name: managerapp.LeaderElectionID, Namespace: framework.OperatorNamespace}),
		ginkgo.Entry("not write the Leases of kube-system", false, authorizationv1.ResourceAttributes{Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Name: "kube-scheduler", Namespace: metav1.NamespaceSystem}),
		ginkgo.Entry("not create admission policies (config/default installs its own)", false, authorizationv1.ResourceAttributes{Verb: "create", Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicies"}),
		ginkgo.Entry("not inject privileged sidecars itself", false, authorizationv1.ResourceAttributes{Verb: authoring.VerbInjectPrivileged, Group: "apps.kruise.io", Resource: "sidecarsets"}),
	)

	ginkgo.It("should not aggregate SidecarSet access into the built-in admin, edit and view roles", func(ctx ginkgo.SpecContext) {
		for _, name := range []string{"admin", "edit", "view"} {
			role, err := env.Clientset.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			for _, r := range role.Rules {
				gomega.Expect(r.APIGroups).NotTo(gomega.ContainElement("apps.kruise.io"), "ClusterRole %s grants %v on %v", name, r.Verbs, r.Resources)
			}
		}
	})

	ginkgo.It("should refuse a privileged SidecarSet to an author without inject-privileged, with the API server's policy", func(ctx ginkgo.SpecContext) {
		const author = "e2e-sidecarset-author"
		for _, role := range []string{"sidecarset-operator-sidecarset-editor", "sidecarset-operator-inject-all-namespaces"} {
			binding := &rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: author + "-" + role},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
				Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: author}},
			}
			_, err := env.Clientset.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{})
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
				gomega.Expect(env.Clientset.RbacV1().ClusterRoleBindings().Delete(ctx, binding.Name, metav1.DeleteOptions{})).To(gomega.Succeed())
			})
		}
		// The roles are config/rbac's (config/e2e installs them), the policy
		// policy/authoring's (config/local installs it).
		cfg := rest.CopyConfig(env.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: author, Groups: []string{"system:authenticated"}}
		c, err := client.New(cfg, client.Options{Scheme: framework.Scheme})
		gomega.Expect(err).NotTo(gomega.HaveOccurred())

		plain := &appsv1beta1.SidecarSet{
			ObjectMeta: metav1.ObjectMeta{Name: "e2e-authoring"},
			Spec: appsv1beta1.SidecarSetSpec{
				Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"app": "e2e-authoring"}},
				Containers: []appsv1beta1.SidecarContainer{{Container: corev1.Container{Name: "agent", Image: "busybox:1.36"}}},
			},
		}
		gomega.Eventually(func(g gomega.Gomega) {
			g.Expect(c.Create(ctx, plain.DeepCopy(), client.DryRunAll)).To(gomega.Succeed())
		}).WithContext(ctx).Should(gomega.Succeed(), "RBAC caught up with the bindings")
		privileged := plain.DeepCopy()
		privileged.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: new(true)}
		err = c.Create(ctx, privileged, client.DryRunAll)
		gomega.Expect(err).To(gomega.HaveOccurred())
		gomega.Expect(err.Error()).To(gomega.Equal(`sidecarsets.apps.kruise.io "e2e-authoring" is forbidden: ` +
			`ValidatingAdmissionPolicy 'sidecarset-operator-authoring' with binding 'sidecarset-operator-authoring' denied request: ` +
			`spec.containers[0].securityContext.privileged: injecting privileged settings requires permission to inject-privileged ` +
			`sidecarsets.apps.kruise.io "e2e-authoring", which user "e2e-sidecarset-author" does not have`))
	})

	ginkgo.It("should have the real install (config/default) accepted by the apiserver", func(ctx ginkgo.SpecContext) {
		// Server-side: the cluster's CRD converts through a URL (the manager
		// runs on this host); the real install's Service replaces it, which
		// a client-side apply without last-applied state would merge with.
		out := kubectl(ctx, "apply", "--server-side", "--force-conflicts", "-k", filepath.Join(env.RepoRoot, "config", "default"), "--dry-run=server")
		for _, want := range []string{
			"customresourcedefinition.apiextensions.k8s.io/sidecarsets.apps.kruise.io",
			"deployment.apps/sidecarset-operator",
			"mutatingwebhookconfiguration.admissionregistration.k8s.io/sidecarset-operator-mutating",
			"validatingwebhookconfiguration.admissionregistration.k8s.io/sidecarset-operator-validating",
			"poddisruptionbudget.policy/sidecarset-operator",
			"secret/sidecarset-operator-webhook-cert",
			"validatingadmissionpolicy.admissionregistration.k8s.io/sidecarset-operator-authoring",
			"validatingadmissionpolicybinding.admissionregistration.k8s.io/sidecarset-operator-authoring",
		} {
			gomega.Expect(out).To(gomega.ContainSubstring(want))
		}
	})

	ginkgo.It("should have the cert-manager install (config/certmanager) accepted by the apiserver", func(ctx ginkgo.SpecContext) {
		// cert-manager itself cannot run here; its two CRDs are enough for
		// the apiserver to check our Issuer and Certificate.
		crds := filepath.Join(ginkgo.GinkgoT().TempDir(), "cert-manager-crds.yaml")
		var b strings.Builder
		for _, kind := range []string{"Issuer", "Certificate"} {
			b.WriteString(fakeCRD("cert-manager.io", kind))
		}
		gomega.Expect(os.WriteFile(crds, []byte(b.String()), 0o600)).To(gomega.Succeed())
		kubectl(ctx, "apply", "-f", crds)
		ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) { kubectl(ctx, "delete", "-f", crds) })
		kubectl(ctx, "wait", "--for=condition=Established", "crd/issuers.cert-manager.io", "crd/certificates.cert-manager.io")

		out := kubectl(ctx, "apply", "--server-side", "--force-conflicts", "-k", filepath.Join(env.RepoRoot, "config", "certmanager"), "--dry-run=server")
		gomega.Expect(out).To(gomega.ContainSubstring("certificate.cert-manager.io/sidecarset-operator-serving-cert"))
		gomega.Expect(out).To(gomega.ContainSubstring("issuer.cert-manager.io/sidecarset-operator-selfsigned"))
		gomega.Expect(out).NotTo(gomega.ContainSubstring("secret/"), "cert-manager owns the Secret in this install")
	})
})

// fakeCRD is a namespaced CRD that accepts any spec: a stand-in for a CRD
// of a project that cannot be installed here.
func fakeCRD(group, kind string) string {
	plural := strings.ToLower(kind) + "s"
	return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: ` + plural + `.` + group + `
spec:
  group: ` + group + `
  scope: Namespaced
  names: {kind: ` + kind + `, plural: ` + plural + `}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
---
`
}
