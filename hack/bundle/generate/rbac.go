package generate

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/sidecarset-operator/sidecarset-operator/hack/bundle/csv"
)

// folded is the RBAC of the kustomization split between what OLM creates
// from the CSV and what the bundle carries as manifests.
type folded struct {
	permissions        []csv.Permissions
	clusterPermissions []csv.Permissions
	// kept are the roles and bindings that do not grant anything to the
	// deployments' service accounts (aggregated roles, roles for users).
	kept []*unstructured.Unstructured
}

// foldRBAC moves the rules bound to the deployments' service accounts into
// the CSV, as OLM expects: a ClusterRole bound by a ClusterRoleBinding goes
// to clusterPermissions; a Role, or a ClusterRole bound by a RoleBinding, goes
// to permissions (granted in the install namespace). OLM creates the roles
// and bindings itself, so the folded objects are dropped; a binding that also
// names other subjects cannot be folded and is an error.
func foldRBAC(objects []*unstructured.Unstructured, accounts map[string]bool) (folded, error) {
	var out folded
	roles := map[string]*rbacv1.Role{}
	clusterRoles := map[string]*rbacv1.ClusterRole{}
	var roleBindings []*rbacv1.RoleBinding
	var clusterRoleBindings []*rbacv1.ClusterRoleBinding
	byKey := map[string]*unstructured.Unstructured{}
	for _, u := range objects {
		byKey[u.GetKind()+"/"+u.GetName()] = u
		var err error
		switch u.GetKind() {
		case "Role":
			r := &rbacv1.Role{}
			err = runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, r, true)
			roles[r.Name] = r
		case "ClusterRole":
			r := &rbacv1.ClusterRole{}
			err = runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, r, true)
			clusterRoles[r.Name] = r
		case "RoleBinding":
			b := &rbacv1.RoleBinding{}
			err = runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, b, true)
			roleBindings = append(roleBindings, b)
		case "ClusterRoleBinding":
			b := &rbacv1.ClusterRoleBinding{}
			err = runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, b, true)
			clusterRoleBindings = append(clusterRoleBindings, b)
		default:
			return out, fmt.Errorf("%s %s: unexpected RBAC kind", u.GetKind(), u.GetName())
		}
		if err != nil {
			return out, fmt.Errorf("%s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	slices.SortFunc(roleBindings, func(a, b *rbacv1.RoleBinding) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(clusterRoleBindings, func(a, b *rbacv1.ClusterRoleBinding) int { return strings.Compare(a.Name, b.Name) })

	permissions := map[string][]rbacv1.PolicyRule{}
	clusterPermissions := map[string][]rbacv1.PolicyRule{}
	foldedRoles := map[string]bool{}
	keptRoles := map[string]bool{}
	dropped := map[string]bool{}

	for _, b := range clusterRoleBindings {
		sa, fold, err := boundAccount("ClusterRoleBinding", b.Name, b.Subjects, accounts)
		if err != nil {
			return out, err
		}
		key := b.RoleRef.Kind + "/" + b.RoleRef.Name
		if !fold {
			keptRoles[key] = true
			continue
		}
		r, ok := clusterRoles[b.RoleRef.Name]
		if !ok {
			return out, fmt.Errorf("ClusterRoleBinding %s: ClusterRole %s not found", b.Name, b.RoleRef.Name)
		}
		clusterPermissions[sa] = append(clusterPermissions[sa], r.Rules...)
		foldedRoles[key] = true
		dropped["ClusterRoleBinding/"+b.Name] = true
	}
	for _, b := range roleBindings {
		sa, fold, err := boundAccount("RoleBinding", b.Name, b.Subjects, accounts)
		if err != nil {
			return out, err
		}
		key := b.RoleRef.Kind + "/" + b.RoleRef.Name
		if !fold {
			keptRoles[key] = true
			continue
		}
		var rules []rbacv1.PolicyRule
		switch b.RoleRef.Kind {
		case "Role":
			r, ok := roles[b.RoleRef.Name]
			if !ok || r.Namespace != b.Namespace {
				return out, fmt.Errorf("RoleBinding %s: Role %s not found in its namespace", b.Name, b.RoleRef.Name)
			}
			rules = r.Rules
		case "ClusterRole":
			r, ok := clusterRoles[b.RoleRef.Name]
			if !ok {
				return out, fmt.Errorf("RoleBinding %s: ClusterRole %s not found", b.Name, b.RoleRef.Name)
			}
			rules = r.Rules
		}
		permissions[sa] = append(permissions[sa], rules...)
		foldedRoles[key] = true
		dropped["RoleBinding/"+b.Name] = true
	}
	for key := range foldedRoles {
		if !keptRoles[key] {
			dropped[key] = true
		}
	}
	for _, u := range objects {
		if !dropped[u.GetKind()+"/"+u.GetName()] {
			out.kept = append(out.kept, u)
		}
	}
	out.permissions = bySA(permissions)
	out.clusterPermissions = bySA(clusterPermissions)
	return out, nil
}

// boundAccount reports which deployment service account a binding grants
// to. A binding naming only other subjects is kept as it is; one mixing a
// deployment's account with other subjects cannot be expressed in a CSV.
func boundAccount(kind, name string, subjects []rbacv1.Subject, accounts map[string]bool) (string, bool, error) {
	var sa string
	others := 0
	for _, s := range subjects {
		if s.Kind == rbacv1.ServiceAccountKind && accounts[s.Name] {
			if sa != "" && sa != s.Name {
				return "", false, fmt.Errorf("%s %s binds two deployment service accounts; split it", kind, name)
			}
			sa = s.Name
			continue
		}
		others++
	}
	if sa != "" && others > 0 {
		return "", false, fmt.Errorf("%s %s binds a deployment's service account and other subjects; split it", kind, name)
	}
	return sa, sa != "", nil
}

func bySA(m map[string][]rbacv1.PolicyRule) []csv.Permissions {
	out := make([]csv.Permissions, 0, len(m))
	for _, sa := range slices.Sorted(maps.Keys(m)) {
		out = append(out, csv.Permissions{ServiceAccountName: sa, Rules: m[sa]})
	}
	return out
}
