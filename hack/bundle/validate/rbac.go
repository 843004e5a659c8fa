package validate

import (
	"fmt"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/sidecarset-operator/sidecarset-operator/hack/bundle/csv"
)

// grant is a set of rules granted to a deployment's service account, and
// where it comes from (for messages).
type grant struct {
	account string
	source  string
	rules   []rbacv1.PolicyRule
}

// deploymentAccounts are the service accounts the CSV's deployments run as.
func deploymentAccounts(c *csv.ClusterServiceVersion) map[string]bool {
	accounts := map[string]bool{}
	for _, d := range c.Spec.Install.Spec.Deployments {
		sa := d.Spec.Template.Spec.ServiceAccountName
		if sa == "" {
			sa = "default"
		}
		accounts[sa] = true
	}
	return accounts
}

// accountGrants are the rules granted to the deployments' service accounts: the
// CSV's permissions and cluster permissions, and the roles the bundle's own
// (Cluster)RoleBindings bind to them.
func accountGrants(b *Bundle) []grant {
	if b.CSV == nil {
		return nil
	}
	var out []grant
	for _, p := range b.CSV.Spec.Install.Spec.Permissions {
		out = append(out, grant{account: p.ServiceAccountName, source: "CSV permissions", rules: p.Rules})
	}
	for _, p := range b.CSV.Spec.Install.Spec.ClusterPermissions {
		out = append(out, grant{account: p.ServiceAccountName, source: "CSV clusterPermissions", rules: p.Rules})
	}
	accounts := deploymentAccounts(b.CSV)
	roles := map[string][]rbacv1.PolicyRule{}
	for _, o := range b.Objects {
		switch o.GetKind() {
		case "Role", "ClusterRole":
			r := &rbacv1.ClusterRole{} // a Role has the same rules
			if runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, r) == nil {
				roles[o.GetKind()+"/"+o.GetName()] = r.Rules
			}
		}
	}
	for _, o := range b.Objects {
		if o.GetKind() != "RoleBinding" && o.GetKind() != "ClusterRoleBinding" {
			continue
		}
		rb := &rbacv1.RoleBinding{} // a ClusterRoleBinding has the same fields
		if runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, rb) != nil {
			continue
		}
		for _, s := range rb.Subjects {
			if s.Kind == rbacv1.ServiceAccountKind && accounts[s.Name] {
				out = append(out, grant{account: s.Name, source: o.File, rules: roles[rb.RoleRef.Kind+"/"+rb.RoleRef.Name]})
			}
		}
	}
	return out
}

// writeVerbs are the verbs that change objects.
var writeVerbs = []string{"create", "update", "patch", "delete", "deletecollection", rbacv1.VerbAll}

// checkNamespacedPermissions: OLM v0 lifts the namespaced permissions of a
// CSV installed for all namespaces to a ClusterRole and ClusterRoleBinding,
// so a write meant for the operator's namespace would apply everywhere.
func checkNamespacedPermissions(b *Bundle) []Finding {
	if b.CSV == nil {
		return nil
	}
	var out []Finding
	for _, p := range b.CSV.Spec.Install.Spec.Permissions {
		for _, r := range p.Rules {
			writes := slices.ContainsFunc(r.Verbs, func(v string) bool { return slices.Contains(writeVerbs, v) })
			what := fmt.Sprintf("service account %s: the namespaced permission %v %v %v", p.ServiceAccountName, r.APIGroups, r.Resources, r.Verbs)
			if writes {
				out = append(out, errorf("%s would be granted in every namespace (OLM lifts namespaced permissions of an AllNamespaces install to the cluster); ship it as a Role and RoleBinding manifest", what))
			} else {
				out = append(out, warnf("%s is read access in every namespace under OLM; ship it as a Role and RoleBinding manifest", what))
			}
		}
	}
	for _, o := range b.Objects {
		if o.GetKind() != "RoleBinding" {
			continue
		}
		rb := &rbacv1.RoleBinding{}
		if runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, rb) != nil {
			continue
		}
		for _, s := range rb.Subjects {
			if s.Kind == rbacv1.ServiceAccountKind && s.Namespace != "" {
				out = append(out, errorf("%s: subject ServiceAccount %s names namespace %q; leave it empty so that it is the install namespace", o.File, s.Name, s.Namespace))
			}
		}
	}
	return out
}
