package explain

import (
	"fmt"
	"slices"
	"sync"

	"github.com/google/cel-go/cel"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/version"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/sidecarset-operator/sidecarset-operator/api/match"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
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
// server does: rules, namespaceSelector, objectSelector, then every
// matchCondition. Unread configurations are replaced by the scope the
// operator computes from the SidecarSets (scope.Build).
func explainScope(in Input, sets []*appsv1beta1.SidecarSet) Scope {
	activation, actErr := celActivation(in)
	bestEffortInstalled := !in.Webhooks.Read || len(in.Webhooks.BestEffort.Installed) > 0
	var required, bestEffort scope.Condition
	if bestEffortInstalled {
		sc := scope.Build(sets)
		required, bestEffort = sc.Required, sc.BestEffort
	} else {
		required = scope.BuildCombined(sets)
	}
	expect := func(c scope.Condition) string {
		if actErr != nil {
			return CalledUnknown
		}
		ok, err := evalCondition(c.Expression, activation)
		switch {
		case err != nil:
			return CalledUnknown
		case ok:
			return CalledYes
		}
		return CalledNo
	}
	var out Scope
	for _, w := range []struct {
		hook       Webhook
		policy     string
		condition  scope.Condition
		expected   string
		hasWebhook bool
	}{
		{in.Webhooks.Required, appsv1beta1.FailurePolicyFail, required, expect(required), true},
		{in.Webhooks.BestEffort, appsv1beta1.FailurePolicyIgnore, bestEffort, expect(bestEffort), bestEffortInstalled},
	} {
		if !w.hasWebhook {
			out.Webhooks = append(out.Webhooks, WebhookScope{Name: w.hook.Name, FailurePolicy: w.policy, Called: CalledNo,
				Reason: "not installed: the required webhook receives the pods of best-effort SidecarSets too", Expected: CalledNo})
			continue
		}
		if !in.Webhooks.Read {
			ws := WebhookScope{Name: w.hook.Name, FailurePolicy: w.policy, Called: w.expected, Expected: w.expected}
			ws.Reason = "computed from the SidecarSets' selectors (" + in.Webhooks.NotRead + ")"
			out.Webhooks = append(out.Webhooks, ws)
			continue
		}
		if len(w.hook.Installed) == 0 {
			out.Webhooks = append(out.Webhooks, WebhookScope{Name: w.hook.Name, FailurePolicy: w.policy, Called: CalledNo,
				Reason: "no MutatingWebhookConfiguration has this webhook", Expected: w.expected})
			continue
		}
		for _, inst := range w.hook.Installed {
			called, reason := evalInstalled(in, &inst.Webhook, activation, actErr)
			ws := WebhookScope{Name: w.hook.Name, FailurePolicy: w.policy, Configuration: inst.Configuration,
				Called: called, Reason: reason, Expected: w.expected}
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
// creation.
func evalInstalled(in Input, w *admissionregistrationv1.MutatingWebhook, activation map[string]any, actErr error) (string, string) {
	if !rulesMatchPodCreate(w.Rules) {
		return CalledNo, "its rules do not cover the creation of pods"
	}
	if !match.IsEmpty(w.NamespaceSelector) {
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
	if !match.IsEmpty(w.ObjectSelector) {
		sel, err := metav1.LabelSelectorAsSelector(w.ObjectSelector)
		if err != nil {
			return CalledUnknown, fmt.Sprintf("its objectSelector cannot be evaluated: %v", err)
		}
		if !sel.Matches(labels.Set(in.Pod.Labels)) {
			return CalledNo, fmt.Sprintf("its objectSelector %s does not select the pod's labels", sel)
		}
	}
	for _, c := range w.MatchConditions {
		if actErr != nil {
			return CalledUnknown, fmt.Sprintf("matchCondition %q cannot be evaluated: %v", c.Name, actErr)
		}
		ok, err := evalCondition(c.Expression, activation)
		if err != nil {
			return CalledUnknown, fmt.Sprintf("matchCondition %q cannot be evaluated here: %v", c.Name, err)
		}
		if !ok {
			return CalledNo, fmt.Sprintf("matchCondition %q is false for this pod", c.Name)
		}
	}
	if len(w.MatchConditions) == 0 {
		return CalledYes, "it has no matchConditions: every pod creation it selects is sent"
	}
	return CalledYes, "its rules, selectors and matchConditions select the pod"
}

func rulesMatchPodCreate(rules []admissionregistrationv1.RuleWithOperations) bool {
	has := func(list []string, v string) bool { return slices.Contains(list, v) || slices.Contains(list, "*") }
	return slices.ContainsFunc(rules, func(r admissionregistrationv1.RuleWithOperations) bool {
		ops := make([]string, len(r.Operations))
		for i, o := range r.Operations {
			ops[i] = string(o)
		}
		return has(ops, string(admissionregistrationv1.Create)) && has(r.APIGroups, "") &&
			has(r.APIVersions, "v1") && has(r.Resources, "pods")
	})
}

// celEnv is the API server's environment for webhook matchConditions
// (object, oldObject and request; the authorizer is not available here).
var celEnv = sync.OnceValues(func() (*cel.Env, error) {
	set, err := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()).Extend(environment.VersionedOptions{
		IntroducedVersion: version.MajorMinor(1, 0),
		EnvOptions: []cel.EnvOption{
			cel.Variable("object", cel.DynType),
			cel.Variable("oldObject", cel.DynType),
			cel.Variable("request", cel.DynType),
		},
	})
	if err != nil {
		return nil, err
	}
	return set.Env(environment.StoredExpressions)
})

// evalCondition evaluates one matchCondition expression.
func evalCondition(expr string, activation map[string]any) (bool, error) {
	env, err := celEnv()
	if err != nil {
		return false, err
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return false, iss.Err()
	}
	prg, err := env.Program(ast, cel.CostLimit(celconfig.PerCallLimit))
	if err != nil {
		return false, err
	}
	out, _, err := prg.Eval(activation)
	if err != nil {
		return false, err
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, fmt.Errorf("the expression is a %v, not a bool", out.Type())
	}
	return b, nil
}

// celActivation is the pod's creation request as matchConditions see it.
func celActivation(in Input) (map[string]any, error) {
	if in.Pod == nil {
		return nil, fmt.Errorf("no pod")
	}
	pod := in.Pod.DeepCopy()
	pod.Namespace = in.Namespace
	object, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pod)
	if err != nil {
		return nil, err
	}
	gvr := corev1.SchemeGroupVersion.WithResource("pods")
	return map[string]any{
		"object":    object,
		"oldObject": nil,
		"request": map[string]any{
			"namespace": in.Namespace,
			"name":      pod.Name,
			"operation": string(admissionregistrationv1.Create),
			"kind":      map[string]any{"group": "", "version": "v1", "kind": "Pod"},
			"resource":  map[string]any{"group": gvr.Group, "version": gvr.Version, "resource": gvr.Resource},
			"dryRun":    false,
		},
	}, nil
}
