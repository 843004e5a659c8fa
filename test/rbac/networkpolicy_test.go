package rbac_test

import (
	"os"
	"path/filepath"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/sidecarset-operator/sidecarset-operator/hack/bundle/generate"
)

// TestNetworkPolicy_WebhookPortFromTheControlPlaneOnly: config/default with
// the config/networkpolicy component admits the manager's webhook port
// only from the control plane's address range: the policy selects the
// manager's pods in their namespace, and every ingress rule that reaches
// the webhook port (a rule without ports reaches every port) admits only
// ipBlocks.
func TestNetworkPolicy_WebhookPortFromTheControlPlaneOnly(t *testing.T) {
	t.Parallel()
	objects := renderWithComponent(t, "networkpolicy")
	var manager *appsv1.Deployment
	var policies []*networkingv1.NetworkPolicy
	for _, u := range objects {
		switch u.GetKind() {
		case "Deployment":
			manager = &appsv1.Deployment{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, manager); err != nil {
				t.Fatal(err)
			}
		case "NetworkPolicy":
			p := &networkingv1.NetworkPolicy{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p); err != nil {
				t.Fatal(err)
			}
			policies = append(policies, p)
		}
	}
	if manager == nil || len(policies) != 1 {
		t.Fatalf("want the manager's Deployment and one NetworkPolicy, got %v and %d policies", manager != nil, len(policies))
	}
	webhookPort := int32(0)
	for _, c := range manager.Spec.Template.Spec.Containers {
		for _, p := range c.Ports {
			if p.Name == "webhook" {
				webhookPort = p.ContainerPort
			}
		}
	}
	if webhookPort == 0 {
		t.Fatal("the manager has no webhook port")
	}
	p := policies[0]
	selector, err := metav1.LabelSelectorAsSelector(&p.Spec.PodSelector)
	if err != nil {
		t.Fatal(err)
	}
	if p.Namespace != manager.Namespace || p.Spec.PodSelector.Size() == 0 || !selector.Matches(labels.Set(manager.Spec.Template.Labels)) {
		t.Errorf("the NetworkPolicy %s/%s (podSelector %v) does not select the manager's pods in %s", p.Namespace, p.Name, selector, manager.Namespace)
	}
	hasIngress := false
	for _, pt := range p.Spec.PolicyTypes {
		hasIngress = hasIngress || pt == networkingv1.PolicyTypeIngress
	}
	if !hasIngress {
		t.Errorf("policyTypes %v: the policy does not restrict ingress", p.Spec.PolicyTypes)
	}
	reached := false
	for i, rule := range p.Spec.Ingress {
		reaches := len(rule.Ports) == 0
		for _, port := range rule.Ports {
			reaches = reaches || port.Port == nil || port.Port.IntValue() == int(webhookPort) || port.Port.String() == "webhook"
		}
		if !reaches {
			continue
		}
		reached = true
		if len(rule.From) == 0 {
			t.Errorf("ingress rule %d admits the webhook port %d from anywhere", i, webhookPort)
		}
		for _, from := range rule.From {
			if from.IPBlock == nil || from.PodSelector != nil || from.NamespaceSelector != nil {
				t.Errorf("ingress rule %d admits the webhook port %d from %+v, not an address range", i, webhookPort, from)
			}
		}
	}
	if !reached {
		t.Errorf("no ingress rule admits the webhook port %d: the API server could not reach the webhooks", webhookPort)
	}
}

// renderWithComponent renders config/default with the kustomize component
// config/<component>, through an overlay in a temporary directory
// (kustomize takes relative paths only).
func renderWithComponent(t *testing.T, component string) []*unstructured.Unstructured {
	t.Helper()
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	overlay := t.TempDir()
	rel, err := filepath.Rel(overlay, root)
	if err != nil {
		t.Fatal(err)
	}
	kustomization := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" +
		"resources:\n- " + filepath.ToSlash(filepath.Join(rel, "config/default")) + "\n" +
		"components:\n- " + filepath.ToSlash(filepath.Join(rel, "config", component)) + "\n"
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(kustomization), 0o600); err != nil {
		t.Fatal(err)
	}
	objects, err := generate.Kustomize(filesys.MakeFsOnDisk(), overlay)
	if err != nil {
		t.Fatal(err)
	}
	return objects
}
