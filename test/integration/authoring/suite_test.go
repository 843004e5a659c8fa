// Package authoring_test proves the SidecarSet authoring policy on a real
// kube-apiserver, with impersonated users holding the roles the install
// ships (config/rbac): once as the API server evaluates the
// ValidatingAdmissionPolicy (installed from policy/authoring, as
// config/default installs it), and once with the binding removed, when the
// operator's validating webhook evaluates the same policy. Both must allow
// and deny the same requests with the same field and missing permission.
package authoring_test

import (
	"context"
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sidecarset-operator/sidecarset-operator/test/integration/framework"
)

// Timeouts of the suite: the API server's policy informer and the
// operator's cache catch up within seconds.
const (
	eventuallyTimeout = 30 * time.Second
	pollInterval      = 200 * time.Millisecond
)

// The users, each with the roles an administrator would bind.
const (
	// alice writes SidecarSets and may create pods in team-a.
	alice = "alice"
	// ciBot may create pods in every namespace, like a CI bot bound to the
	// built-in edit role, and nothing else: without aggregation it cannot
	// write SidecarSets.
	ciBot = "ci-bot"
	// carol writes SidecarSets for every namespace.
	carol = "carol"
	// dave writes SidecarSets for every namespace, privileged settings and
	// Secret references included.
	dave = "dave"
	// erin writes SidecarSets and may create pods in every namespace, but
	// not inject into every namespace.
	erin = "erin"
	// oscar is on call: the on-call role and nothing else.
	oscar = "oscar"
	// operator is the manager's ServiceAccount, with the manager's role.
	operator = "system:serviceaccount:" + framework.OperatorNamespace + ":sidecarset-operator"
)

// workloads is the ClusterRole that creates pods (a stand-in for edit).
const workloads = "workloads"

// The namespaces of the suite.
const (
	teamA = "team-a"
	teamB = "team-b"
)

var (
	env *framework.Env
	// clients are impersonating clients, by user.
	clients = map[string]client.Client{}
)

func TestAuthoring(t *testing.T) {
	framework.RunSuite(t, "Authoring Policy Suite", eventuallyTimeout, pollInterval)
}

var _ = ginkgo.BeforeSuite(func(ctx ginkgo.SpecContext) {
	var err error
	env, err = framework.StartOperator(ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: teamA}}, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: teamB}})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	grantRoles(ctx)
	for _, u := range []string{alice, ciBot, carol, dave, erin, oscar, operator} {
		clients[u], err = env.NewUserClient(u)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
	}
}, ginkgo.NodeTimeout(2*time.Minute))

var _ = ginkgo.AfterSuite(func() {
	gomega.Expect(env.StopManager()).To(gomega.Succeed())
	gomega.Expect(env.Stop()).To(gomega.Succeed())
})

// grantRoles creates the roles of config/rbac (the people's roles and the
// manager's ClusterRole) and binds them to the users.
func grantRoles(ctx context.Context) {
	for _, file := range []string{"sidecarset_roles.yaml", "role.yaml"} {
		for _, r := range clusterRoles(file) {
			gomega.Expect(env.Client.Create(ctx, r)).To(gomega.Succeed())
		}
	}
	bind := func(user, role string) {
		gomega.Expect(env.Client.Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: user + "-" + role},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
		})).To(gomega.Succeed())
	}
	const editor = "sidecarset-operator-sidecarset-editor"
	for _, u := range []string{alice, carol, dave, erin} {
		bind(u, editor)
	}
	for _, u := range []string{carol, dave} {
		bind(u, "sidecarset-operator-inject-all-namespaces")
	}
	bind(dave, "sidecarset-operator-inject-privileged")
	bind(dave, "sidecarset-operator-inject-secrets")
	bind(oscar, "sidecarset-operator-oncall")
	// The built-in edit role is aggregated by kube-controller-manager, which
	// envtest does not run: workloads stands for it (whatever it
	// aggregates, no SidecarSet access is among it, see test/rbac).
	gomega.Expect(env.Client.Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: workloads},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create", "get", "list", "watch"}}},
	})).To(gomega.Succeed())
	bind(ciBot, workloads)
	bind(erin, workloads)
	bind(operator, "sidecarset-operator-manager")
	gomega.Expect(env.Client.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: alice + "-" + workloads, Namespace: teamA},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: workloads},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: alice}},
	})).To(gomega.Succeed())
}

// clusterRoles reads the ClusterRoles of a file of config/rbac.
func clusterRoles(file string) []*rbacv1.ClusterRole {
	root, err := framework.RepoRoot()
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	f, err := os.Open(root + "/config/rbac/" + file)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	defer func() { _ = f.Close() }()
	var out []*rbacv1.ClusterRole
	dec := yaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		var r rbacv1.ClusterRole
		err := dec.Decode(&r)
		if errors.Is(err, io.EOF) {
			break
		}
		gomega.Expect(err).NotTo(gomega.HaveOccurred(), file)
		if r.Kind == "ClusterRole" {
			out = append(out, &r)
		}
	}
	gomega.Expect(out).NotTo(gomega.BeEmpty(), file)
	return out
}
