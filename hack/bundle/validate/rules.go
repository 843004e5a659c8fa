package validate

import (
	"fmt"
	"maps"
	"slices"
)

// Severity says whether a finding fails validation.
type Severity string

// Severities.
const (
	// Error fails validation: OLM or OperatorHub would reject the bundle, or
	// it would install something broken or unsafe.
	Error Severity = "error"
	// Warning is printed: a convention is not followed.
	Warning Severity = "warning"
)

// Finding is one problem a rule found.
type Finding struct {
	Rule     string
	Severity Severity
	Message  string
}

// String formats a finding for a terminal.
func (f Finding) String() string {
	return fmt.Sprintf("%s [%s] %s", f.Severity, f.Rule, f.Message)
}

// Rule names, grouped as OperatorHub groups its validators, plus ours.
const (
	RuleManifestsDir    = "format/manifests-dir"
	RuleManifestsFlat   = "format/manifests-flat"
	RuleAnnotationsFile = "format/annotations-file"
	RuleAnnotations     = "format/annotations"
	RuleDockerfile      = "format/dockerfile"
	RuleParse           = "format/parse"
	RuleSupportedKinds  = "format/supported-kinds"
	RuleObjectMetadata  = "format/object-metadata"
	RuleSize            = "format/size"

	RuleOneCSV          = "bundle/one-csv"
	RuleOwnedCRDs       = "bundle/owned-crds"
	RuleServiceAccounts = "bundle/service-accounts"
	RuleRelatedImages   = "bundle/related-images"

	RuleCSVSchema          = "csv/schema"
	RuleCSVName            = "csv/name-version"
	RuleCSVReplaces        = "csv/replaces"
	RuleALMExamples        = "csv/alm-examples"
	RuleInstallModes       = "csv/install-modes"
	RuleMinKubeVersion     = "csv/min-kube-version"
	RuleInstallStrategy    = "csv/install-strategy"
	RuleWebhookDefinitions = "csv/webhook-definitions"

	RuleCRDValid      = "crd/valid"
	RuleCRDCELMinKube = "crd/cel-min-kube-version"
	RuleCRDAPIServer  = "crd/apiserver"
	RuleExamplesAPI   = "crd/examples-apiserver"

	RuleProvider       = "operatorhub/provider"
	RuleMaintainers    = "operatorhub/maintainers"
	RuleLinks          = "operatorhub/links"
	RuleIcon           = "operatorhub/icon"
	RuleHubAnnotations = "operatorhub/annotations"
	RuleHubSpec        = "operatorhub/spec-fields"
	RuleCapabilities   = "operatorhub/capabilities"
	RuleCategories     = "operatorhub/categories"
	RuleDeprecatedAPIs = "operatorhub/deprecated-apis"

	RuleResourceRequests = "good-practices/resource-requests"
	RuleCRDDescriptions  = "good-practices/crd-descriptions"
	RuleChannelNames     = "good-practices/channel-names"
	RuleCRDRBAC          = "good-practices/crd-rbac"

	RuleWebhookDeployments    = "sidecarset/webhook-deployments"
	RuleWebhookRules          = "sidecarset/webhook-rules"
	RulePodWebhookSelector    = "sidecarset/pod-webhook-object-selector"
	RuleExternalCerts         = "sidecarset/external-certs"
	RuleLeastPrivilege        = "sidecarset/least-privilege"
	RuleNamespacedPermissions = "sidecarset/namespaced-permissions"
	RuleAllNamespaces         = "sidecarset/all-namespaces"
	RuleWebhookTimeouts       = "sidecarset/webhook-timeouts"
	RuleWebhookPaths          = "sidecarset/webhook-paths"
)

// Rule is one offline check.
type Rule struct {
	// Name is the rule's name in findings.
	Name string
	// Doc says what the rule requires.
	Doc string
	// Check returns the rule's findings; their Rule field is filled in.
	Check func(b *Bundle) []Finding
}

// Rules returns every offline rule, in the order they run.
func Rules() []Rule {
	var rules []Rule
	rules = append(rules, formatRules()...)
	rules = append(rules, bundleRules()...)
	rules = append(rules, csvRules()...)
	rules = append(rules, crdRules()...)
	rules = append(rules, crdCELRules()...)
	rules = append(rules, hubRules()...)
	rules = append(rules, practiceRules()...)
	rules = append(rules, invariantRules()...)
	return rules
}

// Validate runs every offline rule and returns the findings: load problems
// first, then each rule's in rule order.
func Validate(b *Bundle) []Finding {
	var findings []Finding
	findings = append(findings, b.LoadFindings...)
	for _, r := range Rules() {
		for _, f := range r.Check(b) {
			f.Rule = r.Name
			findings = append(findings, f)
		}
	}
	return findings
}

// Errors returns the findings of severity Error.
func Errors(findings []Finding) []Finding {
	var out []Finding
	for _, f := range findings {
		if f.Severity == Error {
			out = append(out, f)
		}
	}
	return out
}

func errorf(format string, args ...any) Finding {
	return Finding{Severity: Error, Message: fmt.Sprintf(format, args...)}
}

func warnf(format string, args ...any) Finding {
	return Finding{Severity: Warning, Message: fmt.Sprintf(format, args...)}
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
