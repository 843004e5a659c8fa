package explain

import (
	"bytes"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/internal/candidate"
	"github.com/sidecarset-operator/sidecarset-operator/policy"
	"github.com/sidecarset-operator/sidecarset-operator/policy/podmeta"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
	"github.com/sidecarset-operator/sidecarset-operator/test/golden"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/inject"
)

const (
	requiredHook   = "mpod.sidecarset-operator.dev"
	bestEffortHook = "mpod-best-effort.sidecarset-operator.dev"
)

var testNow = metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))

// situation is one explain case: a pod, its namespace and the SidecarSets.
type situation struct {
	pod             *corev1.Pod
	namespaceLabels map[string]string
	sets            []*appsv1beta1.SidecarSet
	whitelist       *policy.Snapshot
	webhooks        *Webhooks
	existing        bool
}

// explain runs the injector the way the webhook does with every SidecarSet
// as a candidate (defaulted and hashed by the registry), then explains.
func (s situation) explain(t *testing.T) Report {
	t.Helper()
	r, err := candidate.New(s.sets...)
	if err != nil {
		t.Fatal(err)
	}
	ns := s.pod.Namespace
	labels := map[string]string{"kubernetes.io/metadata.name": ns}
	maps.Copy(labels, s.namespaceLabels)
	in := inject.Input{Pod: s.pod, Namespace: inject.Namespace{Name: ns, Labels: labels}, Now: testNow, Rand: 0.5,
		Whitelist: podmeta.Whitelist{Snapshot: s.whitelist}}
	for _, e := range r.All() {
		in.Candidates = append(in.Candidates, inject.Candidate{SidecarSet: e.SidecarSet, Hashes: e.Hashes, Resources: e.Resources})
	}
	out, err := inject.Inject(in)
	hooks := Webhooks{NotRead: "offline", Required: Webhook{Name: requiredHook}, BestEffort: Webhook{Name: bestEffortHook}}
	if s.webhooks != nil {
		hooks = *s.webhooks
	}
	return Explain(t.Context(), Input{
		Pod: s.pod, Existing: s.existing, Source: "pod " + ns + "/" + s.pod.Name, Namespace: ns, NamespaceLabels: labels,
		Injection: in, Output: out, Denied: err, Whitelist: s.whitelist, Webhooks: hooks,
	})
}

func webPod() *builder.PodWrapper {
	return builder.MakePod("web", "team-a").Name("web-1").Label("app", "web").Containers(builder.MakeContainer("main", "nginx:1.25"))
}

func proxy(name string) *builder.SidecarSetWrapper {
	return builder.MakeSidecarSet(name, "app", "web").Containers(builder.MakeContainer(name, "envoy:1.30"))
}

// outcomes summarises the verdicts as name -> outcome.
func outcomes(r Report) map[string]string {
	out := map[string]string{}
	for _, v := range r.SidecarSets {
		out[v.Name] = v.Outcome
	}
	return out
}

func verdictOf(t *testing.T, r Report, name string) Verdict {
	t.Helper()
	for _, v := range r.SidecarSets {
		if v.Name == name {
			return v
		}
	}
	t.Fatalf("no verdict for %s in %+v", name, r.SidecarSets)
	return Verdict{}
}

func TestExplain_Reasons(t *testing.T) {
	t.Parallel()
	paused := proxy("paused").InjectionPaused(true).Obj()
	otherNS := proxy("other-namespace").Namespace("team-b").Obj()
	byLabel := proxy("by-namespace-label").NamespaceSelector(map[string]string{"tier": "prod"}).Obj()
	otherApp := builder.MakeSidecarSet("other-app", "app", "api").Containers(builder.MakeContainer("log", "fluent:1")).Obj()
	conflict := builder.MakeSidecarSet("conflict", "app", "web").Containers(builder.MakeContainer("main", "x:1")).Obj()
	base := proxy("base").Obj()
	canary := builder.MakeSidecarSet("canary", "app", "web").Containers(builder.MakeContainer("base", "envoy:1.31")).
		Annotation(appsv1beta1.SidecarSetCanaryAnnotation, "true").Annotation(appsv1beta1.SidecarSetBaseAnnotation, "base").Obj()
	r := situation{
		pod:  webPod().Obj(),
		sets: []*appsv1beta1.SidecarSet{paused, otherNS, byLabel, otherApp, conflict, base, canary, proxy("proxy").Obj()},
	}.explain(t)

	want := map[string]string{
		"paused":             inject.ReasonInjectionPaused,
		"other-namespace":    inject.ReasonNamespaceNotSelected,
		"by-namespace-label": inject.ReasonNamespaceNotSelected,
		"other-app":          inject.ReasonPodNotSelected,
		"conflict":           inject.ReasonNameConflict,
		"base":               inject.ReasonReplacedByCanary,
		"canary":             OutcomeInjected,
		"proxy":              OutcomeInjected,
	}
	if diff := cmp.Diff(want, outcomes(r)); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	if got := verdictOf(t, r, "other-app").Selection; got != "selector: app=api" {
		t.Errorf("other-app's selection = %q", got)
	}
	if got := verdictOf(t, r, "other-namespace").Selection; got != "namespace: team-b" {
		t.Errorf("other-namespace's selection = %q", got)
	}
	if got := verdictOf(t, r, "by-namespace-label").Selection; got != "namespaceSelector: tier=prod" {
		t.Errorf("by-namespace-label's selection = %q", got)
	}
	if v := verdictOf(t, r, "conflict"); !v.Selected || !slices.ContainsFunc(r.Warnings, func(w string) bool { return strings.Contains(w, `"main"`) }) {
		t.Errorf("a name conflict is a selected SidecarSet left out, with a warning naming the container: %+v, %q", v, r.Warnings)
	}
	if v := verdictOf(t, r, "base"); v.Selected {
		t.Errorf("a base replaced by its canary does not count as selected: %+v", v)
	}
	wantProxy := []Container{{Name: "proxy", Image: "envoy:1.30", SidecarSet: "proxy"}}
	if diff := cmp.Diff(wantProxy, verdictOf(t, r, "proxy").Adds); diff != "" {
		t.Errorf("proxy adds (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(verdictOf(t, r, "proxy").Version, "latest spec (hash ") {
		t.Errorf("proxy version = %q", verdictOf(t, r, "proxy").Version)
	}
	wantAnnotations := []string{appsv1beta1.SidecarSetHashAnnotation, appsv1beta1.SidecarSetHashWithoutImageAnnotation, appsv1beta1.SidecarSetListAnnotation, appsv1beta1.ReachAnnotation}
	if diff := cmp.Diff(wantAnnotations, r.Added.Annotations); diff != "" {
		t.Errorf("added annotations (-want +got):\n%s", diff)
	}
	if r.Scope.Called != CalledYes || r.Result != "admitted with the sidecars of canary, proxy" {
		t.Errorf("scope %q, result %q", r.Scope.Called, r.Result)
	}
}

func TestExplain_Failures(t *testing.T) {
	t.Parallel()
	unresolved := appsv1beta1.SidecarSetInjectRevision{RevisionName: new("gone"), Policy: appsv1beta1.AlwaysSidecarSetInjectRevisionPolicy}
	tests := []struct {
		name        string
		set         *appsv1beta1.SidecarSet
		wantOutcome string
		wantDenied  bool
		wantWarning bool
	}{
		{"a required SidecarSet that cannot be applied denies the pod",
			proxy("pinned").InjectRevision(unresolved).Obj(), OutcomeFailed, true, false},
		{"a best-effort one is left out with a warning",
			proxy("pinned").InjectRevision(unresolved).Annotation(appsv1beta1.FailurePolicyAnnotation, appsv1beta1.FailurePolicyIgnore).Obj(),
			inject.ReasonFailed, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := situation{pod: webPod().Obj(), sets: []*appsv1beta1.SidecarSet{tc.set, proxy("proxy").Obj()}}.explain(t)
			v := verdictOf(t, r, "pinned")
			if v.Outcome != tc.wantOutcome || !v.Selected || !strings.Contains(v.Message, `revisionName "gone"`) {
				t.Errorf("verdict %+v", v)
			}
			if (r.Denied != "") != tc.wantDenied || strings.HasPrefix(r.Result, "denied: ") != tc.wantDenied {
				t.Errorf("denied %q, result %q", r.Denied, r.Result)
			}
			if (len(r.Warnings) > 0) != tc.wantWarning {
				t.Errorf("warnings %q", r.Warnings)
			}
		})
	}
}

func TestExplain_Whitelist(t *testing.T) {
	t.Parallel()
	w, err := policy.ParseWhitelist(`{"rules":[{"allowedAnnotationKeyExprs":["^allowed$"]}]}`)
	if err != nil {
		t.Fatal(err)
	}
	snapshot := &policy.Snapshot{Whitelist: w, Present: true}
	set := func(key string) *appsv1beta1.SidecarSet {
		return proxy("proxy").PatchPodMetadata(appsv1beta1.SidecarSetRetainPatchPolicy, map[string]string{key: "v"}).Obj()
	}
	tests := []struct {
		name      string
		set       *appsv1beta1.SidecarSet
		whitelist *policy.Snapshot
		want      string
	}{
		{"an allowed key says so", set("allowed"), snapshot, "every patchPodMetadata annotation key is allowed"},
		{"a key the whitelist does not allow is named", set("other"), snapshot, "annotation(other) is not allowed"},
		{"a missing ConfigMap allows nothing without the gate", set("other"), &policy.Snapshot{}, "whitelist not found"},
		{"an unread whitelist is not checked", set("other"), nil, "not checked"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := situation{pod: webPod().Obj(), sets: []*appsv1beta1.SidecarSet{tc.set}, whitelist: tc.whitelist}.explain(t)
			got := strings.Join(verdictOf(t, r, "proxy").Whitelist, "\n")
			if !strings.Contains(got, tc.want) {
				t.Errorf("whitelist verdict %q does not contain %q", got, tc.want)
			}
		})
	}
}

func TestExplain_Scope(t *testing.T) {
	t.Parallel()
	fail, ignore := admissionregistrationv1.Fail, admissionregistrationv1.Ignore
	podCreate := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
	}}
	hook := func(name string, policy *admissionregistrationv1.FailurePolicyType, expr string, others ...admissionregistrationv1.MatchCondition) Webhook {
		return Webhook{Name: name, Installed: []Installed{{Configuration: "sidecarset-operator-mutating", Webhook: admissionregistrationv1.MutatingWebhook{
			Name: name, FailurePolicy: policy, Rules: podCreate,
			ObjectSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "app.kubernetes.io/name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"sidecarset-operator"}}}},
			MatchConditions: append(others, admissionregistrationv1.MatchCondition{Name: "sidecarset-selectors", Expression: expr}),
		}}}}
	}
	current := `has(object.metadata.labels) ? (('app' in object.metadata.labels && object.metadata.labels['app'] == 'web')) : (false)`
	tests := []struct {
		name       string
		pod        *corev1.Pod
		webhooks   *Webhooks
		wantCalled []string
		want       string
		wantStale  bool
	}{
		{"offline, the scope is computed from the SidecarSets", webPod().Obj(), nil,
			[]string{CalledYes, CalledNo}, CalledYes, false},
		{"the installed condition of the current SidecarSets sends the pod to the required webhook", webPod().Obj(),
			&Webhooks{Read: true, Required: hook(requiredHook, &fail, current), BestEffort: hook(bestEffortHook, &ignore, "false")},
			[]string{CalledYes, CalledNo}, CalledYes, false},
		{"a stale installed condition sends the pod nowhere, and says it is stale", webPod().Obj(),
			&Webhooks{Read: true, Required: hook(requiredHook, &fail, "false"), BestEffort: hook(bestEffortHook, &ignore, "false")},
			[]string{CalledNo, CalledNo}, CalledNo, true},
		{"the objectSelector keeps the operator's own pods out", webPod().Label("app.kubernetes.io/name", "sidecarset-operator").Obj(),
			&Webhooks{Read: true, Required: hook(requiredHook, &fail, current), BestEffort: hook(bestEffortHook, &ignore, "false")},
			[]string{CalledNo, CalledNo}, CalledNo, false},
		{"a condition of someone else's that needs the authorizer cannot be told", webPod().Obj(),
			&Webhooks{Read: true, Required: hook(requiredHook, &fail, current, admissionregistrationv1.MatchCondition{
				Name: "authorized", Expression: "authorizer.group('').resource('pods').check('create').allowed()"}),
				BestEffort: hook(bestEffortHook, &ignore, "false")},
			[]string{CalledUnknown, CalledNo}, CalledUnknown, false},
		{"a webhook that is not installed is never called", webPod().Obj(),
			&Webhooks{Read: true, Required: Webhook{Name: requiredHook}, BestEffort: hook(bestEffortHook, &ignore, "false")},
			[]string{CalledNo, CalledNo}, CalledNo, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := situation{pod: tc.pod, sets: []*appsv1beta1.SidecarSet{proxy("proxy").Obj()}, webhooks: tc.webhooks}.explain(t)
			var called []string
			for _, w := range r.Scope.Webhooks {
				called = append(called, w.Called)
			}
			if diff := cmp.Diff(tc.wantCalled, called); diff != "" {
				t.Errorf("called per webhook (-want +got):\n%s\n%+v", diff, r.Scope.Webhooks)
			}
			if r.Scope.Called != tc.want || r.Scope.Stale != tc.wantStale {
				t.Errorf("scope %+v", r.Scope)
			}
			if tc.want == CalledNo && r.Result != "admitted unchanged: the API server calls no pod webhook for it" {
				t.Errorf("result %q", r.Result)
			}
		})
	}
}

func TestExplain_ExistingPod(t *testing.T) {
	t.Parallel()
	sets := []*appsv1beta1.SidecarSet{proxy("proxy").Obj()}
	// The pod as the webhook admitted it earlier.
	first := situation{pod: webPod().Obj(), sets: sets}.explain(t)
	if first.Result != "admitted with the sidecars of proxy" {
		t.Fatalf("first admission: %q", first.Result)
	}
	admitted := injectedPod(t, webPod().Obj(), sets)
	r := situation{pod: admitted, sets: sets, existing: true}.explain(t)
	if got := verdictOf(t, r, "proxy").Outcome; got != inject.ReasonAlreadyInjected {
		t.Errorf("outcome %q, want %s", got, inject.ReasonAlreadyInjected)
	}
	if r.Recorded == nil || len(r.Recorded.SidecarSets) != 1 || r.Recorded.SidecarSets[0].Current != "the SidecarSet's current spec" {
		t.Errorf("recorded %+v", r.Recorded)
	}
	if r.Result != "If this pod were created now: admitted unchanged" {
		t.Errorf("result %q", r.Result)
	}
}

func injectedPod(t *testing.T, pod *corev1.Pod, sets []*appsv1beta1.SidecarSet) *corev1.Pod {
	t.Helper()
	r, err := candidate.New(sets...)
	if err != nil {
		t.Fatal(err)
	}
	in := inject.Input{Pod: pod, Namespace: inject.Namespace{Name: pod.Namespace}, Now: testNow}
	for _, e := range r.All() {
		in.Candidates = append(in.Candidates, inject.Candidate{SidecarSet: e.SidecarSet, Hashes: e.Hashes})
	}
	out, err := inject.Inject(in)
	if err != nil {
		t.Fatal(err)
	}
	return out.Pod
}

// TestReport_WriteText compares the text of a few reports with golden
// files (REFRESH_GOLDEN=true rewrites them).
func TestReport_WriteText(t *testing.T) {
	t.Parallel()
	whitelist, err := policy.ParseWhitelist(`{"rules":[{"allowedAnnotationKeyExprs":["^team$"]}]}`)
	if err != nil {
		t.Fatal(err)
	}
	sets := []*appsv1beta1.SidecarSet{
		proxy("proxy").PatchPodMetadata(appsv1beta1.SidecarSetRetainPatchPolicy, map[string]string{"team": "a"}).Obj(),
		builder.MakeSidecarSet("logging", "app", "api").Containers(builder.MakeContainer("log", "fluent:1")).
			Annotation(appsv1beta1.FailurePolicyAnnotation, appsv1beta1.FailurePolicyIgnore).Obj(),
		proxy("paused").InjectionPaused(true).Obj(),
	}
	cases := map[string]situation{
		"new-pod":      {pod: webPod().Obj(), sets: sets, whitelist: &policy.Snapshot{Whitelist: whitelist, Present: true}},
		"existing-pod": {pod: injectedPod(t, webPod().Obj(), sets), sets: sets, existing: true},
		"unselected":   {pod: webPod().Label("app", "db").Obj(), sets: sets},
	}
	for name, s := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var b bytes.Buffer
			if err := s.explain(t).WriteText(&b); err != nil {
				t.Fatal(err)
			}
			golden.Compare(t, filepath.Join("testdata", name+".txt"), b.Bytes())
		})
	}
}
