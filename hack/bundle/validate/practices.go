package validate

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/sidecarset-operator/sidecarset-operator/hack/bundle/csv"
	"github.com/sidecarset-operator/sidecarset-operator/hack/bundle/layout"
)

func practiceRules() []Rule {
	return []Rule{
		{Name: RuleResourceRequests, Doc: "Every container requests CPU and memory.", Check: checkResourceRequests},
		{Name: RuleCRDDescriptions, Doc: "Every owned API has a display name and a description.", Check: checkCRDDescriptions},
		{Name: RuleChannelNames, Doc: "Channel names start with candidate, fast or stable.", Check: checkChannelNames},
		{Name: RuleCRDRBAC, Doc: "No permission creates, changes or deletes CustomResourceDefinitions (OLM manages them).", Check: checkCRDRBAC},
	}
}

func checkResourceRequests(b *Bundle) []Finding {
	if b.CSV == nil {
		return nil
	}
	var out []Finding
	for _, d := range b.CSV.Spec.Install.Spec.Deployments {
		spec := d.Spec.Template.Spec
		for _, c := range append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...) {
			for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				if _, ok := c.Resources.Requests[r]; !ok {
					out = append(out, warnf("deployment %s, container %s requests no %s", d.Name, c.Name, r))
				}
			}
		}
	}
	return out
}

func checkCRDDescriptions(b *Bundle) []Finding {
	if b.CSV == nil {
		return nil
	}
	var out []Finding
	for _, d := range b.CSV.Spec.CustomResourceDefinitions.Owned {
		if d.DisplayName == "" {
			out = append(out, warnf("owned API %s has no displayName", d.Name))
		}
		if strings.TrimSpace(d.Description) == "" {
			out = append(out, warnf("owned API %s has no description", d.Name))
		}
	}
	return out
}

func checkChannelNames(b *Bundle) []Finding {
	var out []Finding
	for _, c := range splitList(b.Annotations[layout.AnnotationChannels]) {
		if !strings.HasPrefix(c, "candidate") && !strings.HasPrefix(c, "fast") && !strings.HasPrefix(c, "stable") {
			out = append(out, warnf("channel %q does not follow the convention (candidate, fast or stable prefix)", c))
		}
	}
	return out
}

// allPermissions are the permissions and cluster permissions of the CSV.
func allPermissions(c *csv.ClusterServiceVersion) []csv.Permissions {
	return append(append([]csv.Permissions{}, c.Spec.Install.Spec.Permissions...), c.Spec.Install.Spec.ClusterPermissions...)
}

// grants reports whether a rule allows one of the verbs on a resource of a
// group, wildcards included.
func grants(r rbacv1.PolicyRule, group, resource string, verbs ...string) bool {
	if !slices.Contains(r.APIGroups, group) && !slices.Contains(r.APIGroups, rbacv1.APIGroupAll) {
		return false
	}
	if !slices.Contains(r.Resources, resource) && !slices.Contains(r.Resources, rbacv1.ResourceAll) {
		return false
	}
	if slices.Contains(r.Verbs, rbacv1.VerbAll) {
		return true
	}
	for _, v := range verbs {
		if slices.Contains(r.Verbs, v) {
			return true
		}
	}
	return false
}

func checkCRDRBAC(b *Bundle) []Finding {
	if b.CSV == nil {
		return nil
	}
	var out []Finding
	for _, p := range allPermissions(b.CSV) {
		for _, r := range p.Rules {
			if grants(r, "apiextensions.k8s.io", "customresourcedefinitions", "create", "update", "patch", "delete", "deletecollection") {
				out = append(out, warnf("service account %s may change CustomResourceDefinitions", p.ServiceAccountName))
			}
		}
	}
	return out
}
