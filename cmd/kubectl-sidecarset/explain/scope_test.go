package explain

import (
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/scope"
)

// TestEvalInstalled covers each step of the API server's selection of a
// webhook for a pod's creation, as explain evaluates an installed webhook.
func TestEvalInstalled(t *testing.T) {
	t.Parallel()
	podCreate := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
	}}
	cond := func(name, expr string) []admissionregistrationv1.MatchCondition {
		return []admissionregistrationv1.MatchCondition{{Name: name, Expression: expr}}
	}
	tests := []struct {
		name       string
		webhook    admissionregistrationv1.MutatingWebhook
		nsLabels   map[string]string
		noPod      bool
		want       string
		wantReason string
	}{
		{name: "rules for pod updates only", webhook: admissionregistrationv1.MutatingWebhook{Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update}, Rule: podCreate[0].Rule}}},
			want: CalledNo, wantReason: "its rules do not cover the creation of pods"},
		{name: "rules for another resource", webhook: admissionregistrationv1.MutatingWebhook{Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: podCreate[0].Operations,
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}}}}},
			want: CalledNo, wantReason: "its rules do not cover the creation of pods"},
		{name: "wildcard rules and nothing else", webhook: admissionregistrationv1.MutatingWebhook{Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*"}}}}},
			want: CalledYes, wantReason: "it has no matchConditions"},
		{name: "a namespaceSelector and unread namespace labels",
			webhook: admissionregistrationv1.MutatingWebhook{Rules: podCreate, NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}},
			want:    CalledUnknown, wantReason: "the namespace's labels were not read"},
		{name: "a namespaceSelector that does not select the namespace", nsLabels: map[string]string{"team": "b"},
			webhook: admissionregistrationv1.MutatingWebhook{Rules: podCreate, NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}},
			want:    CalledNo, wantReason: `its namespaceSelector team=a does not select namespace "shop"`},
		{name: "an objectSelector that does not select the pod",
			webhook: admissionregistrationv1.MutatingWebhook{Rules: podCreate, ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}},
			want:    CalledNo, wantReason: "its objectSelector app=db does not select the pod's labels"},
		{name: "an objectSelector that selects the pod",
			webhook: admissionregistrationv1.MutatingWebhook{Rules: podCreate, ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
			want:    CalledYes},
		{name: "an invalid objectSelector", webhook: admissionregistrationv1.MutatingWebhook{Rules: podCreate, ObjectSelector: &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Bogus"}}}},
			want: CalledUnknown, wantReason: "its objectSelector cannot be evaluated"},
		{name: "a matchCondition on the pod's labels, true",
			webhook: admissionregistrationv1.MutatingWebhook{Rules: podCreate, MatchConditions: cond("web", `object.metadata.labels["app"] == "web"`)},
			want:    CalledYes, wantReason: "its rules, selectors and matchConditions select the pod"},
		{name: "a matchCondition on the request, false, named", webhook: admissionregistrationv1.MutatingWebhook{Rules: podCreate,
			MatchConditions: append(cond("creates", `request.operation == "CREATE"`), cond("elsewhere", `request.namespace != "shop"`)...)},
			want: CalledNo, wantReason: `matchCondition "elsewhere" is false for this pod`},
		{name: "a matchCondition that needs the authorizer",
			webhook: admissionregistrationv1.MutatingWebhook{Rules: podCreate, MatchConditions: cond("admins", `authorizer.group("").resource("pods").check("create").allowed()`)},
			want:    CalledUnknown, wantReason: "its matchConditions cannot be evaluated here"},
		{name: "a matchCondition that does not compile",
			webhook: admissionregistrationv1.MutatingWebhook{Rules: podCreate, MatchConditions: cond("broken", `object.metadata.labels[`)},
			want:    CalledUnknown, wantReason: "its matchConditions cannot be evaluated here"},
		{name: "no pod", noPod: true, webhook: admissionregistrationv1.MutatingWebhook{Rules: podCreate},
			want: CalledUnknown, wantReason: "no pod"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := Input{Namespace: "shop", NamespaceLabels: tc.nsLabels, Pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Labels: map[string]string{"app": "web"}}}}
			if tc.noPod {
				in.Pod = nil
			}
			attr, attrErr := podCreation(in)
			got, reason := evalInstalled(t.Context(), in, &tc.webhook, attr, attrErr)
			if got != tc.want || !strings.Contains(reason, tc.wantReason) {
				t.Errorf("evalInstalled = %s, %q; want %s, a reason containing %q", got, reason, tc.want, tc.wantReason)
			}
		})
	}
}

// TestExplainScope_Computed: without the configurations, the answer is the
// scope the operator computes from the SidecarSets, evaluated on the pod.
func TestExplainScope_Computed(t *testing.T) {
	t.Parallel()
	set := &appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "web-agent"}, Spec: appsv1beta1.SidecarSetSpec{
		Selector:          &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		NamespaceSelector: appsv1beta1.SelectNamespace("shop"),
	}}
	for _, tc := range []struct {
		name, namespace, app, want string
	}{
		{"a pod the SidecarSet selects", "shop", "web", CalledYes},
		{"a pod of another app", "shop", "db", CalledNo},
		{"a pod of another namespace", "other", "web", CalledNo},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := Input{Namespace: tc.namespace, Pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"app": tc.app}}},
				Webhooks: Webhooks{NotRead: "forbidden", Required: Webhook{Name: "required"}, BestEffort: Webhook{Name: "best-effort"}}}
			got := explainScope(t.Context(), in, []*appsv1beta1.SidecarSet{set})
			if got.Called != tc.want || got.Webhooks[0].Called != tc.want || got.Webhooks[1].Called != CalledNo {
				t.Errorf("explainScope = %+v; want the required webhook %s and the best-effort one no", got, tc.want)
			}
			if !strings.Contains(got.Webhooks[0].Reason, "computed from the SidecarSets' selectors (forbidden)") {
				t.Errorf("reason %q does not say the scope was computed", got.Webhooks[0].Reason)
			}
		})
	}
	// An installed configuration whose condition differs from the computed
	// scope is stale.
	in := Input{Namespace: "shop", Pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"app": "web"}}},
		Webhooks: Webhooks{Read: true, Required: Webhook{Name: "required", Installed: []Installed{{Configuration: "c", Webhook: admissionregistrationv1.MutatingWebhook{
			Name:            "required",
			Rules:           []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}},
			MatchConditions: []admissionregistrationv1.MatchCondition{{Name: scope.ConditionName, Expression: "false"}},
		}}}}}}
	got := explainScope(t.Context(), in, []*appsv1beta1.SidecarSet{set})
	if !got.Stale || got.Webhooks[0].Called != CalledNo || got.Webhooks[0].Expected != CalledYes {
		t.Errorf("explainScope = %+v; want stale, called no, expected yes", got)
	}
}

// TestExplainScope_AsTheOperatorInstallsIt: the scope the operator writes
// (its own pods of its namespace exempted) is not reported stale.
func TestExplainScope_AsTheOperatorInstallsIt(t *testing.T) {
	t.Parallel()
	set := &appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "web-agent"}, Spec: appsv1beta1.SidecarSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
	}}
	podCreate := []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}}
	for _, bestEffort := range []bool{true, false} {
		installed := scope.Installed([]*appsv1beta1.SidecarSet{set}, "kruise-system", bestEffort)
		hooks := Webhooks{Read: true, Required: Webhook{Name: "required", Installed: []Installed{{Configuration: "c", Webhook: admissionregistrationv1.MutatingWebhook{
			Name: "required", Rules: podCreate, MatchConditions: installed.Required.MatchConditions()}}}}, BestEffort: Webhook{Name: "best-effort"}}
		if bestEffort {
			hooks.BestEffort.Installed = []Installed{{Configuration: "c", Webhook: admissionregistrationv1.MutatingWebhook{
				Name: "best-effort", Rules: podCreate, MatchConditions: installed.BestEffort.MatchConditions()}}}
		}
		in := Input{Namespace: "shop", OperatorNamespace: "kruise-system", Webhooks: hooks,
			Pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"app": "web"}}}}
		got := explainScope(t.Context(), in, []*appsv1beta1.SidecarSet{set})
		if got.Stale || got.Called != CalledYes {
			t.Errorf("best-effort webhook installed %v: explainScope = %+v; want not stale, called", bestEffort, got)
		}
	}
}
