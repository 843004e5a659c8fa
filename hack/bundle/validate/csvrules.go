package validate

import (
	"encoding/json"
	"strings"

	"github.com/blang/semver/v4"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/sidecarset-operator/sidecarset-operator/hack/bundle/csv"
	"github.com/sidecarset-operator/sidecarset-operator/hack/bundle/layout"
)

func csvRules() []Rule {
	return []Rule{
		{Name: RuleCSVSchema, Doc: "The CSV is operators.coreos.com/v1alpha1 ClusterServiceVersion and has only known fields (decoding errors are reported while loading).", Check: checkCSVSchema},
		{Name: RuleCSVName, Doc: "The CSV is named <package>.v<semver>, a DNS-1123 subdomain, and spec.version is that version.", Check: checkCSVName},
		{Name: RuleCSVReplaces, Doc: "spec.replaces, if set, names an older version of the same package.", Check: checkCSVReplaces},
		{Name: RuleALMExamples, Doc: "alm-examples is a JSON list of objects of owned APIs (an owned API without an example is a warning).", Check: checkALMExamples},
		{Name: RuleInstallModes, Doc: "installModes lists known types once each, at least one supported; a conversion webhook requires AllNamespaces only.", Check: checkInstallModes},
		{Name: RuleMinKubeVersion, Doc: "minKubeVersion is semver (missing is a warning).", Check: checkMinKubeVersion},
		{Name: RuleInstallStrategy, Doc: "The install strategy is deployment, with at least one valid deployment whose selector matches its pod template; permissions name a deployment's service account.", Check: checkInstallStrategy},
		{Name: RuleWebhookDefinitions, Doc: "Every webhook definition has a valid name, type, side effects, review versions, ports and path.", Check: checkWebhookDefinitions},
	}
}

func checkCSVSchema(b *Bundle) []Finding {
	if b.CSV == nil {
		return nil
	}
	var out []Finding
	if b.CSV.APIVersion != csv.APIVersion {
		out = append(out, errorf("apiVersion is %q, want %q", b.CSV.APIVersion, csv.APIVersion))
	}
	if b.CSV.Kind != csv.Kind {
		out = append(out, errorf("kind is %q, want %q", b.CSV.Kind, csv.Kind))
	}
	return out
}

func checkCSVName(b *Bundle) []Finding {
	c := b.CSV
	if c == nil {
		return nil
	}
	var out []Finding
	for _, msg := range validation.IsDNS1123Subdomain(c.Metadata.Name) {
		out = append(out, errorf("name %q: %s", c.Metadata.Name, msg))
	}
	pkg, v, ok := strings.Cut(c.Metadata.Name, ".v")
	if !ok {
		return append(out, errorf("name %q is not <package>.v<version>", c.Metadata.Name))
	}
	if want := b.Annotations[layout.AnnotationPackage]; want != "" && pkg != want {
		out = append(out, errorf("name %q is not of the package %q", c.Metadata.Name, want))
	}
	version, err := semver.Parse(v)
	if err != nil {
		return append(out, errorf("name %q: version %q is not semver: %v", c.Metadata.Name, v, err))
	}
	if c.Spec.Version == "" {
		return append(out, errorf("spec.version is not set"))
	}
	specVersion, err := semver.Parse(c.Spec.Version)
	if err != nil {
		return append(out, errorf("spec.version %q is not semver: %v", c.Spec.Version, err))
	}
	if !specVersion.EQ(version) {
		out = append(out, errorf("spec.version %s differs from the version in the name, %s", specVersion, version))
	}
	return out
}

func checkCSVReplaces(b *Bundle) []Finding {
	c := b.CSV
	if c == nil || c.Spec.Replaces == "" {
		return nil
	}
	pkg, v, ok := strings.Cut(c.Spec.Replaces, ".v")
	if !ok {
		return []Finding{errorf("replaces %q is not <package>.v<version>", c.Spec.Replaces)}
	}
	var out []Finding
	for _, msg := range validation.IsDNS1123Subdomain(c.Spec.Replaces) {
		out = append(out, errorf("replaces %q: %s", c.Spec.Replaces, msg))
	}
	if namePkg, _, _ := strings.Cut(c.Metadata.Name, ".v"); pkg != namePkg {
		out = append(out, errorf("replaces %q is another package than %q", c.Spec.Replaces, c.Metadata.Name))
	}
	replaced, err := semver.Parse(v)
	if err != nil {
		return append(out, errorf("replaces %q: %q is not semver", c.Spec.Replaces, v))
	}
	if current, err := semver.Parse(c.Spec.Version); err == nil && !replaced.LT(current) {
		out = append(out, errorf("replaces %s, which is not older than %s", replaced, current))
	}
	return out
}

// ownedGVKs are the group, version and kind of every owned API.
func ownedGVKs(c *csv.ClusterServiceVersion) map[schema.GroupVersionKind]bool {
	out := map[schema.GroupVersionKind]bool{}
	for _, d := range c.Spec.CustomResourceDefinitions.Owned {
		_, group, _ := strings.Cut(d.Name, ".")
		out[schema.GroupVersionKind{Group: group, Version: d.Version, Kind: d.Kind}] = true
	}
	return out
}

// Examples decodes the alm-examples annotation.
func Examples(c *csv.ClusterServiceVersion) ([]*unstructured.Unstructured, error) {
	var list []map[string]any
	if err := json.Unmarshal([]byte(c.Metadata.Annotations[csv.AnnotationALMExamples]), &list); err != nil {
		return nil, err
	}
	out := make([]*unstructured.Unstructured, 0, len(list))
	for _, m := range list {
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	return out, nil
}

func checkALMExamples(b *Bundle) []Finding {
	c := b.CSV
	if c == nil {
		return nil
	}
	if _, ok := c.Metadata.Annotations[csv.AnnotationALMExamples]; !ok {
		return []Finding{warnf("there is no alm-examples annotation")}
	}
	examples, err := Examples(c)
	if err != nil {
		return []Finding{errorf("alm-examples is not a JSON list of objects: %v", err)}
	}
	owned := ownedGVKs(c)
	seen := map[schema.GroupVersionKind]bool{}
	var out []Finding
	for i, e := range examples {
		gvk := e.GroupVersionKind()
		if !owned[gvk] {
			out = append(out, errorf("alm-examples[%d] is a %s, not an owned API", i, gvk))
		}
		if e.GetName() == "" {
			out = append(out, errorf("alm-examples[%d] has no metadata.name", i))
		}
		seen[gvk] = true
	}
	for _, d := range c.Spec.CustomResourceDefinitions.Owned {
		_, group, _ := strings.Cut(d.Name, ".")
		if gvk := (schema.GroupVersionKind{Group: group, Version: d.Version, Kind: d.Kind}); !seen[gvk] {
			out = append(out, warnf("owned API %s has no example in alm-examples", gvk))
		}
	}
	return out
}

func checkInstallModes(b *Bundle) []Finding {
	c := b.CSV
	if c == nil {
		return nil
	}
	if len(c.Spec.InstallModes) == 0 {
		return []Finding{errorf("installModes is empty")}
	}
	var out []Finding
	seen := map[string]bool{}
	supported := 0
	for _, m := range c.Spec.InstallModes {
		switch m.Type {
		case csv.InstallModeOwnNamespace, csv.InstallModeSingleNamespace, csv.InstallModeMultiNamespace, csv.InstallModeAllNamespaces:
		default:
			out = append(out, errorf("install mode %q is not a known type", m.Type))
		}
		if seen[m.Type] {
			out = append(out, errorf("install mode %s is listed twice", m.Type))
		}
		seen[m.Type] = true
		if m.Supported {
			supported++
		}
	}
	if supported == 0 {
		out = append(out, errorf("no install mode is supported"))
	}
	for _, w := range c.Spec.WebhookDefinitions {
		if w.Type != csv.ConversionWebhook {
			continue
		}
		for _, m := range c.Spec.InstallModes {
			if m.Supported != (m.Type == csv.InstallModeAllNamespaces) {
				out = append(out, errorf("conversion webhook %s requires AllNamespaces to be the only supported install mode", w.GenerateName))
				break
			}
		}
	}
	return out
}

func checkMinKubeVersion(b *Bundle) []Finding {
	if b.CSV == nil {
		return nil
	}
	v := b.CSV.Spec.MinKubeVersion
	if v == "" {
		return []Finding{warnf("minKubeVersion is not set")}
	}
	if _, err := semver.Parse(v); err != nil {
		return []Finding{errorf("minKubeVersion %q is not semver: %v", v, err)}
	}
	return nil
}

func checkInstallStrategy(b *Bundle) []Finding {
	c := b.CSV
	if c == nil {
		return nil
	}
	var out []Finding
	if c.Spec.Install.Strategy != csv.InstallStrategyDeployment {
		out = append(out, errorf("install strategy %q is not %q", c.Spec.Install.Strategy, csv.InstallStrategyDeployment))
	}
	deployments := c.Spec.Install.Spec.Deployments
	if len(deployments) == 0 {
		return append(out, errorf("the install strategy has no deployment"))
	}
	accounts := map[string]bool{}
	names := map[string]bool{}
	for _, d := range deployments {
		for _, msg := range validation.IsDNS1123Subdomain(d.Name) {
			out = append(out, errorf("deployment name %q: %s", d.Name, msg))
		}
		if names[d.Name] {
			out = append(out, errorf("deployment %s is listed twice", d.Name))
		}
		names[d.Name] = true
		sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		switch {
		case d.Spec.Selector == nil || err != nil || sel.Empty():
			out = append(out, errorf("deployment %s has no valid selector", d.Name))
		case !sel.Matches(labels.Set(d.Spec.Template.Labels)):
			out = append(out, errorf("deployment %s: the selector does not match the pod template's labels", d.Name))
		}
		if len(d.Spec.Template.Spec.Containers) == 0 {
			out = append(out, errorf("deployment %s has no container", d.Name))
		}
		sa := d.Spec.Template.Spec.ServiceAccountName
		if sa == "" {
			sa = "default"
		}
		accounts[sa] = true
	}
	for _, p := range append(append([]csv.Permissions{}, c.Spec.Install.Spec.Permissions...), c.Spec.Install.Spec.ClusterPermissions...) {
		if !accounts[p.ServiceAccountName] {
			out = append(out, warnf("permissions are granted to service account %q, which no deployment runs as", p.ServiceAccountName))
		}
	}
	return out
}

func checkWebhookDefinitions(b *Bundle) []Finding {
	c := b.CSV
	if c == nil {
		return nil
	}
	var out []Finding
	names := map[string]bool{}
	for _, w := range c.Spec.WebhookDefinitions {
		for _, msg := range validation.IsDNS1123Subdomain(w.GenerateName) {
			out = append(out, errorf("webhook %q: generateName: %s", w.GenerateName, msg))
		}
		if names[w.GenerateName] {
			out = append(out, errorf("webhook %s is defined twice", w.GenerateName))
		}
		names[w.GenerateName] = true
		switch w.Type {
		case csv.MutatingAdmissionWebhook, csv.ValidatingAdmissionWebhook:
			if len(w.Rules) == 0 {
				out = append(out, errorf("webhook %s has no rules", w.GenerateName))
			}
		case csv.ConversionWebhook:
			if len(w.ConversionCRDs) == 0 {
				out = append(out, errorf("conversion webhook %s names no CRD", w.GenerateName))
			}
		default:
			out = append(out, errorf("webhook %s: type %q is not a webhook type", w.GenerateName, w.Type))
		}
		if w.SideEffects == nil || (*w.SideEffects != admissionregistrationv1.SideEffectClassNone && *w.SideEffects != admissionregistrationv1.SideEffectClassNoneOnDryRun) {
			out = append(out, errorf("webhook %s: sideEffects must be None or NoneOnDryRun", w.GenerateName))
		}
		if len(w.AdmissionReviewVersions) == 0 {
			out = append(out, errorf("webhook %s has no admissionReviewVersions", w.GenerateName))
		}
		if w.ContainerPort < 0 || w.ContainerPort > 65535 {
			out = append(out, errorf("webhook %s: containerPort %d is out of range", w.GenerateName, w.ContainerPort))
		}
		if w.WebhookPath != nil && !strings.HasPrefix(*w.WebhookPath, "/") {
			out = append(out, errorf("webhook %s: webhookPath %q does not start with /", w.GenerateName, *w.WebhookPath))
		}
		if w.TimeoutSeconds != nil && (*w.TimeoutSeconds < 1 || *w.TimeoutSeconds > 30) {
			out = append(out, errorf("webhook %s: timeoutSeconds %d is not within 1..30", w.GenerateName, *w.TimeoutSeconds))
		}
		if w.DeploymentName == "" {
			out = append(out, errorf("webhook %s has no deploymentName", w.GenerateName))
		}
	}
	return out
}
