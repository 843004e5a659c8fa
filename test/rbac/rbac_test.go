// Package rbac_test reviews every permission the operator ships. It lists
// each rule of each role of the kustomize installs (config/default, and
// config/certmanager) and of the OLM bundle (the CSV's permissions and the bundle's roles), one line
// per API group, resource and resource names, and compares the list with
// allowed-rules.yaml: a new or wider permission fails here until that file
// is changed with it, so it is a reviewed change. It also renders what OLM
// creates from the bundle and checks that no cluster-wide grant writes
// Leases or ControllerRevisions, and that no role is aggregated into the
// built-in admin, edit or view roles.
package rbac_test

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset-operator/sidecarset-operator/hack/bundle/generate"
	"github.com/sidecarset-operator/sidecarset-operator/hack/bundle/olm"
	"github.com/sidecarset-operator/sidecarset-operator/hack/bundle/validate"
)

const (
	repoRoot  = "../.."
	allowList = "allowed-rules.yaml"
)

// installs are the rules of each install, by grantee, as lines.
type installs map[string]map[string][]string

// yaml writes the installs as allowed-rules.yaml: sorted, one rule a line.
func (in installs) yaml() string {
	var b strings.Builder
	b.WriteString("# Every permission config/default, config/certmanager and the OLM bundle\n" +
		"# grant, one line per API group, resource and resource names. test/rbac\n" +
		"# fails when an install grants anything not listed here, or no longer grants\n" +
		"# something listed. Regenerate with REFRESH_GOLDEN=true go test ./test/rbac\n" +
		"# and review the diff.\n")
	for _, install := range slices.Sorted(maps.Keys(in)) {
		fmt.Fprintf(&b, "%s:\n", install)
		for _, grantee := range slices.Sorted(maps.Keys(in[install])) {
			fmt.Fprintf(&b, "  %s:\n", grantee)
			for _, l := range in[install][grantee] {
				fmt.Fprintf(&b, "  - %q\n", l)
			}
		}
	}
	return b.String()
}

// lines flattens rules into sorted, de-duplicated lines
// "<group>/<resource>[<names>]: <verbs>" ("core" is the core group) and
// "url <path>: <verbs>" for non-resource URLs.
func lines(rules []rbacv1.PolicyRule) []string {
	var out []string
	for _, r := range rules {
		verbs := slices.Clone(r.Verbs)
		slices.Sort(verbs)
		for _, u := range r.NonResourceURLs {
			out = append(out, fmt.Sprintf("url %s: %s", u, strings.Join(verbs, " ")))
		}
		names := ""
		if len(r.ResourceNames) > 0 {
			sorted := slices.Clone(r.ResourceNames)
			slices.Sort(sorted)
			names = "[" + strings.Join(sorted, ",") + "]"
		}
		for _, g := range r.APIGroups {
			if g == "" {
				g = "core"
			}
			for _, res := range r.Resources {
				out = append(out, fmt.Sprintf("%s/%s%s: %s", g, res, names, strings.Join(verbs, " ")))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func decodeRules(u *unstructured.Unstructured) ([]rbacv1.PolicyRule, error) {
	r := &rbacv1.ClusterRole{} // a Role has the same rules
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, r); err != nil {
		return nil, fmt.Errorf("%s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return r.Rules, nil
}

// roleLines adds the lines of every Role and ClusterRole among objects,
// and under "bindings" one line per subject of each binding: a binding to a
// role not shipped here (cluster-admin) shows too.
func roleLines(out map[string][]string, objects []*unstructured.Unstructured) error {
	for _, u := range objects {
		if u.GetKind() == "RoleBinding" || u.GetKind() == "ClusterRoleBinding" {
			b := &rbacv1.RoleBinding{} // a ClusterRoleBinding has the same fields
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, b); err != nil {
				return fmt.Errorf("%s %s: %w", u.GetKind(), u.GetName(), err)
			}
			for _, sub := range b.Subjects {
				who := sub.Kind + " " + sub.Name
				if sub.Namespace != "" {
					who = sub.Kind + " " + sub.Namespace + "/" + sub.Name
				}
				out["bindings"] = append(out["bindings"], fmt.Sprintf("%s %s: %s %s -> %s", u.GetKind(), u.GetName(), b.RoleRef.Kind, b.RoleRef.Name, who))
			}
			slices.Sort(out["bindings"])
			continue
		}
		if u.GetKind() != "Role" && u.GetKind() != "ClusterRole" {
			continue
		}
		rules, err := decodeRules(u)
		if err != nil {
			return err
		}
		name := u.GetKind() + " " + u.GetName()
		if u.GetNamespace() != "" {
			name = u.GetKind() + " " + u.GetNamespace() + "/" + u.GetName()
		}
		out[name] = lines(rules)
	}
	return nil
}

func loadBundle(t *testing.T) *validate.Bundle {
	t.Helper()
	df, err := os.ReadFile(repoRoot + "/bundle.Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	b, err := validate.Load(os.DirFS(repoRoot+"/bundle"), df)
	if err != nil {
		t.Fatal(err)
	}
	if b.CSV == nil {
		t.Fatal("the bundle has no CSV")
	}
	return b
}

func bundleObjects(b *validate.Bundle) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, 0, len(b.Objects))
	for _, o := range b.Objects {
		out = append(out, o.Unstructured)
	}
	return out
}

func actual(t *testing.T) installs {
	t.Helper()
	got := installs{"config/default": {}, "config/certmanager": {}, "bundle": {}}
	for _, dir := range []string{"config/default", "config/certmanager"} {
		objects, err := generate.Kustomize(filesys.MakeFsOnDisk(), repoRoot+"/"+dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := roleLines(got[dir], objects); err != nil {
			t.Fatal(err)
		}
	}
	b := loadBundle(t)
	for _, p := range b.CSV.Spec.Install.Spec.ClusterPermissions {
		got["bundle"]["CSV clusterPermissions "+p.ServiceAccountName] = lines(p.Rules)
	}
	for _, p := range b.CSV.Spec.Install.Spec.Permissions {
		got["bundle"]["CSV permissions "+p.ServiceAccountName] = lines(p.Rules)
	}
	if err := roleLines(got["bundle"], bundleObjects(b)); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestRBAC_EveryRuleIsAllowListed: if this fails after an intended change
// of permissions, rerun with REFRESH_GOLDEN=true and commit
// allowed-rules.yaml with the change, for review.
func TestRBAC_EveryRuleIsAllowListed(t *testing.T) {
	t.Parallel()
	got := actual(t)
	if os.Getenv("REFRESH_GOLDEN") == "true" {
		if err := os.WriteFile(allowList, []byte(got.yaml()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(allowList)
	if err != nil {
		t.Fatal(err)
	}
	var want installs
	if err := yaml.UnmarshalStrict(data, &want); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the installs' permissions differ from %s (-allowed +granted); if intended, run REFRESH_GOLDEN=true go test ./test/rbac and commit the reviewed file:\n%s", allowList, diff)
	}
}

// clusterWideWrites returns the rules that write Leases or
// ControllerRevisions in every namespace.
func clusterWideWrites(rules []rbacv1.PolicyRule) []string {
	var out []string
	for _, l := range lines(rules) {
		target, verbs, _ := strings.Cut(l, ": ")
		target, _, _ = strings.Cut(target, "[")
		if target != "coordination.k8s.io/leases" && target != "apps/controllerrevisions" && !strings.Contains(target, "*") {
			continue
		}
		for v := range strings.FieldsSeq(verbs) {
			if slices.Contains([]string{"create", "update", "patch", "delete", "deletecollection", "*"}, v) {
				out = append(out, l)
				break
			}
		}
	}
	return out
}

func TestRBAC_NoClusterWideLeaseOrControllerRevisionWrites(t *testing.T) {
	t.Parallel()
	objects, err := generate.Kustomize(filesys.MakeFsOnDisk(), repoRoot+"/config/default")
	if err != nil {
		t.Fatal(err)
	}
	clusterRoles := map[string][]rbacv1.PolicyRule{}
	for _, u := range objects {
		if u.GetKind() == "ClusterRole" {
			rules, err := decodeRules(u)
			if err != nil {
				t.Fatal(err)
			}
			clusterRoles[u.GetName()] = rules
		}
	}
	for _, u := range objects {
		if u.GetKind() != "ClusterRoleBinding" {
			continue
		}
		b := &rbacv1.ClusterRoleBinding{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, b); err != nil {
			t.Fatal(err)
		}
		if w := clusterWideWrites(clusterRoles[b.RoleRef.Name]); len(w) > 0 {
			t.Errorf("config/default: ClusterRoleBinding %s grants writes in every namespace: %v", b.Name, w)
		}
	}

	// What OLM v0 creates for the bundle in an AllNamespaces OperatorGroup,
	// the operator's only install mode, including the namespaced
	// permissions it lifts to the cluster.
	b := loadBundle(t)
	rendered, err := olm.Render(b.CSV, bundleObjects(b), olm.Install{Namespace: "operators", OperatorGroup: "global-operators"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range append(slices.Clone(rendered.ClusterRoles), rendered.LiftedClusterRoles...) {
		if w := clusterWideWrites(r.Rules); len(w) > 0 {
			t.Errorf("bundle: OLM's ClusterRole %s grants writes in every namespace: %v", r.Name, w)
		}
	}
	if len(rendered.LiftedClusterRoles) > 0 {
		t.Errorf("bundle: OLM lifts %d namespaced permission sets of the CSV to the cluster; ship them as Role manifests", len(rendered.LiftedClusterRoles))
	}
	for _, m := range rendered.Manifests {
		if m.GetKind() == "ClusterRoleBinding" {
			t.Errorf("bundle: manifest ClusterRoleBinding %s: cluster-wide grants belong in the CSV's clusterPermissions, where they are reviewed", m.GetName())
		}
		if m.GetKind() == "Role" || m.GetKind() == "RoleBinding" {
			if m.GetNamespace() != "operators" {
				t.Errorf("bundle: %s %s is installed in %q, not in the install namespace", m.GetKind(), m.GetName(), m.GetNamespace())
			}
		}
	}
	var leaseRole bool
	for _, m := range rendered.Manifests {
		if m.GetKind() != "Role" {
			continue
		}
		rules, err := decodeRules(m)
		if err != nil {
			t.Fatal(err)
		}
		leaseRole = leaseRole || slices.Contains(lines(rules), "coordination.k8s.io/leases[sidecarset-operator.apps.kruise.io]: get update")
	}
	if !leaseRole {
		t.Errorf("bundle: no Role in the install namespace grants get and update on the operator's Lease")
	}
}

func TestRBAC_NoAggregationIntoBuiltInRoles(t *testing.T) {
	t.Parallel()
	objects, err := generate.Kustomize(filesys.MakeFsOnDisk(), repoRoot+"/config/default")
	if err != nil {
		t.Fatal(err)
	}
	objects = append(objects, bundleObjects(loadBundle(t))...)
	for _, u := range objects {
		for k := range u.GetLabels() {
			if strings.HasPrefix(k, "rbac.authorization.k8s.io/aggregate-to-") {
				t.Errorf("%s %s has the label %s: writing or reading SidecarSets must be granted on purpose", u.GetKind(), u.GetName(), k)
			}
		}
		if u.GetKind() == "ClusterRole" {
			if _, found, _ := unstructured.NestedFieldNoCopy(u.Object, "aggregationRule"); found {
				t.Errorf("ClusterRole %s aggregates other roles", u.GetName())
			}
		}
	}
}

// TestRBAC_CertificateRightsOnlyWithSelfManagedCertificates: only a
// manager that issues its own certificate reads and writes a Secret (its
// certificate's) and the SidecarSet CRD (a patch can change all of it: the
// conversion webhook's CA bundle is what it writes); with cert-manager's or
// OLM's certificates, their issuer does both, and the manager gets nothing
// on Secrets or CustomResourceDefinitions.
func TestRBAC_CertificateRightsOnlyWithSelfManagedCertificates(t *testing.T) {
	t.Parallel()
	got := actual(t)
	for _, install := range []string{"config/default", "config/certmanager", "bundle"} {
		var granted []string
		for grantee, ls := range got[install] {
			for _, l := range ls {
				if strings.HasPrefix(l, "apiextensions.k8s.io/") || strings.HasPrefix(l, "core/secrets") {
					granted = append(granted, grantee+": "+l)
				}
			}
		}
		slices.Sort(granted)
		var want []string
		if install == "config/default" {
			want = []string{
				"ClusterRole sidecarset-operator-crd-conversion: apiextensions.k8s.io/customresourcedefinitions[sidecarsets.apps.kruise.io]: get patch",
				"Role kruise-system/sidecarset-operator-webhook-cert: core/secrets[sidecarset-operator-webhook-cert]: get list patch update watch",
			}
		}
		if diff := cmp.Diff(want, granted); diff != "" {
			t.Errorf("%s: rules on Secrets and CustomResourceDefinitions (-want +got):\n%s", install, diff)
		}
	}
}
