package validate

import (
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/sidecarset-operator/sidecarset-operator/hack/bundle/csv"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/names"
)

// OLMWebhookCertDir is where OLM mounts the webhook serving certificate
// (volume webhook-cert), the manager's default --webhook-cert-dir.
const OLMWebhookCertDir = "/tmp/k8s-webhook-server/serving-certs"

// maxFailClosedTimeout bounds the timeout of a fail-closed webhook: a slow
// operator must not hold every pod creation for Kubernetes' 30s maximum.
const maxFailClosedTimeout = 10

func invariantRules() []Rule {
	return []Rule{
		{Name: RuleWebhookDeployments, Doc: "Every webhook definition's deploymentName names a CSV deployment, and its target port is a port of that deployment's containers.", Check: checkWebhookDeployments},
		{Name: RuleWebhookRules, Doc: "No webhook rule targets all groups, OLM's group operators.coreos.com, or webhook configurations (OLM refuses such CSVs).", Check: checkWebhookRules},
		{Name: RulePodWebhookSelector, Doc: "A webhook on pods has an objectSelector that excludes the pods of the deployment serving it, so the operator can start before it has written its scope (which exempts its pods in its namespace only, and from which it then drops this objectSelector).", Check: checkPodWebhookSelector},
		{Name: RuleExternalCerts, Doc: "The containers serving webhooks run with --cert-source=external, --mutating-webhook-configuration= (find OLM's configurations by label), the pod webhooks scoped, and the default certificate directory, and mount nothing there: OLM mounts its certificate and names the webhook configurations.", Check: checkExternalCerts},
		{Name: RuleLeastPrivilege, Doc: "No permission of the deployments' service accounts (CSV or bundle roles) uses a wildcard, reads Secrets, writes validating webhook configurations, or does more to mutating ones than update (the pod webhooks' scope).", Check: checkLeastPrivilege},
		{Name: RuleNamespacedPermissions, Doc: "The CSV has no namespaced permissions (OLM lifts them to the cluster in AllNamespaces mode: writes are errors, reads warnings); namespaced grants ship as Role and RoleBinding manifests whose ServiceAccount subjects name no namespace.", Check: checkNamespacedPermissions},
		{Name: RuleAllNamespaces, Doc: "The AllNamespaces install mode is supported (SidecarSet is cluster-scoped; OLM v1 requires it).", Check: checkAllNamespaces},
		{Name: RuleWebhookTimeouts, Doc: "A fail-closed webhook times out within 10 seconds.", Check: checkWebhookTimeouts},
		{Name: RuleWebhookPaths, Doc: "The webhook paths are exactly the ones the manager serves.", Check: checkWebhookPaths},
	}
}

func checkWebhookDeployments(b *Bundle) []Finding {
	if b.CSV == nil {
		return nil
	}
	var out []Finding
	for _, w := range b.CSV.Spec.WebhookDefinitions {
		d := b.CSV.Deployment(w.DeploymentName)
		if d == nil {
			out = append(out, errorf("webhook %s: deploymentName %q names no deployment of the CSV", w.GenerateName, w.DeploymentName))
			continue
		}
		target := intstr.FromInt32(w.ContainerPort)
		if w.ContainerPort == 0 {
			target = intstr.FromInt32(443)
		}
		if w.TargetPort != nil {
			target = *w.TargetPort
		}
		if !hasContainerPort(d.Spec.Template.Spec.Containers, target) {
			out = append(out, errorf("webhook %s: target port %s is not a container port of deployment %s", w.GenerateName, target.String(), d.Name))
		}
	}
	return out
}

func hasContainerPort(containers []corev1.Container, port intstr.IntOrString) bool {
	for _, c := range containers {
		for _, p := range c.Ports {
			if (port.Type == intstr.Int && p.ContainerPort == port.IntVal) || (port.Type == intstr.String && p.Name == port.StrVal) {
				return true
			}
		}
	}
	return false
}

func checkWebhookRules(b *Bundle) []Finding {
	if b.CSV == nil {
		return nil
	}
	var out []Finding
	for _, w := range b.CSV.Spec.WebhookDefinitions {
		for _, r := range w.Rules {
			switch {
			case slices.Contains(r.APIGroups, "*"):
				out = append(out, errorf("webhook %s: a rule targets all API groups", w.GenerateName))
			case slices.Contains(r.APIGroups, "operators.coreos.com"):
				out = append(out, errorf("webhook %s: a rule targets OLM's group operators.coreos.com", w.GenerateName))
			case slices.Contains(r.APIGroups, "admissionregistration.k8s.io") && slices.ContainsFunc(r.Resources, func(res string) bool {
				res = strings.ToLower(res)
				return res == "*" || strings.HasPrefix(res, "mutatingwebhookconfiguration") || strings.HasPrefix(res, "validatingwebhookconfiguration")
			}):
				out = append(out, errorf("webhook %s: a rule targets webhook configurations", w.GenerateName))
			}
		}
	}
	return out
}

// targetsPods reports whether a webhook rule applies to pods.
func targetsPods(rules []admissionregistrationv1.RuleWithOperations) bool {
	for _, r := range rules {
		if !slices.Contains(r.APIGroups, "") && !slices.Contains(r.APIGroups, "*") {
			continue
		}
		for _, res := range r.Resources {
			if res == "pods" || res == "*" || strings.HasPrefix(res, "pods/") || res == "*/*" {
				return true
			}
		}
	}
	return false
}

func checkPodWebhookSelector(b *Bundle) []Finding {
	if b.CSV == nil {
		return nil
	}
	var out []Finding
	for _, w := range b.CSV.Spec.WebhookDefinitions {
		if !targetsPods(w.Rules) {
			continue
		}
		if w.ObjectSelector == nil {
			out = append(out, errorf("webhook %s on pods has no objectSelector: it would intercept the operator's own pods", w.GenerateName))
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(w.ObjectSelector)
		if err != nil {
			out = append(out, errorf("webhook %s: objectSelector: %v", w.GenerateName, err))
			continue
		}
		if d := b.CSV.Deployment(w.DeploymentName); d != nil && sel.Matches(labels.Set(d.Spec.Template.Labels)) {
			out = append(out, errorf("webhook %s: objectSelector %s matches the pods of deployment %s, which serve it", w.GenerateName, sel, d.Name))
		}
	}
	return out
}

// flagValue returns the value of a command-line flag in a container's
// arguments ("" and false when absent), in either --flag=value or
// --flag value form (a boolean flag given bare is "true").
func flagValue(args []string, name string) (string, bool) {
	value, found := "", false
	for i, a := range args {
		for _, flag := range []string{"--" + name, "-" + name} {
			switch {
			case strings.HasPrefix(a, flag+"="):
				value, found = strings.TrimPrefix(a, flag+"="), true
			case a == flag && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-"):
				value, found = args[i+1], true
			case a == flag:
				value, found = "true", true
			}
		}
	}
	return value, found
}

func checkExternalCerts(b *Bundle) []Finding {
	if b.CSV == nil {
		return nil
	}
	var out []Finding
	checked := map[string]bool{}
	for _, w := range b.CSV.Spec.WebhookDefinitions {
		d := b.CSV.Deployment(w.DeploymentName)
		if d == nil || checked[d.Name] {
			continue
		}
		checked[d.Name] = true
		for _, c := range d.Spec.Template.Spec.Containers {
			for _, m := range c.VolumeMounts {
				if strings.TrimSuffix(m.MountPath, "/") == OLMWebhookCertDir {
					out = append(out, errorf("deployment %s, container %s mounts %s at %s, where OLM mounts the webhook certificate", d.Name, c.Name, m.Name, OLMWebhookCertDir))
				}
			}
			if len(c.Ports) == 0 {
				continue
			}
			source, _ := flagValue(c.Args, "cert-source")
			dir, _ := flagValue(c.Args, "webhook-cert-dir")
			if scoped, _ := flagValue(c.Args, "scope-pod-webhook"); scoped == "false" {
				out = append(out, errorf("deployment %s, container %s runs with --scope-pod-webhook=false: the pod webhooks would receive every pod of the cluster, and refuse them all while the operator is down",
					d.Name, c.Name))
			}
			if name, found := flagValue(c.Args, "mutating-webhook-configuration"); !found || name != "" {
				out = append(out, errorf("deployment %s, container %s does not run with --mutating-webhook-configuration= (empty): OLM names the configurations itself, so the manager must find the pod webhooks by OLM's label to keep their scope",
					d.Name, c.Name))
			}
			if source != names.CertSourceExternal {
				if source == "" {
					source = names.CertSourceSelf + " (the default)"
				}
				out = append(out, errorf("deployment %s, container %s runs with --cert-source=%s: under OLM it must be %s (OLM issues the certificate and owns the webhook configurations)",
					d.Name, c.Name, source, names.CertSourceExternal))
			}
			if dir != "" && strings.TrimSuffix(dir, "/") != OLMWebhookCertDir {
				out = append(out, errorf("deployment %s, container %s reads its certificate from %s, not from %s where OLM mounts it", d.Name, c.Name, dir, OLMWebhookCertDir))
			}
		}
	}
	return out
}

func checkLeastPrivilege(b *Bundle) []Finding {
	var out []Finding
	for _, g := range accountGrants(b) {
		for _, r := range g.rules {
			who := "service account " + g.account + " (" + g.source + ")"
			if slices.Contains(r.APIGroups, rbacv1.APIGroupAll) || slices.Contains(r.Resources, rbacv1.ResourceAll) || slices.Contains(r.Verbs, rbacv1.VerbAll) {
				out = append(out, errorf("%s: a rule uses a wildcard: %v %v %v", who, r.APIGroups, r.Resources, r.Verbs))
				continue
			}
			if grants(r, "", "secrets", "get", "list", "watch", "create", "update", "patch", "delete", "deletecollection") {
				out = append(out, errorf("%s may access Secrets: the manager reads none under OLM", who))
			}
			// The pod webhooks' scope is written by update into the
			// mutating configurations OLM created: nothing more.
			if grants(r, "admissionregistration.k8s.io", "mutatingwebhookconfigurations", "create", "patch", "delete", "deletecollection") {
				out = append(out, errorf("%s may create, patch or delete mutatingwebhookconfigurations: it only updates the pod webhooks' scope", who))
			}
			if grants(r, "admissionregistration.k8s.io", "validatingwebhookconfigurations", "create", "update", "patch", "delete", "deletecollection") {
				out = append(out, errorf("%s may change validatingwebhookconfigurations, which OLM owns", who))
			}
		}
	}
	return out
}

func checkAllNamespaces(b *Bundle) []Finding {
	if b.CSV == nil || b.CSV.Supports(csv.InstallModeAllNamespaces) {
		return nil
	}
	return []Finding{errorf("the AllNamespaces install mode is not supported")}
}

func checkWebhookTimeouts(b *Bundle) []Finding {
	if b.CSV == nil {
		return nil
	}
	var out []Finding
	for _, w := range b.CSV.Spec.WebhookDefinitions {
		failClosed := w.FailurePolicy == nil || *w.FailurePolicy == admissionregistrationv1.Fail
		if failClosed && w.TimeoutSeconds != nil && *w.TimeoutSeconds > maxFailClosedTimeout {
			out = append(out, warnf("webhook %s fails closed with a %ds timeout; keep it within %ds", w.GenerateName, *w.TimeoutSeconds, maxFailClosedTimeout))
		}
	}
	return out
}

// servedPaths are the paths the manager's webhook server handles for the
// shipped configurations.
func servedPaths() []string {
	return names.RoutedPaths()
}

func checkWebhookPaths(b *Bundle) []Finding {
	if b.CSV == nil {
		return nil
	}
	var out []Finding
	defined := map[string]bool{}
	for _, w := range b.CSV.Spec.WebhookDefinitions {
		p := "/"
		if w.WebhookPath != nil {
			p = *w.WebhookPath
		}
		defined[p] = true
		if !slices.Contains(servedPaths(), p) {
			out = append(out, errorf("webhook %s: the manager serves nothing at %s", w.GenerateName, p))
		}
	}
	for _, p := range servedPaths() {
		if !defined[p] {
			out = append(out, errorf("the manager serves %s but no webhook definition routes to it", p))
		}
	}
	return out
}
