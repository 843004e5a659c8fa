package validate

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/sidecarset-operator/sidecarset-operator/hack/bundle/csv"
	"github.com/sidecarset-operator/sidecarset-operator/hack/bundle/layout"
)

// loadValid loads testdata/valid, a small bundle that passes every rule.
func loadValid(t *testing.T) *Bundle {
	t.Helper()
	df, err := os.ReadFile("testdata/valid.Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Load(os.DirFS("testdata/valid"), df)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// summary is the sorted, de-duplicated "severity rule" list of findings.
func summary(findings []Finding) []string {
	var out []string
	for _, f := range findings {
		s := string(f.Severity) + " " + f.Rule
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// setAnnotation changes an annotation and the matching Dockerfile label.
func setAnnotation(b *Bundle, key, value string) {
	if value == "" {
		delete(b.Annotations, key)
		delete(b.Dockerfile.Labels, key)
		return
	}
	b.Annotations[key] = value
	b.Dockerfile.Labels[key] = value
}

func removeFile(b *Bundle, file string) {
	b.Files = slices.DeleteFunc(b.Files, func(f string) bool { return f == file })
}

func object(apiVersion, kind, name string) Object {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetName(name)
	return Object{File: "manifests/" + name + ".yaml", Unstructured: u}
}

// bundleObject returns the manifest of that kind and name.
func bundleObject(b *Bundle, kind, name string) *unstructured.Unstructured {
	for _, o := range b.Objects {
		if o.GetKind() == kind && o.GetName() == name {
			return o.Unstructured
		}
	}
	panic("no " + kind + " " + name + " in the test bundle")
}

func crdObject(b *Bundle) *unstructured.Unstructured {
	for _, o := range b.Objects {
		if o.GetKind() == "CustomResourceDefinition" {
			return o.Unstructured
		}
	}
	panic("no CRD in the test bundle")
}

// addNamespaceRule gives the CRD's spec a namespace field and a rule that
// reads it as self.namespace.
func addNamespaceRule(t *testing.T, b *Bundle) {
	t.Helper()
	versions, _, _ := unstructured.NestedSlice(crdObject(b).Object, "spec", "versions")
	v := versions[0].(map[string]any)
	if err := unstructured.SetNestedField(v, map[string]any{"type": "string"}, "schema", "openAPIV3Schema", "properties", "spec", "properties", "namespace"); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(v, []any{map[string]any{"rule": "!has(self.namespace) || size(self.namespace) > 0", "message": "m"}},
		"schema", "openAPIV3Schema", "properties", "spec", "x-kubernetes-validations"); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedSlice(crdObject(b).Object, versions, "spec", "versions"); err != nil {
		t.Fatal(err)
	}
}

func deployment(b *Bundle) *csv.DeploymentSpec {
	return &b.CSV.Spec.Install.Spec.Deployments[0]
}

func manager(b *Bundle) *corev1.Container {
	return &deployment(b).Spec.Template.Spec.Containers[0]
}

// webhook returns the webhook definition of that generateName.
func webhook(b *Bundle, name string) *csv.WebhookDescription {
	for i := range b.CSV.Spec.WebhookDefinitions {
		if b.CSV.Spec.WebhookDefinitions[i].GenerateName == name {
			return &b.CSV.Spec.WebhookDefinitions[i]
		}
	}
	panic("no webhook " + name)
}

const (
	podWebhook      = "mpod.example.com"
	defaultWebhook  = "msidecarset.example.com"
	validateWebhook = "vsidecarset.example.com"
)

func TestValidate_ValidBundle(t *testing.T) {
	t.Parallel()
	b := loadValid(t)
	if diff := cmp.Diff([]string(nil), summary(Validate(b))); diff != "" {
		t.Errorf("findings of the valid bundle (-want +got):\n%s\n%v", diff, Validate(b))
	}
}

func TestValidate_FormatRules(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		mutate func(b *Bundle)
		want   []string
	}{
		{"a bundle without manifests fails", func(b *Bundle) {
			b.Files = slices.DeleteFunc(b.Files, func(f string) bool { return strings.HasPrefix(f, "manifests/") })
		}, []string{"error " + RuleManifestsDir}},
		{"a subdirectory of manifests fails", func(b *Bundle) {
			b.Files = append(b.Files, "manifests/extra/", "manifests/extra/x.yaml")
		}, []string{"error " + RuleManifestsFlat}},
		{"a hidden file in manifests fails", func(b *Bundle) { b.Files = append(b.Files, "manifests/.cache.yaml") }, []string{"error " + RuleManifestsFlat}},
		{"a missing annotations.yaml fails", func(b *Bundle) { removeFile(b, layout.AnnotationsFile) }, []string{"error " + RuleAnnotationsFile}},
		{"a media type other than registry+v1 fails", func(b *Bundle) { setAnnotation(b, layout.AnnotationMediaType, "plain") }, []string{"error " + RuleAnnotations}},
		{"a missing package annotation fails", func(b *Bundle) { setAnnotation(b, layout.AnnotationPackage, "") }, []string{"error " + RuleAnnotations}},
		{"a manifests directory other than manifests/ fails", func(b *Bundle) {
			setAnnotation(b, layout.AnnotationManifests, "yaml/")
		}, []string{"error " + RuleAnnotations, "error " + RuleDockerfile}},
		{"a default channel outside the channels fails", func(b *Bundle) { setAnnotation(b, layout.AnnotationDefaultChannel, "fast") }, []string{"error " + RuleAnnotations}},
		{"a test configuration directory without files fails", func(b *Bundle) { removeFile(b, layout.ScorecardFile) }, []string{"error " + RuleAnnotations}},
		{"a Dockerfile label differing from its annotation fails", func(b *Bundle) {
			b.Dockerfile.Labels[layout.AnnotationChannels] = "stable"
		}, []string{"error " + RuleDockerfile}},
		{"a Dockerfile without a label of an annotation fails", func(b *Bundle) {
			delete(b.Dockerfile.Labels, layout.AnnotationPackage)
		}, []string{"error " + RuleDockerfile}},
		{"a Dockerfile bundle label missing from the annotations fails", func(b *Bundle) {
			b.Dockerfile.Labels["operators.operatorframework.io.bundle.extra.v1"] = "x"
		}, []string{"error " + RuleDockerfile}},
		{"a Dockerfile that does not copy the manifests fails", func(b *Bundle) {
			b.Dockerfile.Copies = b.Dockerfile.Copies[1:]
		}, []string{"error " + RuleDockerfile}},
		{"a Deployment manifest fails", func(b *Bundle) {
			b.Objects = append(b.Objects, object("apps/v1", "Deployment", "widget"))
		}, []string{"error " + RuleSupportedKinds}},
		{"an invalid object name fails", func(b *Bundle) {
			b.Objects = append(b.Objects, object("v1", "ConfigMap", "Widget_Config"))
		}, []string{"error " + RuleObjectMetadata}},
		{"a namespaced manifest warns that OLM ignores its namespace", func(b *Bundle) {
			b.Objects[len(b.Objects)-1].SetNamespace("kruise-system")
		}, []string{"warning " + RuleObjectMetadata}},
		{"a bundle over 1 MiB compressed fails", func(b *Bundle) { b.CompressedSize = 2 << 20 }, []string{"error " + RuleSize}},
		{"a bundle over 85% of the limit warns", func(b *Bundle) { b.CompressedSize = 900_000 }, []string{"warning " + RuleSize}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := loadValid(t)
			tc.mutate(b)
			if diff := cmp.Diff(tc.want, summary(Validate(b))); diff != "" {
				t.Errorf("findings (-want +got):\n%s\n%v", diff, Validate(b))
			}
		})
	}
}

func TestValidate_BundleAndCSVRules(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		mutate func(b *Bundle)
		want   []string
	}{
		{"a bundle without a CSV fails", func(b *Bundle) { b.CSV, b.CSVFiles = nil, nil }, []string{"error " + RuleOneCSV}},
		{"a bundle with two CSVs fails", func(b *Bundle) { b.CSVFiles = append(b.CSVFiles, "manifests/other.yaml") }, []string{"error " + RuleOneCSV}},
		{"an owned CRD missing from the bundle fails", func(b *Bundle) {
			b.CSV.Spec.CustomResourceDefinitions.Owned = append(b.CSV.Spec.CustomResourceDefinitions.Owned,
				csv.CRDDescription{Name: "gadgets.apps.kruise.io", Version: "v1", Kind: "Gadget", DisplayName: "Gadget", Description: "A gadget."})
		}, []string{"error " + RuleOwnedCRDs, "warning " + RuleALMExamples}},
		{"a CRD the CSV does not own fails", func(b *Bundle) {
			b.CSV.Spec.CustomResourceDefinitions.Owned = nil
		}, []string{"error " + RuleOwnedCRDs, "error " + RuleALMExamples}},
		{"an owned CRD naming another kind fails", func(b *Bundle) {
			b.CSV.Spec.CustomResourceDefinitions.Owned[0].Kind = "Sidecar"
		}, []string{"error " + RuleOwnedCRDs, "error " + RuleALMExamples, "warning " + RuleALMExamples}},
		{"a CRD twice fails", func(b *Bundle) {
			dup := object("apiextensions.k8s.io/v1", "CustomResourceDefinition", "dup")
			dup.Unstructured = crdObject(b).DeepCopy()
			b.Objects = append(b.Objects, dup)
		}, []string{"error " + RuleOwnedCRDs}},
		{"a ServiceAccount manifest of the deployment's account fails", func(b *Bundle) {
			b.Objects = append(b.Objects, object("v1", "ServiceAccount", "widget-operator"))
		}, []string{"error " + RuleServiceAccounts}},
		{"a related image that is not a reference fails", func(b *Bundle) {
			b.CSV.Spec.RelatedImages[0].Image = "Example.com/UPPER:tag"
		}, []string{"error " + RuleRelatedImages}},
		{"an empty related image fails", func(b *Bundle) { b.CSV.Spec.RelatedImages[0].Image = "" }, []string{"error " + RuleRelatedImages}},
		{"a CSV of another kind fails", func(b *Bundle) { b.CSV.Kind = "ServiceVersion" }, []string{"error " + RuleCSVSchema}},
		{"a CSV name without a semver fails", func(b *Bundle) { b.CSV.Metadata.Name = "widget-operator.v1.2" }, []string{"error " + RuleCSVName}},
		{"a CSV name of another package fails", func(b *Bundle) { b.CSV.Metadata.Name = "gadget-operator.v1.2.0" }, []string{"error " + RuleCSVName, "error " + RuleCSVReplaces}},
		{"a spec.version differing from the name fails", func(b *Bundle) { b.CSV.Spec.Version = "1.3.0" }, []string{"error " + RuleCSVName}},
		{"replacing a newer version fails", func(b *Bundle) { b.CSV.Spec.Replaces = "widget-operator.v1.3.0" }, []string{"error " + RuleCSVReplaces}},
		{"replacing another package fails", func(b *Bundle) { b.CSV.Spec.Replaces = "gadget-operator.v1.0.0" }, []string{"error " + RuleCSVReplaces}},
		{"alm-examples that are not JSON fail", func(b *Bundle) {
			b.CSV.Metadata.Annotations[csv.AnnotationALMExamples] = "[{"
		}, []string{"error " + RuleALMExamples}},
		{"an example of an API the CSV does not own fails", func(b *Bundle) {
			b.CSV.Metadata.Annotations[csv.AnnotationALMExamples] = `[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}},` +
				`{"apiVersion":"apps.kruise.io/v1alpha1","kind":"SidecarSet","metadata":{"name":"s"}}]`
		}, []string{"error " + RuleALMExamples}},
		{"an owned API without example warns", func(b *Bundle) {
			b.CSV.Metadata.Annotations[csv.AnnotationALMExamples] = "[]"
		}, []string{"warning " + RuleALMExamples}},
		{"an install mode listed twice fails", func(b *Bundle) {
			b.CSV.Spec.InstallModes = append(b.CSV.Spec.InstallModes, csv.InstallMode{Type: csv.InstallModeAllNamespaces, Supported: true})
		}, []string{"error " + RuleInstallModes}},
		{"an unknown install mode fails", func(b *Bundle) {
			b.CSV.Spec.InstallModes = append(b.CSV.Spec.InstallModes, csv.InstallMode{Type: "ClusterWide"})
		}, []string{"error " + RuleInstallModes}},
		{"no supported install mode fails", func(b *Bundle) {
			b.CSV.Spec.InstallModes[3].Supported = false
		}, []string{"error " + RuleInstallModes, "error " + RuleAllNamespaces}},
		{"a conversion webhook with a namespaced install mode fails", func(b *Bundle) {
			b.CSV.Spec.InstallModes[0].Supported = true
			b.CSV.Spec.WebhookDefinitions = append(b.CSV.Spec.WebhookDefinitions, csv.WebhookDescription{
				GenerateName: "cwidget.example.com", Type: csv.ConversionWebhook, DeploymentName: "widget-operator",
				ContainerPort: 443, TargetPort: new(intstr.FromInt32(9443)), WebhookPath: new("/mutate-pod"),
				SideEffects: new(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"},
				ConversionCRDs: []string{"sidecarsets.apps.kruise.io"},
			})
		}, []string{"error " + RuleInstallModes}},
		{"a missing minKubeVersion warns", func(b *Bundle) { b.CSV.Spec.MinKubeVersion = "" }, []string{"warning " + RuleMinKubeVersion}},
		{"a minKubeVersion that is not semver fails", func(b *Bundle) { b.CSV.Spec.MinKubeVersion = "1.30" }, []string{"error " + RuleMinKubeVersion}},
		{"an install strategy other than deployment fails", func(b *Bundle) { b.CSV.Spec.Install.Strategy = "helm" }, []string{"error " + RuleInstallStrategy}},
		{"a deployment whose selector misses its pods fails", func(b *Bundle) {
			deployment(b).Spec.Selector.MatchLabels["tier"] = "control-plane"
		}, []string{"error " + RuleInstallStrategy}},
		{"permissions for an account no deployment uses warn", func(b *Bundle) {
			b.CSV.Spec.Install.Spec.ClusterPermissions[0].ServiceAccountName = "other"
		}, []string{"warning " + RuleInstallStrategy}},
		{"a webhook with side effects fails", func(b *Bundle) {
			webhook(b, defaultWebhook).SideEffects = new(admissionregistrationv1.SideEffectClassSome)
		}, []string{"error " + RuleWebhookDefinitions}},
		{"a webhook without review versions fails", func(b *Bundle) {
			webhook(b, defaultWebhook).AdmissionReviewVersions = nil
		}, []string{"error " + RuleWebhookDefinitions}},
		{"a webhook timeout of zero fails", func(b *Bundle) {
			webhook(b, defaultWebhook).TimeoutSeconds = new(int32(0))
		}, []string{"error " + RuleWebhookDefinitions}},
		{"a webhook of an unknown type fails", func(b *Bundle) {
			webhook(b, defaultWebhook).Type = "AuditWebhook"
		}, []string{"error " + RuleWebhookDefinitions}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := loadValid(t)
			tc.mutate(b)
			if diff := cmp.Diff(tc.want, summary(Validate(b))); diff != "" {
				t.Errorf("findings (-want +got):\n%s\n%v", diff, Validate(b))
			}
		})
	}
}

func TestValidate_CRDAndHubRules(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		mutate func(b *Bundle)
		want   []string
	}{
		{"a non-structural CRD schema fails", func(b *Bundle) {
			unstructured.RemoveNestedField(crdObject(b).Object, "spec", "versions")
			_ = unstructured.SetNestedSlice(crdObject(b).Object, []any{map[string]any{
				"name": "v1alpha1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"properties": map[string]any{"spec": map[string]any{"type": "object"}}}},
			}}, "spec", "versions")
		}, []string{"error " + RuleCRDValid}},
		{"a CEL rule that does not compile fails", func(b *Bundle) {
			versions, _, _ := unstructured.NestedSlice(crdObject(b).Object, "spec", "versions")
			_ = unstructured.SetNestedField(versions[0].(map[string]any), []any{map[string]any{"rule": "self.selector ==", "message": "m"}},
				"schema", "openAPIV3Schema", "properties", "spec", "x-kubernetes-validations")
			_ = unstructured.SetNestedSlice(crdObject(b).Object, versions, "spec", "versions")
		}, []string{"error " + RuleCRDCELMinKube, "error " + RuleCRDValid}},
		{"a CRD field unknown to apiextensions/v1 fails", func(b *Bundle) {
			_ = unstructured.SetNestedField(crdObject(b).Object, "Cluster", "spec", "scopeName")
		}, []string{"error " + RuleCRDValid}},
		{"a v1beta1 CRD fails", func(b *Bundle) {
			crdObject(b).SetAPIVersion("apiextensions.k8s.io/v1beta1")
		}, []string{"error " + RuleCRDValid, "error " + RuleDeprecatedAPIs}},
		{"a CRD name that is not plural.group fails", func(b *Bundle) {
			crdObject(b).SetName("sidecarset.apps.kruise.io")
			b.CSV.Spec.CustomResourceDefinitions.Owned[0].Name = "sidecarset.apps.kruise.io"
		}, []string{"error " + RuleCRDValid}},
		{"a rule reading the CEL keyword namespace fails on a minKubeVersion before 1.32", func(b *Bundle) {
			addNamespaceRule(t, b)
		}, []string{"error " + RuleCRDCELMinKube}},
		{"a rule reading the CEL keyword namespace passes from minKubeVersion 1.32", func(b *Bundle) {
			addNamespaceRule(t, b)
			b.CSV.Spec.MinKubeVersion = "1.32.0"
		}, nil},
		{"the escaped keyword passes on 1.30", func(b *Bundle) {
			addNamespaceRule(t, b)
			versions, _, _ := unstructured.NestedSlice(crdObject(b).Object, "spec", "versions")
			_ = unstructured.SetNestedField(versions[0].(map[string]any), []any{map[string]any{"rule": "!has(self.__namespace__) || size(self.__namespace__) > 0", "message": "m"}},
				"schema", "openAPIV3Schema", "properties", "spec", "x-kubernetes-validations")
			_ = unstructured.SetNestedSlice(crdObject(b).Object, versions, "spec", "versions")
		}, nil},
		{"a missing provider name fails", func(b *Bundle) { b.CSV.Spec.Provider.Name = "" }, []string{"error " + RuleProvider}},
		{"a maintainer email that is not an address fails", func(b *Bundle) {
			b.CSV.Spec.Maintainers[0].Email = "the widget team"
		}, []string{"error " + RuleMaintainers}},
		{"no maintainer fails", func(b *Bundle) { b.CSV.Spec.Maintainers = nil }, []string{"error " + RuleMaintainers}},
		{"a link that is not a URL fails", func(b *Bundle) { b.CSV.Spec.Links[0].URL = "example.com/widget" }, []string{"error " + RuleLinks}},
		{"no icon warns", func(b *Bundle) { b.CSV.Spec.Icon = nil }, []string{"warning " + RuleIcon}},
		{"two icons fail", func(b *Bundle) { b.CSV.Spec.Icon = append(b.CSV.Spec.Icon, b.CSV.Spec.Icon[0]) }, []string{"error " + RuleIcon}},
		{"an icon of a media type OperatorHub does not show fails", func(b *Bundle) { b.CSV.Spec.Icon[0].MediaType = "image/bmp" }, []string{"error " + RuleIcon}},
		{"an icon whose data is not its media type fails", func(b *Bundle) { b.CSV.Spec.Icon[0].MediaType = "image/png" }, []string{"error " + RuleIcon}},
		{"an icon that is not base64 fails", func(b *Bundle) { b.CSV.Spec.Icon[0].Data = "<svg/>" }, []string{"error " + RuleIcon}},
		{"a missing createdAt fails", func(b *Bundle) {
			delete(b.CSV.Metadata.Annotations, csv.AnnotationCreatedAt)
		}, []string{"error " + RuleHubAnnotations}},
		{"a createdAt without a time fails", func(b *Bundle) {
			b.CSV.Metadata.Annotations[csv.AnnotationCreatedAt] = "2026-01-02"
		}, []string{"error " + RuleHubAnnotations}},
		{"a repository that is not a URL fails", func(b *Bundle) {
			b.CSV.Metadata.Annotations[csv.AnnotationRepository] = "git@example.com:widget.git"
		}, []string{"error " + RuleHubAnnotations}},
		{"a tile description longer than the tile warns", func(b *Bundle) {
			b.CSV.Metadata.Annotations[csv.AnnotationDescription] = strings.Repeat("sidecar ", 20)
		}, []string{"warning " + RuleHubAnnotations}},
		{"a missing display name fails", func(b *Bundle) { b.CSV.Spec.DisplayName = "" }, []string{"error " + RuleHubSpec}},
		{"no keywords fail", func(b *Bundle) { b.CSV.Spec.Keywords = nil }, []string{"error " + RuleHubSpec}},
		{"a missing maturity warns", func(b *Bundle) { b.CSV.Spec.Maturity = "" }, []string{"warning " + RuleHubSpec}},
		{"an unknown capability level fails", func(b *Bundle) {
			b.CSV.Metadata.Annotations[csv.AnnotationCapabilities] = "Seamless"
		}, []string{"error " + RuleCapabilities}},
		{"an unknown category fails", func(b *Bundle) {
			b.CSV.Metadata.Annotations[csv.AnnotationCategories] = "Application Runtime, Sidecars"
		}, []string{"error " + RuleCategories}},
		{"an API removed before minKubeVersion fails", func(b *Bundle) {
			b.Objects = append(b.Objects, object("policy/v1beta1", "PodDisruptionBudget", "widget"))
		}, []string{"error " + RuleDeprecatedAPIs}},
		{"an API removed after minKubeVersion warns", func(b *Bundle) {
			b.Objects = append(b.Objects, object("flowcontrol.apiserver.k8s.io/v1beta3", "FlowSchema", "widget"))
		}, []string{"error " + RuleSupportedKinds, "warning " + RuleDeprecatedAPIs}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := loadValid(t)
			tc.mutate(b)
			if diff := cmp.Diff(tc.want, summary(Validate(b))); diff != "" {
				t.Errorf("findings (-want +got):\n%s\n%v", diff, Validate(b))
			}
		})
	}
}

func TestValidate_PracticeAndInvariantRules(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		mutate func(b *Bundle)
		want   []string
	}{
		{"a container without requests warns", func(b *Bundle) { manager(b).Resources.Requests = nil }, []string{"warning " + RuleResourceRequests}},
		{"an owned API without description warns", func(b *Bundle) {
			b.CSV.Spec.CustomResourceDefinitions.Owned[0].Description = ""
		}, []string{"warning " + RuleCRDDescriptions}},
		{"a channel outside the naming convention warns", func(b *Bundle) {
			setAnnotation(b, layout.AnnotationChannels, "alpha")
			setAnnotation(b, layout.AnnotationDefaultChannel, "alpha")
		}, []string{"warning " + RuleChannelNames}},
		{"a permission to create CRDs warns", func(b *Bundle) {
			p := &b.CSV.Spec.Install.Spec.ClusterPermissions[0]
			p.Rules = append(p.Rules, rbacv1.PolicyRule{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"create"}})
		}, []string{"warning " + RuleCRDRBAC}},
		{"a webhook served by no deployment of the CSV fails", func(b *Bundle) {
			webhook(b, defaultWebhook).DeploymentName = "widget-webhooks"
		}, []string{"error " + RuleWebhookDeployments}},
		{"a webhook target port no container listens on fails", func(b *Bundle) {
			webhook(b, defaultWebhook).TargetPort = new(intstr.FromInt32(8080))
		}, []string{"error " + RuleWebhookDeployments}},
		{"a webhook without target port on a container port that is not 443 fails", func(b *Bundle) {
			webhook(b, defaultWebhook).TargetPort = nil
		}, []string{"error " + RuleWebhookDeployments}},
		{"a webhook rule on all groups fails", func(b *Bundle) {
			webhook(b, defaultWebhook).Rules[0].APIGroups = []string{"*"}
		}, []string{"error " + RuleWebhookRules}},
		{"a webhook rule on OLM's group fails", func(b *Bundle) {
			webhook(b, defaultWebhook).Rules[0].APIGroups = []string{"operators.coreos.com"}
		}, []string{"error " + RuleWebhookRules}},
		{"a webhook rule on webhook configurations fails", func(b *Bundle) {
			r := &webhook(b, validateWebhook).Rules[0]
			r.APIGroups, r.Resources = []string{"admissionregistration.k8s.io"}, []string{"validatingwebhookconfigurations"}
		}, []string{"error " + RuleWebhookRules}},
		{"a pod webhook without objectSelector fails", func(b *Bundle) {
			webhook(b, podWebhook).ObjectSelector = nil
		}, []string{"error " + RulePodWebhookSelector}},
		{"a pod webhook whose objectSelector matches the operator's pods fails", func(b *Bundle) {
			webhook(b, podWebhook).ObjectSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "app.kubernetes.io/name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"other"}},
			}}
		}, []string{"error " + RulePodWebhookSelector}},
		{"a manager managing its own certificates fails", func(b *Bundle) {
			manager(b).Args[0] = "--cert-source=self"
		}, []string{"error " + RuleExternalCerts}},
		{"a manager without --cert-source (self by default) fails", func(b *Bundle) {
			manager(b).Args = manager(b).Args[1:]
		}, []string{"error " + RuleExternalCerts}},
		{"a manager reading its certificate elsewhere fails", func(b *Bundle) {
			manager(b).Args[1] = "--webhook-cert-dir=/certs"
		}, []string{"error " + RuleExternalCerts}},
		{"a manager leaving the pod webhooks unscoped fails", func(b *Bundle) {
			manager(b).Args = append(manager(b).Args, "--scope-pod-webhook=false")
		}, []string{"error " + RuleExternalCerts}},
		{"a manager looking for a configuration by name (OLM generates them) fails", func(b *Bundle) {
			manager(b).Args[2] = "--mutating-webhook-configuration=sidecarset-operator-mutating"
		}, []string{"error " + RuleExternalCerts}},
		{"a manager without --mutating-webhook-configuration (a fixed name by default) fails", func(b *Bundle) {
			manager(b).Args = manager(b).Args[:2]
		}, []string{"error " + RuleExternalCerts}},
		{"a volume mounted where OLM mounts the certificate fails", func(b *Bundle) {
			manager(b).VolumeMounts = []corev1.VolumeMount{{Name: "certs", MountPath: "/tmp/k8s-webhook-server/serving-certs"}}
		}, []string{"error " + RuleExternalCerts}},
		{"a permission to read Secrets fails", func(b *Bundle) {
			p := &b.CSV.Spec.Install.Spec.ClusterPermissions[0]
			p.Rules = append(p.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}})
		}, []string{"error " + RuleLeastPrivilege}},
		{"a bundle Role bound to the operator that reads Secrets fails", func(b *Bundle) {
			role := bundleObject(b, "Role", "widget-leader")
			rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
			rules = append(rules, map[string]any{"apiGroups": []any{""}, "resources": []any{"secrets"}, "verbs": []any{"list"}})
			if err := unstructured.SetNestedSlice(role.Object, rules, "rules"); err != nil {
				panic(err)
			}
		}, []string{"error " + RuleLeastPrivilege}},
		{"a namespaced write permission in the CSV fails: OLM lifts it to the cluster", func(b *Bundle) {
			b.CSV.Spec.Install.Spec.Permissions = []csv.Permissions{{ServiceAccountName: "widget-operator", Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{"apps"}, Resources: []string{"controllerrevisions"}, Verbs: []string{"get", "create"}},
			}}}
		}, []string{"error " + RuleNamespacedPermissions}},
		{"a namespaced read permission in the CSV warns", func(b *Bundle) {
			b.CSV.Spec.Install.Spec.Permissions = []csv.Permissions{{ServiceAccountName: "widget-operator", Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}},
			}}}
		}, []string{"warning " + RuleNamespacedPermissions}},
		{"a RoleBinding naming the operator's namespace fails: OLM installs elsewhere", func(b *Bundle) {
			binding := bundleObject(b, "RoleBinding", "widget-leader")
			if err := unstructured.SetNestedSlice(binding.Object, []any{map[string]any{"kind": "ServiceAccount", "name": "widget-operator", "namespace": "widget-system"}}, "subjects"); err != nil {
				panic(err)
			}
		}, []string{"error " + RuleNamespacedPermissions}},
		{"a permission to patch webhook configurations fails", func(b *Bundle) {
			p := &b.CSV.Spec.Install.Spec.ClusterPermissions[0]
			p.Rules = append(p.Rules, rbacv1.PolicyRule{APIGroups: []string{"admissionregistration.k8s.io"},
				Resources: []string{"mutatingwebhookconfigurations"}, Verbs: []string{"patch"}})
		}, []string{"error " + RuleLeastPrivilege}},
		{"a permission to update validating webhook configurations fails", func(b *Bundle) {
			p := &b.CSV.Spec.Install.Spec.ClusterPermissions[0]
			p.Rules = append(p.Rules, rbacv1.PolicyRule{APIGroups: []string{"admissionregistration.k8s.io"},
				Resources: []string{"validatingwebhookconfigurations"}, Verbs: []string{"update"}})
		}, []string{"error " + RuleLeastPrivilege}},
		{"a wildcard permission fails", func(b *Bundle) {
			p := &b.CSV.Spec.Install.Spec.ClusterPermissions[0]
			p.Rules = append(p.Rules, rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"*"}})
		}, []string{"error " + RuleLeastPrivilege}},
		{"a bundle without AllNamespaces fails (its conversion webhook needs AllNamespaces only)", func(b *Bundle) {
			b.CSV.Spec.InstallModes[0].Supported = true
			b.CSV.Spec.InstallModes[3].Supported = false
		}, []string{"error " + RuleInstallModes, "error " + RuleAllNamespaces}},
		{"a fail-closed webhook with a long timeout warns", func(b *Bundle) {
			webhook(b, podWebhook).TimeoutSeconds = new(int32(30))
		}, []string{"warning " + RuleWebhookTimeouts}},
		{"a webhook path the manager does not serve fails", func(b *Bundle) {
			webhook(b, validateWebhook).WebhookPath = new("/validate-sidecarset")
		}, []string{"error " + RuleWebhookPaths}},
		{"a served path without webhook definition fails", func(b *Bundle) {
			b.CSV.Spec.WebhookDefinitions = b.CSV.Spec.WebhookDefinitions[1:]
		}, []string{"error " + RuleWebhookPaths}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := loadValid(t)
			tc.mutate(b)
			if diff := cmp.Diff(tc.want, summary(Validate(b))); diff != "" {
				t.Errorf("findings (-want +got):\n%s\n%v", diff, Validate(b))
			}
		})
	}
}
