package podscope

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/names"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/scope"
)

// TestPodWebhookScope_ChangesOnlyItsConditionInOLMsConfigurations: under
// OLM, where the manager may update every MutatingWebhookConfiguration, the
// scope write changes only the configurations labelled with its pod
// webhooks' names, and in them only the webhook's sidecarset-selectors
// condition and the objectSelector exempting its label: another operator's
// configuration, one labelled for another webhook, and the other fields and
// conditions of its own are left as they were.
func TestPodWebhookScope_ChangesOnlyItsConditionInOLMsConfigurations(t *testing.T) {
	scheme := scopeTestScheme()
	fail := admissionregistrationv1.Fail
	timeout := int32(7)
	theirs := admissionregistrationv1.MatchCondition{Name: "not-kube-system", Expression: "request.namespace != 'kube-system'"}
	webhook := func(name string) admissionregistrationv1.MutatingWebhook {
		return admissionregistrationv1.MutatingWebhook{
			Name: name, FailurePolicy: &fail, TimeoutSeconds: &timeout,
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
			}},
			ObjectSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: appsv1beta1.OperatorPodLabel, Operator: metav1.LabelSelectorOpNotIn, Values: []string{appsv1beta1.OperatorPodName},
			}}},
			MatchConditions: []admissionregistrationv1.MatchCondition{theirs},
		}
	}
	configuration := func(name string, labels map[string]string, webhookName string) *admissionregistrationv1.MutatingWebhookConfiguration {
		return &admissionregistrationv1.MutatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Webhooks:   []admissionregistrationv1.MutatingWebhook{webhook(webhookName)},
		}
	}
	ours := []*admissionregistrationv1.MutatingWebhookConfiguration{
		configuration(names.PodWebhookName+"-x7k2p", map[string]string{names.OLMWebhookLabel: names.PodWebhookName}, names.PodWebhookName),
		configuration(names.PodBestEffortWebhookName+"-q2w4e", map[string]string{names.OLMWebhookLabel: names.PodBestEffortWebhookName}, names.PodBestEffortWebhookName),
	}
	others := []*admissionregistrationv1.MutatingWebhookConfiguration{
		// Another operator's, unlabelled, even with a webhook of our name.
		configuration("mesh-injector", nil, names.PodWebhookName),
		// OLM's for another operator's webhook.
		configuration("other-operator-z9y8x", map[string]string{names.OLMWebhookLabel: "mutate.other.example.com"}, "mutate.other.example.com"),
	}
	mesh := &appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "mesh"}}
	mesh.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	b := fake.NewClientBuilder().WithScheme(scheme).WithObjects(mesh)
	for _, cfg := range append(append([]*admissionregistrationv1.MutatingWebhookConfiguration{}, ours...), others...) {
		b = b.WithObjects(cfg.DeepCopy())
	}
	c := b.Build()
	ctx := context.Background()
	get := func(name string) *admissionregistrationv1.MutatingWebhookConfiguration {
		t.Helper()
		got := &admissionregistrationv1.MutatingWebhookConfiguration{}
		if err := c.Get(ctx, types.NamespacedName{Name: name}, got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	before := map[string]*admissionregistrationv1.MutatingWebhookConfiguration{}
	for _, cfg := range others {
		before[cfg.Name] = get(cfg.Name)
	}

	if err := (&PodWebhookScope{Client: c, Namespace: "operators"}).Sync(ctx); err != nil {
		t.Fatal(err)
	}

	for _, cfg := range others {
		if diff := cmp.Diff(before[cfg.Name], get(cfg.Name)); diff != "" {
			t.Errorf("%s is not the operator's, and was changed (-before +after):\n%s", cfg.Name, diff)
		}
	}
	for _, cfg := range ours {
		got := get(cfg.Name).Webhooks[0]
		if len(got.MatchConditions) != 2 || got.MatchConditions[0] != theirs || got.MatchConditions[1].Name != scope.ConditionName {
			t.Errorf("%s: conditions %v, want %s kept and the operator's sidecarset-selectors", cfg.Name, got.MatchConditions, theirs.Name)
		}
		if diff := cmp.Diff(&metav1.LabelSelector{}, got.ObjectSelector); diff != "" {
			t.Errorf("%s: objectSelector (-want +got):\n%s", cfg.Name, diff)
		}
		want := cfg.Webhooks[0]
		got.MatchConditions, got.ObjectSelector, want.MatchConditions, want.ObjectSelector = nil, nil, nil, nil
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: the scope write changed more than its condition and the label exemption (-before +after):\n%s", cfg.Name, diff)
		}
	}
}
