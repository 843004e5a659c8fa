package explain

import (
	"context"
	"errors"
	"fmt"
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/object"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/rules"

	"github.com/sidecarset-operator/sidecarset-operator/api/match"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/policy/celenv"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/scope"
)

// Webhooks are the two pod webhooks, as installed.
type Webhooks struct {
	// Read is set when the MutatingWebhookConfigurations were read;
	// otherwise the scope is computed from the SidecarSets, and NotRead
	// says why.
	Read bool
	// NotRead says why the configurations were not read.
	NotRead string
	// Required is the failurePolicy Fail webhook.
	Required Webhook
	// BestEffort is the failurePolicy Ignore webhook.
	BestEffort Webhook
}

// Webhook is one pod webhook.
type Webhook struct {
	// Name of the webhook.
	Name string
	// Installed are its definitions found in the configurations: usually
	// one, none when it is not installed.
	Installed []Installed
}

// Installed is a webhook definition in a MutatingWebhookConfiguration.
type Installed struct {
	// Configuration names the MutatingWebhookConfiguration.
	Configuration string
	// Webhook is the definition.
	Webhook admissionregistrationv1.MutatingWebhook
}

// Scope says whether the API server sends the pod to a pod webhook.
type Scope struct {
	// Called is CalledYes when some pod webhook is called for the pod,
	// CalledNo when none is, CalledUnknown when that cannot be told.
	Called string `json:"called"`
	// Webhooks has the answer of each pod webhook.
	Webhooks []WebhookScope `json:"webhooks"`
	// Stale is set when an installed condition disagrees with the scope
	// the current SidecarSets give.
	Stale bool `json:"stale,omitempty"`
}

// Answers of Scope.Called and WebhookScope.Called.
const (
	CalledYes     = "yes"
	CalledNo      = "no"
	CalledUnknown = "unknown"
)

// WebhookScope is whether one pod webhook is called for the pod.
type WebhookScope struct {
	// Name of the webhook.
	Name string `json:"name"`
	// FailurePolicy is Fail (required SidecarSets) or Ignore (best-effort).
	FailurePolicy string `json:"failurePolicy"`
	// Configuration names the MutatingWebhookConfiguration it was read
	// from; empty when computed.
	Configuration string `json:"configuration,omitempty"`
	// Called is CalledYes, CalledNo or CalledUnknown.
	Called string `json:"called"`
	// Reason says why.
	Reason string `json:"reason"`
	// Expected is what the scope of the current SidecarSets says
	// (CalledYes or CalledNo).
	Expected string `json:"expected"`
}

// explainScope evaluates the webhooks' selection of the pod as the API
// server does, with the API server's own matchers: rules,
// namespaceSelector, objectSelector, then every matchCondition. Unread
// configurations are replaced by the scope the operator computes from the
// SidecarSets (scope.Build).
func explainScope(ctx context.Context, in Input, sets []*appsv1beta1.SidecarSet) Scope {
	attr, attrErr := podCreation(in)
	bestEffortInstalled := !in.Webhooks.Read || len(in.Webhooks.BestEffort.Installed) > 0
	installed := scope.Installed(sets, in.OperatorNamespace, bestEffortInstalled)
	required, bestEffort := installed.Required, installed.BestEffort
	expect := func(name string, c scope.Condition) string {
		if attrErr != nil {
			return CalledUnknown
		}
		r := celenv.Matcher(name, []admissionregistrationv1.MatchCondition{{Name: scope.ConditionName, Expression: c.Expression}}).
			Match(ctx, attr, nil, nil)
		switch {
		case r.Error != nil:
			return CalledUnknown
		case r.Matches:
			return CalledYes
		}
		return CalledNo
	}
	var out Scope
	for _, w := range []struct {
		hook       Webhook
		policy     string
		condition  scope.Condition
		hasWebhook bool
	}{
		{in.Webhooks.Required, appsv1beta1.FailurePolicyFail, required, true},
		{in.Webhooks.BestEffort, appsv1beta1.FailurePolicyIgnore, bestEffort, bestEffortInstalled},
	} {
		if !w.hasWebhook {
			out.Webhooks = append(out.Webhooks, WebhookScope{Name: w.hook.Name, FailurePolicy: w.policy, Called: CalledNo,
				Reason: "not installed: the required webhook receives the pods of best-effort SidecarSets too", Expected: CalledNo})
			continue
		}
		expected := expect(w.hook.Name, w.condition)
		if !in.Webhooks.Read {
			ws := WebhookScope{Name: w.hook.Name, FailurePolicy: w.policy, Called: expected, Expected: expected}
			ws.Reason = "computed from the SidecarSets' selectors (" + in.Webhooks.NotRead + ")"
			out.Webhooks = append(out.Webhooks, ws)
			continue
		}
		if len(w.hook.Installed) == 0 {
			out.Webhooks = append(out.Webhooks, WebhookScope{Name: w.hook.Name, FailurePolicy: w.policy, Called: CalledNo,
				Reason: "no MutatingWebhookConfiguration has this webhook", Expected: expected})
			continue
		}
		for _, inst := range w.hook.Installed {
			called, reason := evalInstalled(ctx, in, &inst.Webhook, attr, attrErr)
			ws := WebhookScope{Name: w.hook.Name, FailurePolicy: w.policy, Configuration: inst.Configuration,
				Called: called, Reason: reason, Expected: expected}
			if inst.Webhook.FailurePolicy != nil {
				ws.FailurePolicy = string(*inst.Webhook.FailurePolicy)
			}
			i := slices.IndexFunc(inst.Webhook.MatchConditions, func(c admissionregistrationv1.MatchCondition) bool { return c.Name == scope.ConditionName })
			switch {
			case i < 0:
				ws.Reason += fmt.Sprintf(" (it has no %q matchCondition: the operator does not scope it, --scope-pod-webhook=false)", scope.ConditionName)
			case inst.Webhook.MatchConditions[i].Expression != w.condition.Expression:
				out.Stale = true
			}
			out.Webhooks = append(out.Webhooks, ws)
		}
	}
	out.Called = CalledNo
	for _, w := range out.Webhooks {
		switch {
		case w.Called == CalledYes:
			out.Called = CalledYes
		case w.Called == CalledUnknown && out.Called == CalledNo:
			out.Called = CalledUnknown
		}
	}
	return out
}

// evalInstalled decides whether an installed webhook is called for the pod's
// creation, with the API server's matchers for the rules, the
// objectSelector and the matchConditions.
func evalInstalled(ctx context.Context, in Input, w *admissionregistrationv1.MutatingWebhook, attr *admission.VersionedAttributes, attrErr error) (string, string) {
	if attrErr != nil {
		return CalledUnknown, fmt.Sprintf("the pod's creation cannot be evaluated: %v", attrErr)
	}
	if !slices.ContainsFunc(w.Rules, func(r admissionregistrationv1.RuleWithOperations) bool {
		return (&rules.Matcher{Rule: r, Attr: attr}).Matches()
	}) {
		return CalledNo, "its rules do not cover the creation of pods"
	}
	if !match.IsEmpty(w.NamespaceSelector) {
		// The API server reads the namespace's labels from its informer; the
		// caller read them (or could not).
		if in.NamespaceLabels == nil {
			return CalledUnknown, "it has a namespaceSelector and the namespace's labels were not read"
		}
		ok, err := match.Selects(w.NamespaceSelector, in.NamespaceLabels)
		if err != nil {
			return CalledUnknown, fmt.Sprintf("its namespaceSelector cannot be evaluated: %v", err)
		}
		if !ok {
			return CalledNo, fmt.Sprintf("its namespaceSelector %s does not select namespace %q", formatSelector(w.NamespaceSelector), in.Namespace)
		}
	}
	objectSelector := parsedSelector{w.ObjectSelector}
	if ok, err := (&object.Matcher{}).MatchObjectSelector(objectSelector, attr); err != nil {
		return CalledUnknown, fmt.Sprintf("its objectSelector cannot be evaluated: %v", err)
	} else if !ok {
		sel, _ := objectSelector.GetParsedObjectSelector()
		return CalledNo, fmt.Sprintf("its objectSelector %s does not select the pod's labels", sel)
	}
	if len(w.MatchConditions) == 0 {
		return CalledYes, "it has no matchConditions: every pod creation it selects is sent"
	}
	r := celenv.Matcher(w.Name, w.MatchConditions).Match(ctx, attr, nil, nil)
	switch {
	case r.Error != nil:
		return CalledUnknown, fmt.Sprintf("its matchConditions cannot be evaluated here: %v", r.Error)
	case !r.Matches:
		return CalledNo, fmt.Sprintf("matchCondition %q is false for this pod", r.FailedConditionName)
	}
	return CalledYes, "its rules, selectors and matchConditions select the pod"
}

// parsedSelector gives a webhook's objectSelector to the API server's
// object matcher. An absent one selects everything, as the API server's
// defaulting (an empty selector) makes it.
type parsedSelector struct{ selector *metav1.LabelSelector }

func (p parsedSelector) GetParsedObjectSelector() (labels.Selector, error) {
	if p.selector == nil {
		return labels.Everything(), nil
	}
	return metav1.LabelSelectorAsSelector(p.selector)
}

// podCreation is the pod's creation request as the API server's matchers
// see it.
func podCreation(in Input) (*admission.VersionedAttributes, error) {
	if in.Pod == nil {
		return nil, errors.New("no pod")
	}
	pod := in.Pod.DeepCopy()
	pod.Namespace = in.Namespace
	kind := corev1.SchemeGroupVersion.WithKind("Pod")
	attr := admission.NewAttributesRecord(pod, nil, kind, in.Namespace, pod.Name,
		corev1.SchemeGroupVersion.WithResource("pods"), "", admission.Create, &metav1.CreateOptions{}, false, nil)
	return &admission.VersionedAttributes{Attributes: attr, VersionedObject: admission.NewLazyObject(pod), VersionedKind: kind}, nil
}
