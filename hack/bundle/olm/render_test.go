package olm

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/sidecarset-operator/sidecarset-operator/hack/bundle/csv"
)

const widgetCSV = `
apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: widget.v1.0.0
  annotations: {alm-examples: "[]"}
spec:
  displayName: Widget
  version: 1.0.0
  provider: {name: Widget Team}
  install:
    strategy: deployment
    spec:
      deployments:
      - name: widget
        label: {app: widget}
        spec:
          selector: {matchLabels: {app: widget}}
          template:
            metadata:
              labels: {app: widget}
              annotations: {kubectl.kubernetes.io/default-container: manager}
            spec:
              serviceAccountName: widget
              containers:
              - name: manager
                image: example.com/widget:v1.0.0
                args: [--cert-source=external]
                ports: [{name: webhook, containerPort: 9443}]
                volumeMounts: [{name: own-certs, mountPath: /tmp/k8s-webhook-server/serving-certs}]
              volumes: [{name: own-certs, emptyDir: {}}]
      permissions:
      - serviceAccountName: widget
        rules: [{apiGroups: [coordination.k8s.io], resources: [leases], verbs: [get]}]
      clusterPermissions:
      - serviceAccountName: widget
        rules: [{apiGroups: [""], resources: [pods], verbs: [list]}]
  webhookdefinitions:
  - generateName: mpod.example.com
    type: MutatingAdmissionWebhook
    deploymentName: widget
    containerPort: 443
    targetPort: 9443
    webhookPath: /mutate-pod
    admissionReviewVersions: [v1]
    sideEffects: None
    reinvocationPolicy: IfNeeded
    objectSelector: {matchExpressions: [{key: app, operator: NotIn, values: [widget]}]}
    rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  - generateName: vwidget.example.com
    type: ValidatingAdmissionWebhook
    deploymentName: widget
    containerPort: 443
    targetPort: 9443
    webhookPath: /validate
    admissionReviewVersions: [v1]
    sideEffects: None
    rules: [{apiGroups: [example.com], apiVersions: [v1], operations: [CREATE], resources: [widgets]}]
`

func widget(t *testing.T) *csv.ClusterServiceVersion {
	t.Helper()
	c, err := csv.Decode([]byte(widgetCSV))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func install(targets ...string) Install {
	return Install{Namespace: "operators", OperatorGroup: "global", OperatorGroupUID: "uid-1", TargetNamespaces: targets,
		CABundle: []byte("CA"), ServingCert: []byte("CERT"), ServingKey: []byte("KEY"), CAHash: "hash"}
}

func TestRender_Deployment(t *testing.T) {
	t.Parallel()
	o, err := Render(widget(t), nil, install())
	if err != nil {
		t.Fatal(err)
	}
	d := o.Deployments[0]
	got := map[string]any{
		"namespace":   d.Namespace,
		"labels":      d.Labels,
		"annotations": d.Spec.Template.Annotations,
		"volumes":     d.Spec.Template.Spec.Volumes,
		"mounts":      d.Spec.Template.Spec.Containers[0].VolumeMounts,
		"env":         d.Spec.Template.Spec.Containers[0].Env,
	}
	secret := func(items ...corev1.KeyToPath) corev1.VolumeSource {
		return corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "widget-service-cert", Items: items}}
	}
	want := map[string]any{
		"namespace": "operators",
		"labels":    map[string]string{"app": "widget", "olm.owner": "widget.v1.0.0", "olm.owner.kind": "ClusterServiceVersion", "olm.owner.namespace": "operators"},
		"annotations": map[string]string{
			"alm-examples": "[]", "kubectl.kubernetes.io/default-container": "manager", "olmcahash": "hash",
			"olm.operatorGroup": "global", "olm.operatorNamespace": "operators", "olm.targetNamespaces": "",
		},
		// The bundle's own volume at OLM's path is left dangling and its
		// mount taken over: why config/manifests removes both.
		"volumes": []corev1.Volume{
			{Name: "own-certs", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: APIServiceCertVolume, VolumeSource: secret(corev1.KeyToPath{Key: "tls.crt", Path: "apiserver.crt"}, corev1.KeyToPath{Key: "tls.key", Path: "apiserver.key"})},
			{Name: WebhookCertVolume, VolumeSource: secret(corev1.KeyToPath{Key: "tls.crt", Path: "tls.crt"}, corev1.KeyToPath{Key: "tls.key", Path: "tls.key"})},
		},
		"mounts": []corev1.VolumeMount{
			{Name: WebhookCertVolume, MountPath: WebhookCertDir},
			{Name: APIServiceCertVolume, MountPath: APIServiceCertDir},
		},
		"env": []corev1.EnvVar{{Name: OperatorConditionEnv, Value: "widget.v1.0.0"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("deployment (-want +got):\n%s", diff)
	}
}

func TestRender_WebhookServiceAndConfigurations(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		install    Install
		wantNsSel  *metav1.LabelSelector
		wantConfig string
	}{
		{"an AllNamespaces group leaves the namespace selector open", install(), nil, "mpod.example.com-"},
		{"a namespaced group selects its namespaces by OLM's label", install("team-a"),
			&metav1.LabelSelector{MatchLabels: map[string]string{"olm.operatorgroup.uid/uid-1": ""}}, "mpod.example.com-"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o, err := Render(widget(t), nil, tc.install)
			if err != nil {
				t.Fatal(err)
			}
			wantService := corev1.ServiceSpec{
				Ports:    []corev1.ServicePort{{Name: "443", Port: 443, TargetPort: intstr.FromInt32(9443)}},
				Selector: map[string]string{"app": "widget"},
			}
			if diff := cmp.Diff(wantService, o.Services[0].Spec); diff != "" {
				t.Errorf("service (-want +got):\n%s", diff)
			}
			if got := o.Services[0].Name; got != "widget-service" {
				t.Errorf("service name = %q, want widget-service", got)
			}
			m := o.MutatingWebhooks[0]
			wantHook := admissionregistrationv1.MutatingWebhook{
				Name: "mpod.example.com",
				ClientConfig: admissionregistrationv1.WebhookClientConfig{
					Service:  &admissionregistrationv1.ServiceReference{Name: "widget-service", Namespace: "operators", Path: new("/mutate-pod"), Port: new(int32(443))},
					CABundle: []byte("CA"),
				},
				Rules: []admissionregistrationv1.RuleWithOperations{{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
				}},
				NamespaceSelector: tc.wantNsSel,
				ObjectSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: "app", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"widget"}},
				}},
				SideEffects:             new(admissionregistrationv1.SideEffectClassNone),
				AdmissionReviewVersions: []string{"v1"},
				ReinvocationPolicy:      new(admissionregistrationv1.IfNeededReinvocationPolicy),
			}
			if diff := cmp.Diff([]admissionregistrationv1.MutatingWebhook{wantHook}, m.Webhooks); diff != "" {
				t.Errorf("mutating webhook (-want +got):\n%s", diff)
			}
			if len(m.Name) != len(tc.wantConfig)+5 || m.Name[:len(tc.wantConfig)] != tc.wantConfig || m.Labels[WebhookDescriptionLabel] != "mpod.example.com" {
				t.Errorf("configuration %q labels %v: want %s<5 chars> labelled with its definition", m.Name, m.Labels, tc.wantConfig)
			}
			if got := len(o.ValidatingWebhooks); got != 1 {
				t.Errorf("validating configurations = %d, want 1", got)
			}
		})
	}
}

func TestRender_RBAC(t *testing.T) {
	t.Parallel()
	type binding struct{ Kind, Namespace, Role string }
	summarize := func(o *Objects) map[string][]binding {
		out := map[string][]binding{}
		for _, b := range o.RoleBindings {
			out["roleBindings"] = append(out["roleBindings"], binding{"RoleBinding", b.Namespace, b.RoleRef.Kind + "/" + b.RoleRef.Name})
		}
		for _, b := range o.ClusterRoleBindings {
			out["clusterRoleBindings"] = append(out["clusterRoleBindings"], binding{"ClusterRoleBinding", "", b.RoleRef.Kind + "/" + b.RoleRef.Name})
		}
		for _, b := range o.LiftedClusterRoleBindings {
			out["lifted"] = append(out["lifted"], binding{"ClusterRoleBinding", "", b.RoleRef.Kind + "/" + b.RoleRef.Name})
		}
		return out
	}
	cases := []struct {
		name    string
		install Install
		want    map[string][]binding
	}{
		{"an AllNamespaces group lifts the namespaced permissions to the cluster", install(), map[string][]binding{
			"roleBindings": {
				{"RoleBinding", "operators", "Role/widget.v1.0.0-0"},
				{"RoleBinding", "operators", "Role/widget-service-cert"},
				{"RoleBinding", "kube-system", "Role/extension-apiserver-authentication-reader"},
			},
			"clusterRoleBindings": {
				{"ClusterRoleBinding", "", "ClusterRole/widget.v1.0.0-cluster-0"},
				{"ClusterRoleBinding", "", "ClusterRole/system:auth-delegator"},
			},
			"lifted": {{"ClusterRoleBinding", "", "ClusterRole/widget.v1.0.0-0"}},
		}},
		{"a namespaced group copies them into each target namespace", install("team-a", "team-b"), map[string][]binding{
			"roleBindings": {
				{"RoleBinding", "operators", "Role/widget.v1.0.0-0"},
				{"RoleBinding", "team-a", "Role/widget.v1.0.0-0"},
				{"RoleBinding", "team-b", "Role/widget.v1.0.0-0"},
				{"RoleBinding", "operators", "Role/widget-service-cert"},
				{"RoleBinding", "kube-system", "Role/extension-apiserver-authentication-reader"},
			},
			"clusterRoleBindings": {
				{"ClusterRoleBinding", "", "ClusterRole/widget.v1.0.0-cluster-0"},
				{"ClusterRoleBinding", "", "ClusterRole/system:auth-delegator"},
			},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o, err := Render(widget(t), nil, tc.install)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, summarize(o)); diff != "" {
				t.Errorf("bindings (-want +got):\n%s", diff)
			}
			wantLifted := []rbacv1.PolicyRule(nil)
			if tc.install.AllNamespaces() {
				wantLifted = []rbacv1.PolicyRule{
					{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get"}},
					{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch"}},
				}
			}
			var gotLifted []rbacv1.PolicyRule
			for _, r := range o.LiftedClusterRoles {
				gotLifted = append(gotLifted, r.Rules...)
			}
			if diff := cmp.Diff(wantLifted, gotLifted); diff != "" {
				t.Errorf("lifted rules (-want +got):\n%s", diff)
			}
			if got := len(o.ServiceAccounts); got != 1 {
				t.Errorf("service accounts = %d, want 1", got)
			}
		})
	}
}

func TestRender_Manifests(t *testing.T) {
	t.Parallel()
	svc := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "metrics"}}}
	role := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": map[string]any{"name": "viewer"}}}
	o, err := Render(widget(t), []*unstructured.Unstructured{svc, role}, install())
	if err != nil {
		t.Fatal(err)
	}
	all, err := o.All(true)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range all {
		got = append(got, u.GetKind()+" "+u.GetNamespace()+"/"+u.GetName())
	}
	want := []string{
		"Service operators/metrics",
		"ClusterRole /viewer",
		"ServiceAccount operators/widget",
		"ClusterRole /widget.v1.0.0-cluster-0",
		"ClusterRoleBinding /widget.v1.0.0-cluster-0",
		"ClusterRoleBinding /widget-service-system:auth-delegator",
		"Role operators/widget.v1.0.0-0",
		"Role operators/widget-service-cert",
		"RoleBinding operators/widget.v1.0.0-0",
		"RoleBinding operators/widget-service-cert",
		"RoleBinding kube-system/widget-service-auth-reader",
		"ClusterRole /widget.v1.0.0-0",
		"ClusterRoleBinding /widget.v1.0.0-0",
		"Secret operators/widget-service-cert",
		"Service operators/widget-service",
		"Deployment operators/widget",
		"MutatingWebhookConfiguration /" + o.MutatingWebhooks[0].Name,
		"ValidatingWebhookConfiguration /" + o.ValidatingWebhooks[0].Name,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
}
