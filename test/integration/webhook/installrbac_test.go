package webhook_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"slices"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/sidecarset-operator/sidecarset-operator/cmd/manager/app"
	"github.com/sidecarset-operator/sidecarset-operator/hack/bundle/generate"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
	"github.com/sidecarset-operator/sidecarset-operator/test/integration/framework"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/names"
)

// operatorAccount is the manager's service account in the installs.
const operatorAccount = "sidecarset-operator"

var _ = ginkgo.Describe("The manager under an install's RBAC", func() {
	// config/certmanager grants nothing on the SidecarSet CRD: cert-manager's
	// CA injector writes its conversion webhook's CA bundle. The manager
	// must then neither need nor use a right on the CRD: before, it kept
	// reading the CRD, was refused, and never became ready.
	ginkgo.It("should be ready and inject with cert-manager's certificates and config/certmanager's RBAC, without touching the CRD", func(ctx ginkgo.SpecContext) {
		const user = "sidecarset-operator-certmanager"
		grantInstallRBAC(ctx, "../../../config/certmanager", user)
		crdBefore := &apiextensionsv1.CustomResourceDefinition{}
		gomega.Expect(k8s.Get(ctx, client.ObjectKey{Name: names.SidecarSetCRDName}, crdBefore)).To(gomega.Succeed())

		probe := freeAddress()
		restartManager(ctx, framework.ManagerOptions{User: user, ProbeAddress: probe, Mutate: func(o *app.Options) {
			// As config/certmanager runs main: external certificates, the
			// configurations named as the flags' defaults name them.
			o.Certs.MutatingConfig, o.Certs.ValidatingConfig = names.MutatingConfigName, names.ValidatingConfigName
		}})

		gomega.Eventually(func(g gomega.Gomega) {
			resp, err := http.Get("http://" + probe + "/readyz?verbose")
			g.Expect(err).NotTo(gomega.HaveOccurred())
			defer func() { _ = resp.Body.Close() }()
			body, _ := io.ReadAll(resp.Body)
			g.Expect(resp.StatusCode).To(gomega.Equal(http.StatusOK), "%s", body)
		}).WithContext(ctx).Should(gomega.Succeed())

		ns := newNamespace(ctx, nil)
		s, _ := createSidecarSet(ctx, sidecarSet(ns, "certmanager").Containers(builder.MakeContainer("agent", "agent:1")).Obj())
		createInjected(ctx, pod(ns).Obj(), s.Name)

		crdAfter := &apiextensionsv1.CustomResourceDefinition{}
		gomega.Expect(k8s.Get(ctx, client.ObjectKey{Name: names.SidecarSetCRDName}, crdAfter)).To(gomega.Succeed())
		gomega.Expect(crdAfter.ResourceVersion).To(gomega.Equal(crdBefore.ResourceVersion), "the manager wrote the CRD")
	})
})

// restartManager replaces the suite's manager by one with the given
// options until the spec ends.
func restartManager(ctx context.Context, o framework.ManagerOptions) {
	gomega.Expect(env.StopManager()).To(gomega.Succeed())
	ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
		_ = env.StopManager()
		gomega.Expect(env.StartManager(context.WithoutCancel(ctx), framework.ManagerOptions{})).To(gomega.Succeed())
	})
	gomega.Expect(env.StartManager(context.WithoutCancel(ctx), o)).To(gomega.Succeed())
}

// grantInstallRBAC gives user exactly what the kustomization in dir grants
// the manager's service account: each (Cluster)Role bound to it is created
// under a name of the user's and bound to the user instead.
func grantInstallRBAC(ctx context.Context, dir, user string) {
	objects, err := generate.Kustomize(filesys.MakeFsOnDisk(), dir)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	type roleKey struct{ kind, namespace, name string }
	roles := map[roleKey][]rbacv1.PolicyRule{}
	var bindings []*rbacv1.RoleBinding // a ClusterRoleBinding has the same fields; Namespace "" for those
	for _, u := range objects {
		switch u.GetKind() {
		case "Role", "ClusterRole":
			r := &rbacv1.ClusterRole{} // a Role has the same rules
			gomega.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, r)).To(gomega.Succeed())
			roles[roleKey{u.GetKind(), u.GetNamespace(), u.GetName()}] = r.Rules
		case "RoleBinding", "ClusterRoleBinding":
			b := &rbacv1.RoleBinding{}
			gomega.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, b)).To(gomega.Succeed())
			if slices.ContainsFunc(b.Subjects, func(s rbacv1.Subject) bool {
				return s.Kind == rbacv1.ServiceAccountKind && s.Name == operatorAccount
			}) {
				bindings = append(bindings, b)
			}
		}
	}
	gomega.Expect(bindings).NotTo(gomega.BeEmpty())
	subjects := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}
	for _, b := range bindings {
		key := roleKey{b.RoleRef.Kind, "", b.RoleRef.Name}
		if key.kind == "Role" {
			key.namespace = b.Namespace
		}
		rules, ok := roles[key]
		gomega.Expect(ok).To(gomega.BeTrue(), "%s %s is bound but not shipped", key.kind, key.name)
		own := user + "-" + b.Name
		roleRef := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: key.kind, Name: own}
		var role, binding client.Object = &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: own}, Rules: rules},
			&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: own}, RoleRef: roleRef, Subjects: subjects}
		if b.Namespace != "" {
			binding = &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: own, Namespace: b.Namespace}, RoleRef: roleRef, Subjects: subjects}
		}
		if key.kind == "Role" {
			role = &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: own, Namespace: key.namespace}, Rules: rules}
		}
		for _, o := range []client.Object{role, binding} {
			gomega.Expect(k8s.Create(ctx, o)).To(gomega.Succeed())
			ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
				gomega.Expect(client.IgnoreNotFound(k8s.Delete(ctx, o))).To(gomega.Succeed())
			})
		}
	}
}

// freeAddress returns a local address nothing listens on now.
func freeAddress() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	defer func() { gomega.Expect(l.Close()).To(gomega.Succeed()) }()
	return l.Addr().String()
}
