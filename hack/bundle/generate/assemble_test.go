package generate

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset-operator/sidecarset-operator/hack/bundle/csv"
)

// widgetConfig is a small kustomize output: an operator with a webhook,
// cluster and namespaced RBAC, an aggregated role and a metrics Service.
const widgetConfig = `
apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: widget-operator.v0.0.0
  namespace: placeholder
  annotations:
    capabilities: Basic Install
spec:
  displayName: Widget Operator
  version: 0.0.0
  provider:
    name: Widget Team
  customresourcedefinitions:
    owned:
    - name: widgets.example.com
      version: v1
      kind: Widget
  install:
    strategy: deployment
    spec:
      deployments: []
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
---
apiVersion: example.com/v1
kind: Widget
metadata:
  name: example
spec:
  size: 3
---
apiVersion: v1
kind: Namespace
metadata:
  name: widget-system
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: widget
  namespace: widget-system
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: widget
  namespace: widget-system
  labels: {app: widget}
spec:
  selector:
    matchLabels: {app: widget}
  template:
    metadata:
      labels: {app: widget}
    spec:
      serviceAccountName: widget
      containers:
      - name: manager
        image: example.com/widget:v0.0.1
        ports:
        - {name: webhook, containerPort: 9443}
---
apiVersion: v1
kind: Service
metadata:
  name: widget-webhook
  namespace: widget-system
spec:
  selector: {app: widget}
  ports:
  - {port: 443, targetPort: webhook}
---
apiVersion: v1
kind: Service
metadata:
  name: widget-metrics
  namespace: widget-system
spec:
  selector: {app: widget}
  ports:
  - {port: 8443}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: widget-manager
rules:
- {apiGroups: [example.com], resources: [widgets], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: widget-manager
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: widget-manager}
subjects:
- {kind: ServiceAccount, name: widget, namespace: widget-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: widget-config-reader
rules:
- {apiGroups: [""], resources: [configmaps], verbs: [get]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: widget-config-reader
  namespace: widget-system
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: widget-config-reader}
subjects:
- {kind: ServiceAccount, name: widget, namespace: widget-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: widget-leader
  namespace: widget-system
rules:
- {apiGroups: [coordination.k8s.io], resources: [leases], verbs: [get, update]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: widget-leader
  namespace: widget-system
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: widget-leader}
subjects:
- {kind: ServiceAccount, name: widget, namespace: widget-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: widget-viewer
  labels: {rbac.authorization.k8s.io/aggregate-to-view: "true"}
rules:
- {apiGroups: [example.com], resources: [widgets], verbs: [get]}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: widget-mutating
webhooks:
- name: mwidget.example.com
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Fail
  timeoutSeconds: 5
  clientConfig:
    service: {name: widget-webhook, namespace: widget-system, path: /mutate-widget}
  objectSelector:
    matchLabels: {inject: "true"}
  rules:
  - {apiGroups: [example.com], apiVersions: [v1], operations: [CREATE], resources: [widgets]}
---
apiVersion: scorecard.operatorframework.io/v1alpha3
kind: Configuration
metadata:
  name: config
stages: []
`

func parseObjects(t *testing.T, docs string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(docs)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		u := &unstructured.Unstructured{}
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			t.Fatal(err)
		}
		if err := u.UnmarshalJSON(j); err != nil {
			t.Fatal(err)
		}
		out = append(out, u)
	}
}

func widgetInputs(t *testing.T) Inputs {
	t.Helper()
	return Inputs{
		Objects:  parseObjects(t, widgetConfig),
		Releases: []Release{{Version: "0.0.9", CreatedAt: "2026-01-01T00:00:00Z"}, {Version: "0.1.0", CreatedAt: "2026-02-01T00:00:00Z"}},
		Icon:     []byte("<svg/>"),
		Options:  Options{Package: "widget-operator"},
	}
}

func TestAssemble_FoldsTheOperatorIntoTheCSV(t *testing.T) {
	t.Parallel()
	files, err := Assemble(widgetInputs(t))
	if err != nil {
		t.Fatal(err)
	}
	wantPaths := []string{
		"bundle.Dockerfile",
		"bundle/manifests/example.com_widgets.yaml",
		"bundle/manifests/widget-config-reader_rbac.authorization.k8s.io_v1_clusterrole.yaml",
		"bundle/manifests/widget-config-reader_rbac.authorization.k8s.io_v1_rolebinding.yaml",
		"bundle/manifests/widget-leader_rbac.authorization.k8s.io_v1_role.yaml",
		"bundle/manifests/widget-leader_rbac.authorization.k8s.io_v1_rolebinding.yaml",
		"bundle/manifests/widget-metrics_v1_service.yaml",
		"bundle/manifests/widget-operator.clusterserviceversion.yaml",
		"bundle/manifests/widget-viewer_rbac.authorization.k8s.io_v1_clusterrole.yaml",
		"bundle/metadata/annotations.yaml",
		"bundle/tests/scorecard/config.yaml",
	}
	if diff := cmp.Diff(wantPaths, files.Paths()); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	c, err := csv.Decode(files["bundle/manifests/widget-operator.clusterserviceversion.yaml"])
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]any{
		"name":               c.Metadata.Name,
		"version":            c.Spec.Version,
		"replaces":           c.Spec.Replaces,
		"createdAt":          c.Metadata.Annotations[csv.AnnotationCreatedAt],
		"containerImage":     c.Metadata.Annotations[csv.AnnotationContainerImage],
		"almExamples":        c.Metadata.Annotations[csv.AnnotationALMExamples],
		"icon":               c.Spec.Icon,
		"relatedImages":      c.Spec.RelatedImages,
		"permissions":        c.Spec.Install.Spec.Permissions,
		"clusterPermissions": c.Spec.Install.Spec.ClusterPermissions,
		"deployment":         c.Spec.Install.Spec.Deployments[0].Name,
		"image":              c.Spec.Install.Spec.Deployments[0].Spec.Template.Spec.Containers[0].Image,
		"webhooks":           c.Spec.WebhookDefinitions,
	}
	want := map[string]any{
		"name":           "widget-operator.v0.1.0",
		"version":        "0.1.0",
		"replaces":       "widget-operator.v0.0.9",
		"createdAt":      "2026-02-01T00:00:00Z",
		"containerImage": "example.com/widget:v0.1.0",
		"almExamples": `[
  {
    "apiVersion": "example.com/v1",
    "kind": "Widget",
    "metadata": {
      "name": "example"
    },
    "spec": {
      "size": 3
    }
  }
]`,
		"icon":          []csv.Icon{{Data: "PHN2Zy8+", MediaType: "image/svg+xml"}},
		"relatedImages": []csv.RelatedImage{{Name: "manager", Image: "example.com/widget:v0.1.0"}},
		// Namespaced grants stay Roles and RoleBindings: OLM would lift
		// CSV permissions to the whole cluster.
		"permissions": []csv.Permissions(nil),
		"clusterPermissions": []csv.Permissions{{ServiceAccountName: "widget", Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"example.com"}, Resources: []string{"widgets"}, Verbs: []string{"get", "list", "watch"}},
		}}},
		"deployment": "widget",
		"image":      "example.com/widget:v0.1.0",
		"webhooks": []csv.WebhookDescription{{
			GenerateName: "mwidget.example.com", Type: csv.MutatingAdmissionWebhook, DeploymentName: "widget",
			ContainerPort: 443, TargetPort: new(intstr.FromInt32(9443)), WebhookPath: new("/mutate-widget"),
			AdmissionReviewVersions: []string{"v1"}, SideEffects: new(admissionregistrationv1.SideEffectClassNone),
			FailurePolicy: new(admissionregistrationv1.Fail), TimeoutSeconds: new(int32(5)),
			ObjectSelector: c.Spec.WebhookDefinitions[0].ObjectSelector,
			Rules:          c.Spec.WebhookDefinitions[0].Rules,
		}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CSV (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"inject": "true"}, c.Spec.WebhookDefinitions[0].ObjectSelector.MatchLabels); diff != "" {
		t.Errorf("objectSelector (-want +got):\n%s", diff)
	}
	binding := &rbacv1.RoleBinding{}
	if err := yaml.UnmarshalStrict(files["bundle/manifests/widget-leader_rbac.authorization.k8s.io_v1_rolebinding.yaml"], binding); err != nil {
		t.Fatal(err)
	}
	wantBinding := &rbacv1.RoleBinding{
		TypeMeta:   binding.TypeMeta,
		ObjectMeta: binding.ObjectMeta,
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "widget-leader"},
		// No namespace: RBAC reads it as the binding's, the install namespace.
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "widget"}},
	}
	if diff := cmp.Diff(wantBinding, binding); diff != "" || binding.Namespace != "" {
		t.Errorf("RoleBinding in namespace %q (-want +got):\n%s", binding.Namespace, diff)
	}
}

func TestAssemble_Options(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		options Options
		want    map[string]string
	}{
		{"the defaults take the latest release", Options{}, map[string]string{
			"name": "widget-operator.v0.1.0", "createdAt": "2026-02-01T00:00:00Z", "replaces": "widget-operator.v0.0.9",
			"image": "example.com/widget:v0.1.0", "channels": "candidate", "default": "candidate",
		}},
		{"an older release replaces nothing older than itself", Options{Version: "0.0.9"}, map[string]string{
			"name": "widget-operator.v0.0.9", "createdAt": "2026-01-01T00:00:00Z", "replaces": "",
			"image": "example.com/widget:v0.0.9", "channels": "candidate", "default": "candidate",
		}},
		{"an unreleased version takes the given date and replaces the latest release", Options{Version: "0.2.0", CreatedAt: "2026-03-01T12:00:00Z"}, map[string]string{
			"name": "widget-operator.v0.2.0", "createdAt": "2026-03-01T12:00:00Z", "replaces": "widget-operator.v0.1.0",
			"image": "example.com/widget:v0.2.0", "channels": "candidate", "default": "candidate",
		}},
		{"the image, package and channels can be chosen", Options{Package: "gadget", Image: "registry.local/g:dev", Channels: []string{"fast", "stable"}}, map[string]string{
			"name": "gadget.v0.1.0", "createdAt": "2026-02-01T00:00:00Z", "replaces": "gadget.v0.0.9",
			"image": "registry.local/g:dev", "channels": "fast,stable", "default": "fast",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := widgetInputs(t)
			in.Options = tc.options
			if in.Options.Package == "" {
				in.Options.Package = "widget-operator"
			}
			files, err := Assemble(in)
			if err != nil {
				t.Fatal(err)
			}
			// The CSV file is named after the package.
			var c *csv.ClusterServiceVersion
			for _, p := range files.Paths() {
				if strings.HasSuffix(p, ".clusterserviceversion.yaml") {
					if c, err = csv.Decode(files[p]); err != nil {
						t.Fatal(err)
					}
				}
			}
			var annotations struct {
				Annotations map[string]string `json:"annotations"`
			}
			if err := yaml.Unmarshal(files["bundle/metadata/annotations.yaml"], &annotations); err != nil {
				t.Fatal(err)
			}
			got := map[string]string{
				"name": c.Metadata.Name, "createdAt": c.Metadata.Annotations[csv.AnnotationCreatedAt], "replaces": c.Spec.Replaces,
				"image":    c.Spec.Install.Spec.Deployments[0].Spec.Template.Spec.Containers[0].Image,
				"channels": annotations.Annotations["operators.operatorframework.io.bundle.channels.v1"],
				"default":  annotations.Annotations["operators.operatorframework.io.bundle.channel.default.v1"],
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("CSV (-want +got):\n%s", diff)
			}
			if !bytes.Contains(files["bundle.Dockerfile"], []byte("LABEL operators.operatorframework.io.bundle.channels.v1="+tc.want["channels"]+"\n")) {
				t.Errorf("bundle.Dockerfile does not label the channels %s:\n%s", tc.want["channels"], files["bundle.Dockerfile"])
			}
		})
	}
}

func TestAssemble_Errors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		mutate  func(in *Inputs)
		wantErr string
	}{
		{"an unreleased version without a date fails", func(in *Inputs) { in.Options.Version = "0.2.0" },
			"version 0.2.0 is not in config/manifests/releases.yaml"},
		{"a version that is not semver fails", func(in *Inputs) { in.Options.Version = "v1" }, `version "v1" is not semver`},
		{"an invalid image fails", func(in *Inputs) { in.Options.Image = "Registry/UPPER" }, `image "Registry/UPPER"`},
		{"a malformed createdAt fails", func(in *Inputs) { in.Options.CreatedAt = "yesterday" }, `createdAt "yesterday" is not yyyy-mm-ddThh:mm:ssZ`},
		{"a kind a bundle cannot carry fails", func(in *Inputs) {
			in.Objects = append(in.Objects, parseObjects(t, "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: agent}\n")...)
		}, "DaemonSet agent cannot be part of an OLM bundle"},
		{"a webhook with a URL fails", func(in *Inputs) {
			setWebhookField(t, in, map[string]any{"url": "https://example.com/hook"}, "clientConfig")
		}, "a URL client config cannot be carried"},
		{"a webhook with a namespaceSelector fails", func(in *Inputs) {
			setWebhookField(t, in, map[string]any{"matchLabels": map[string]any{"team": "a"}}, "namespaceSelector")
		}, "OLM sets the namespaceSelector from the OperatorGroup"},
		{"a webhook with matchConditions fails", func(in *Inputs) {
			setWebhookField(t, in, []any{map[string]any{"name": "not-kube-system", "expression": "true"}}, "matchConditions")
		}, "cannot carry matchConditions"},
		{"a webhook Service that selects no deployment fails", func(in *Inputs) {
			for _, u := range in.Objects {
				if u.GetKind() == "Service" && u.GetName() == "widget-webhook" {
					_ = unstructured.SetNestedStringMap(u.Object, map[string]string{"app": "other"}, "spec", "selector")
				}
			}
		}, "Service widget-webhook selects no deployment's pods"},
		{"a binding of the operator's account and a user fails", func(in *Inputs) {
			for _, u := range in.Objects {
				if u.GetKind() == "ClusterRoleBinding" {
					subjects, _, _ := unstructured.NestedSlice(u.Object, "subjects")
					subjects = append(subjects, map[string]any{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"})
					_ = unstructured.SetNestedSlice(u.Object, subjects, "subjects")
				}
			}
		}, "binds a deployment's service account and other subjects"},
		{"a CRD the CSV does not own fails", func(in *Inputs) {
			in.Objects = append(in.Objects, parseObjects(t, `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  names: {kind: Gadget, plural: gadgets}
  scope: Namespaced
  versions: [{name: v1, served: true, storage: true}]
`)...)
		}, "CRD gadgets.example.com is not listed in the CSV's owned customresourcedefinitions"},
		{"a kustomization without CSV base fails", func(in *Inputs) { in.Objects = in.Objects[1:] }, "no ClusterServiceVersion base"},
		{"a misspelt CSV base field fails", func(in *Inputs) {
			_ = unstructured.SetNestedField(in.Objects[0].Object, []any{}, "spec", "webhookDefinitions")
		}, `unknown field "spec.webhookDefinitions"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := widgetInputs(t)
			tc.mutate(&in)
			_, err := Assemble(in)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Assemble error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

// setWebhookField sets a field of the first webhook of the mutating
// configuration.
func setWebhookField(t *testing.T, in *Inputs, value any, field string) {
	t.Helper()
	for _, u := range in.Objects {
		if u.GetKind() != "MutatingWebhookConfiguration" {
			continue
		}
		webhooks, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
		webhooks[0].(map[string]any)[field] = value
		if err := unstructured.SetNestedSlice(u.Object, webhooks, "webhooks"); err != nil {
			t.Fatal(err)
		}
	}
}

func TestParseReleases_Order(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		data    string
		wantErr string
	}{
		{"releases oldest first parse", "releases:\n- {version: 0.1.0, createdAt: \"2026-01-01T00:00:00Z\"}\n- {version: 0.2.0, createdAt: \"2026-02-01T00:00:00Z\"}\n", ""},
		{"releases out of order fail", "releases:\n- {version: 0.2.0, createdAt: \"2026-01-01T00:00:00Z\"}\n- {version: 0.1.0, createdAt: \"2026-02-01T00:00:00Z\"}\n", "list releases oldest first"},
		{"a release without time fails", "releases:\n- {version: 0.1.0, createdAt: \"2026-01-01\"}\n", "is not yyyy-mm-ddThh:mm:ssZ"},
		{"an unknown field fails", "releases:\n- {version: 0.1.0, created: \"2026-01-01T00:00:00Z\"}\n", "unknown field"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseReleases([]byte(tc.data))
			if (tc.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("ParseReleases error = %v, want %q", err, tc.wantErr)
			}
		})
	}
}
