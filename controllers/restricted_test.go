package controllers

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/internal/metrics"
)

// TestRestricted_ReportsThePodsWithoutWhatTheAuthorityLacks: the pods that
// record a restriction of the SidecarSet set its Restricted condition
// (reason SidecarsRestricted, the first three pods named with what each
// lacked, and how many more) and its restricted gauge; a pod restricted for
// another SidecarSet does not count, and none left removes the condition.
func TestRestricted_ReportsThePodsWithoutWhatTheAuthorityLacks(t *testing.T) {
	pod := func(name, record string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name}}
		if record != "" {
			p.Annotations = map[string]string{appsv1beta1.RestrictedAnnotation: record}
		}
		return p
	}
	var pods []*corev1.Pod
	for i := 5; i >= 1; i-- {
		pods = append(pods, pod(fmt.Sprintf("web-%d", i), fmt.Sprintf(`{"agent":["volume creds (secret) of sidecar agent %d"]}`, i)))
	}
	pods = append(pods, pod("plain", ""), pod("other", `{"another":["volume creds (secret)"]}`))

	obj := &appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "agent", Generation: 4}}
	st := &appsv1beta1.SidecarSetStatus{MatchedPods: int32(len(pods))}
	restricted := restrictedPods("agent", pods)
	setRestricted(obj, st, restricted)
	c := meta.FindStatusCondition(st.Conditions, appsv1beta1.SidecarSetConditionRestricted)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != appsv1beta1.ReasonSidecarsRestricted || c.ObservedGeneration != 4 {
		t.Fatalf("condition = %+v, want Restricted True, reason %s, generation 4", c, appsv1beta1.ReasonSidecarsRestricted)
	}
	const want = "5 pod(s) run the sidecars without what the SidecarSet's authority does not cover: " +
		"team-a/web-1: volume creds (secret) of sidecar agent 1; team-a/web-2: volume creds (secret) of sidecar agent 2; " +
		"team-a/web-3: volume creds (secret) of sidecar agent 3, and 2 more"
	if c.Message != want {
		t.Errorf("message = %q, want %q", c.Message, want)
	}

	const set = "restricted-test-agent"
	recordStatusMetrics(set, st, 0, len(restricted))
	if got := testutil.ToFloat64(metrics.RolloutPods.WithLabelValues(set, "restricted")); got != 5 {
		t.Errorf(`sidecarset_pods{state="restricted"} = %v, want 5`, got)
	}
	metrics.ForgetSidecarSet(set)

	setRestricted(obj, st, restrictedPods("agent", pods[5:]))
	if c := meta.FindStatusCondition(st.Conditions, appsv1beta1.SidecarSetConditionRestricted); c != nil {
		t.Errorf("no pod restricted for the SidecarSet, condition still %+v", c)
	}
}
