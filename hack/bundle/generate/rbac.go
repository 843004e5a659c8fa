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
	clusterPermissions []csv.Permissions
	// kept are the roles and bindings the bundle carries: those that do not
	// grant anything to the deployments' service accounts (roles for
	// people), and every namespaced grant (RoleBindings and their roles).
	kept []*unstructured.Unstructured
}

// foldRBAC moves the cluster-wide rules bound to the deployments' service
// accounts into the CSV, as OLM expects: a ClusterRole bound by a
// ClusterRoleBinding goes to clusterPermissions, and OLM creates the role
// and binding itself, so they are dropped.
//
// Namespaced grants (RoleBindings, to a Role or a ClusterRole) are not
// folded into the CSV's permissions: in an AllNamespaces install, the only
// mode of this operator, OLM v0 lifts every namespaced permission of a CSV
// to a ClusterRole and ClusterRoleBinding, so a write meant for the
// operator's namespace would become a write in every namespace. The bundle
// carries them as Role and RoleBinding manifests instead, which OLM creates
// as they are in the install namespace; the binding names the deployment's
// service account without a namespace, which RBAC reads as the binding's
// own namespace. A binding that also names other subjects cannot be folded
// and is an error.
func foldRBAC(objects []*unstructured.Unstructured, accounts map[string]bool) (folded, error) {
	var out folded
	clusterRoles := map[string]*rbacv1.ClusterRole{}
	var clusterRoleBindings []*rbacv1.ClusterRoleBinding
	for _, u := range objects {
		var err error
		switch u.GetKind() {
		case "Role", "RoleBinding":
			// Carried as manifests.
		case "ClusterRole":
			r := &rbacv1.ClusterRole{}
			err = runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, r, true)
			clusterRoles[r.Name] = r
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
	slices.SortFunc(clusterRoleBindings, func(a, b *rbacv1.ClusterRoleBinding) int { return strings.Compare(a.Name, b.Name) })

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
	for _, u := range objects {
		if u.GetKind() != "RoleBinding" {
			continue
		}
		ref, _, _ := unstructured.NestedStringMap(u.Object, "roleRef")
		keptRoles[ref["kind"]+"/"+ref["name"]] = true
	}
	for key := range foldedRoles {
		if !keptRoles[key] {
			dropped[key] = true
		}
	}
	for _, u := range objects {
		if dropped[u.GetKind()+"/"+u.GetName()] {
			continue
		}
		if u.GetKind() == "RoleBinding" {
			var err error
			if u, err = bindInInstallNamespace(u, accounts); err != nil {
				return out, err
			}
		}
		out.kept = append(out.kept, u)
	}
	out.clusterPermissions = bySA(clusterPermissions)
	return out, nil
}

// bindInInstallNamespace returns a copy of a RoleBinding whose subjects
// name the deployments' service accounts without a namespace: OLM installs
// the binding in the install namespace, and RBAC reads a service account
// subject without a namespace as one of the binding's namespace.
func bindInInstallNamespace(u *unstructured.Unstructured, accounts map[string]bool) (*unstructured.Unstructured, error) {
	b := &rbacv1.RoleBinding{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, b, true); err != nil {
		return nil, fmt.Errorf("RoleBinding %s: %w", u.GetName(), err)
	}
	if _, _, err := boundAccount("RoleBinding", b.Name, b.Subjects, accounts); err != nil {
		return nil, err
	}
	out := u.DeepCopy()
	subjects, _, _ := unstructured.NestedSlice(out.Object, "subjects")
	for _, s := range subjects {
		m, ok := s.(map[string]any)
		if ok && m["kind"] == rbacv1.ServiceAccountKind && accounts[fmt.Sprint(m["name"])] {
			delete(m, "namespace")
		}
	}
	if err := unstructured.SetNestedSlice(out.Object, subjects, "subjects"); err != nil {
		return nil, err
	}
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
