package podscope

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/sidecarset-operator/sidecarset-operator/api/install"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/internal/scopestate"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/names"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/scope"
)

// TestPodWebhookScope_FallsBackWhenRefused: a condition the API server
// refuses (here, one naming a label it objects to) does not leave the old
// scope in force silently: the required webhook keeps its condition, every
// pod goes to the best-effort webhook, and every SidecarSet is reported.
// The API server's refusal is simulated: no real limit short of 100 000
// characters is known to refuse what MaxExpressionLength lets through.
func TestPodWebhookScope_FallsBackWhenRefused(t *testing.T) {
	scheme := scopeTestScheme()
	condition := func(expr string) []admissionregistrationv1.MatchCondition {
		return []admissionregistrationv1.MatchCondition{{Name: scope.ConditionName, Expression: expr}}
	}
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: names.MutatingConfigName},
		Webhooks: []admissionregistrationv1.MutatingWebhook{
			{Name: names.PodWebhookName, MatchConditions: condition("request.namespace == 'before'")},
			{Name: names.PodBestEffortWebhookName, MatchConditions: condition("false")},
		},
	}
	set := func(name, label string) *appsv1beta1.SidecarSet {
		s := &appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: name}}
		s.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{label: "x"}}
		return s
	}
	refused := 0
	c := fake.NewClientBuilder().WithScheme(scheme).
		WithObjects(cfg, set("mesh", "app"), set("odd", "refuse-me")).
		WithInterceptorFuncs(interceptor.Funcs{Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			for _, w := range obj.(*admissionregistrationv1.MutatingWebhookConfiguration).Webhooks {
				for _, mc := range w.MatchConditions {
					if strings.Contains(mc.Expression, "refuse-me") {
						refused++
						return apierrors.NewInvalid(schema.GroupKind{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"}, obj.GetName(),
							field.ErrorList{field.Invalid(field.NewPath("webhooks").Index(0).Child("matchConditions").Index(0).Child("expression"), "…", "too costly")})
					}
				}
			}
			return c.Update(ctx, obj, opts...)
		}}).Build()
	state := &scopestate.State{}
	r := &PodWebhookScope{Client: c, ConfigName: names.MutatingConfigName, State: state}
	if err := r.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if refused != 1 {
		t.Fatalf("the refused condition was written %d times, want once", refused)
	}
	got := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := c.Get(context.Background(), types.NamespacedName{Name: names.MutatingConfigName}, got); err != nil {
		t.Fatal(err)
	}
	if e := got.Webhooks[0].MatchConditions[0].Expression; e != "request.namespace == 'before'" {
		t.Fatalf("the required webhook's condition is %q, want the one it had", e)
	}
	if e := got.Webhooks[1].MatchConditions[0].Expression; e != "true" {
		t.Fatalf("the best-effort webhook's condition is %q, want true", e)
	}
	for _, name := range []string{"mesh", "odd"} {
		msg, ok := state.Degraded(name)
		if !ok || !strings.Contains(msg, "the API server refused the pod webhooks' scope") || !strings.Contains(msg, "too costly") {
			t.Fatalf("%s: degraded %v, %q", name, ok, msg)
		}
	}
}

func TestScopeInputChanged_IgnoresStatusWrites(t *testing.T) {
	t.Parallel()
	old := &appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "s", Generation: 1, ResourceVersion: "1"}}
	status := old.DeepCopy()
	status.ResourceVersion, status.Status.MatchedPods = "2", 3
	spec := status.DeepCopy()
	spec.Generation = 2
	annotated := status.DeepCopy()
	annotated.Annotations = map[string]string{appsv1beta1.FailurePolicyAnnotation: "Ignore"}
	for name, tc := range map[string]struct {
		obj  *appsv1beta1.SidecarSet
		want bool
	}{"a status write": {status, false}, "a spec change": {spec, true}, "an annotation": {annotated, true}} {
		if got := scopeInputChanged.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: tc.obj}); got != tc.want {
			t.Errorf("%s: %v, want %v", name, got, tc.want)
		}
	}
	if !scopeInputChanged.Create(event.CreateEvent{Object: old}) || !scopeInputChanged.Delete(event.DeleteEvent{Object: old}) {
		t.Error("a creation or a deletion was filtered out")
	}
}

// TestPodWebhookScope_RecordsWhenEachGenerationWasWritten: the controller
// holds the recreation of pods that lack a SidecarSet's sidecars until the
// API server has had time to take in the scope holding it, so Sync tells it
// when each SidecarSet's generation reached the webhook configuration.
func TestPodWebhookScope_RecordsWhenEachGenerationWasWritten(t *testing.T) {
	scheme := scopeTestScheme()
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: names.MutatingConfigName},
		Webhooks:   []admissionregistrationv1.MutatingWebhook{{Name: names.PodWebhookName}, {Name: names.PodBestEffortWebhookName}},
	}
	mesh := &appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "mesh"}}
	mesh.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(cfg, mesh).Build()
	state := &scopestate.State{}
	r := &PodWebhookScope{Client: c, ConfigName: names.MutatingConfigName, State: state}
	ctx := context.Background()

	before := time.Now()
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	first, ok := state.WrittenAt("mesh", mesh.Generation)
	if !ok || first.Before(before) || first.After(time.Now()) {
		t.Fatalf("mesh: written at %v (%v), want the time of this sync's write", first, ok)
	}

	// Nothing changes: no write, and the time stays.
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if at, ok := state.WrittenAt("mesh", mesh.Generation); !ok || !at.Equal(first) {
		t.Fatalf("mesh: written at %v (%v) after a sync with nothing to write, want %v", at, ok, first)
	}

	// A new SidecarSet already covered by the written scope (the same
	// selection) needs no write: it dates from the last one.
	same := &appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "same"}}
	same.Spec.Selector = mesh.Spec.Selector
	if err := c.Create(ctx, same); err != nil {
		t.Fatal(err)
	}
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if at, ok := state.WrittenAt("same", same.Generation); !ok || !at.Equal(first) {
		t.Fatalf("same: written at %v (%v), want %v", at, ok, first)
	}
}

// scopeTestScheme holds the built-in types and the SidecarSet API.
func scopeTestScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	install.Install(scheme)
	return scheme
}

// TestPodWebhookScope_DegradedMessagesHoldWhileSidecarSetsArrive: a
// SidecarSet the scope keeps leaving out is not told again when another
// SidecarSet arrives. Its message named the number of SidecarSets in the
// scope: each arrival changed the message of every one left out, and the
// controller rewrote each one's condition and emitted a warning again (320
// arrivals, 80 left out: some 20 000 status writes and events; the
// webhook suite's degraded-scope spec timed out behind them in CI).
func TestPodWebhookScope_DegradedMessagesHoldWhileSidecarSetsArrive(t *testing.T) {
	scheme := scopeTestScheme()
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: names.MutatingConfigName},
		Webhooks:   []admissionregistrationv1.MutatingWebhook{{Name: names.PodWebhookName}, {Name: names.PodBestEffortWebhookName}},
	}
	// Negative-only selectors with long values, confined to a namespace
	// each: they cannot be compacted, 320 of them do not fit.
	negative := func(i int) *appsv1beta1.SidecarSet {
		s := &appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("degrade-%03d", i)}}
		var values []string
		for j := range 4 {
			values = append(values, fmt.Sprintf("%s-%03d-%d", strings.Repeat("v", 50), i, j))
		}
		s.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: fmt.Sprintf("example.com/%s%03d", strings.Repeat("k", 40), i), Operator: metav1.LabelSelectorOpNotIn, Values: values,
		}}}
		s.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{s.Name: "on"}}
		return s
	}
	objs := []client.Object{cfg}
	for i := range 320 {
		objs = append(objs, negative(i))
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	state := &scopestate.State{}
	var told []string
	state.OnChange(func(name string) { told = append(told, name) })
	r := &PodWebhookScope{Client: c, ConfigName: names.MutatingConfigName, State: state}
	ctx := context.Background()
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	before := map[string]string{}
	for i := range 320 {
		name := fmt.Sprintf("degrade-%03d", i)
		if msg, ok := state.Degraded(name); ok {
			before[name] = msg
		}
	}
	if len(before) == 0 {
		t.Fatal("no SidecarSet was left out of the scope: the test builds no degraded scope")
	}

	// One more arrives; those left out before and still left out keep
	// their message and are not told again.
	for i := 320; i < 322; i++ {
		told = nil
		if err := c.Create(ctx, negative(i)); err != nil {
			t.Fatal(err)
		}
		if err := r.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		for _, name := range told {
			now, still := state.Degraded(name)
			if old, was := before[name]; was && still {
				t.Fatalf("%s, left out before and after SidecarSet %d arrived, was told again: %q, then %q", name, i, old, now)
			}
		}
		for name := range before {
			if msg, still := state.Degraded(name); still && msg != before[name] {
				t.Fatalf("%s: message %q changed to %q", name, before[name], msg)
			}
		}
	}
}

// TestPodWebhookScope_DropsOLMsLabelExemption: OLM creates each pod
// webhook's configuration from the CSV with an objectSelector that exempts
// the operator's label in every namespace (its definitions cannot carry the
// namespace), so any pod owner could escape a required SidecarSet by
// carrying the label. The scope write drops it once the condition exempts
// the operator's pods in its namespace only, and again after OLM rewrites
// its configuration.
func TestPodWebhookScope_DropsOLMsLabelExemption(t *testing.T) {
	scheme := scopeTestScheme()
	exemption := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: appsv1beta1.OperatorPodLabel, Operator: metav1.LabelSelectorOpNotIn, Values: []string{appsv1beta1.OperatorPodName},
	}}}
	asOLMCreates := func(name string) *admissionregistrationv1.MutatingWebhookConfiguration {
		return &admissionregistrationv1.MutatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: name + "-x7k2p", Labels: map[string]string{names.OLMWebhookLabel: name}},
			Webhooks:   []admissionregistrationv1.MutatingWebhook{{Name: name, ObjectSelector: exemption.DeepCopy()}},
		}
	}
	mesh := &appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "mesh"}}
	mesh.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	c := fake.NewClientBuilder().WithScheme(scheme).
		WithObjects(asOLMCreates(names.PodWebhookName), asOLMCreates(names.PodBestEffortWebhookName), mesh).Build()
	r := &PodWebhookScope{Client: c, Namespace: "operators"}
	ctx := context.Background()

	check := func(when string) {
		t.Helper()
		for _, name := range []string{names.PodWebhookName, names.PodBestEffortWebhookName} {
			got := &admissionregistrationv1.MutatingWebhookConfiguration{}
			if err := c.Get(ctx, types.NamespacedName{Name: name + "-x7k2p"}, got); err != nil {
				t.Fatal(err)
			}
			w := got.Webhooks[0]
			if diff := cmp.Diff(&metav1.LabelSelector{}, w.ObjectSelector); diff != "" {
				t.Errorf("%s: %s: objectSelector (-want +got):\n%s", when, name, diff)
			}
			// The best-effort webhook has no SidecarSet: it sends no pod.
			if len(w.MatchConditions) != 1 || (w.MatchConditions[0].Expression != "false" &&
				!strings.HasPrefix(w.MatchConditions[0].Expression, "!(request.namespace == 'operators' && ")) {
				t.Errorf("%s: %s: the condition neither exempts the operator's pods of its namespace nor sends no pod: %v", when, name, w.MatchConditions)
			}
		}
	}
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	check("after the first scope write")

	// OLM rewrites its configuration from the CSV: the label exemption is
	// back and the condition gone, until the next write.
	required := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := c.Get(ctx, types.NamespacedName{Name: names.PodWebhookName + "-x7k2p"}, required); err != nil {
		t.Fatal(err)
	}
	required.Webhooks = asOLMCreates(names.PodWebhookName).Webhooks
	if err := c.Update(ctx, required); err != nil {
		t.Fatal(err)
	}
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	check("after OLM rewrote the configuration")
}

// TestPodWebhookScope_WritesNothingBeforeTheServerServes: the controller
// leaves the installed scope (no pod) in place until the webhook server
// answers; a scope written earlier sent pods to the failurePolicy Fail
// webhook while nothing listened, and they were refused (the lifecycle e2e
// suite's takeover, after make undeploy).
func TestPodWebhookScope_WritesNothingBeforeTheServerServes(t *testing.T) {
	ctx := context.Background()
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: names.MutatingConfigName},
		Webhooks: []admissionregistrationv1.MutatingWebhook{
			{Name: names.PodWebhookName, MatchConditions: []admissionregistrationv1.MatchCondition{{Name: scope.ConditionName, Expression: "false"}}},
			{Name: names.PodBestEffortWebhookName, MatchConditions: []admissionregistrationv1.MatchCondition{{Name: scope.ConditionName, Expression: "false"}}},
		},
	}
	set := &appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "mesh"}}
	set.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	c := fake.NewClientBuilder().WithScheme(scopeTestScheme()).WithObjects(cfg, set).Build()
	serving := false
	r := &PodWebhookScope{Client: c, ConfigName: names.MutatingConfigName, Serving: func() bool { return serving }}
	required := func() string {
		got := &admissionregistrationv1.MutatingWebhookConfiguration{}
		if err := c.Get(ctx, types.NamespacedName{Name: names.MutatingConfigName}, got); err != nil {
			t.Fatal(err)
		}
		return got.Webhooks[0].MatchConditions[0].Expression
	}

	res, err := r.Reconcile(ctx, podScopeKey)
	if err != nil {
		t.Fatal(err)
	}
	if res.RequeueAfter != servingRetry {
		t.Fatalf("not serving: requeued after %v, want %v", res.RequeueAfter, servingRetry)
	}
	if e := required(); e != "false" {
		t.Fatalf("not serving: the required webhook's condition is %q, want the installed false", e)
	}

	serving = true
	if res, err = r.Reconcile(ctx, podScopeKey); err != nil {
		t.Fatal(err)
	}
	if res.RequeueAfter != 0 {
		t.Fatalf("serving: requeued after %v", res.RequeueAfter)
	}
	if e := required(); e == "false" || !strings.Contains(e, "web") {
		t.Fatalf("serving: the required webhook's condition is %q, want the SidecarSet's selection", e)
	}
}
