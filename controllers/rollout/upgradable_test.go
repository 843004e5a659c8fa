package rollout

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

func TestPlan_UpgradableCondition(t *testing.T) {
	t.Parallel()
	v1 := makeSet("s").cold("agent", "agent:1")
	v2 := v1.clone().image("agent", "agent:2").maxUnavailable(intstr.FromInt32(5))
	immutable := v2.clone().mode("agent", "x")
	then := metav1.NewTime(t0.Add(-time.Hour))
	now := metav1.NewTime(t0)
	cond := func(status corev1.ConditionStatus, msg string, ltt metav1.Time) *corev1.PodCondition {
		reason := appsv1beta1.AllSidecarSetUpgradableReason
		if status == corev1.ConditionFalse {
			reason = appsv1beta1.UpdateImmutableFieldReason
		}
		return &corev1.PodCondition{Type: appsv1beta1.SidecarSetUpgradableCondition, Status: status, Reason: reason, Message: msg, LastTransitionTime: ltt}
	}
	tests := []struct {
		name string
		set  *setWrapper
		pod  *podWrapper
		want *corev1.PodCondition
	}{
		{"a not-upgradable pod gets its entry set to false", immutable,
			makePod("p").injected(t, v1.obj()), cond(corev1.ConditionFalse, `{"s":false}`, now)},
		{"a pod already marked not upgradable is left alone", immutable,
			makePod("p").injected(t, v1.obj()).upgradableCondition(`{"s":false}`, corev1.ConditionFalse), nil},
		// OpenKruise writes a true entry after every upgrade: a second pod write.
		{"an upgraded pod without a false entry of its own gets no condition write", v2,
			makePod("p").injected(t, v1.obj()).upgradableCondition(`{"other":false}`, corev1.ConditionFalse), nil},
		{"an upgraded pod with a stale false entry gets it set to true, other entries kept", v2,
			makePod("p").injected(t, v1.obj()).upgradableCondition(`{"other":false,"s":false}`, corev1.ConditionFalse),
			cond(corev1.ConditionFalse, `{"other":false,"s":true}`, then)},
		{"an upgraded pod that never was a candidate gets no condition", v2, makePod("p").injected(t, v1.obj()), nil},
		// Fix 4.1.19. OpenKruise: the false entry stays until the pod is upgraded again.
		{"a stale false entry on an updated pod turns true", v2,
			makePod("p").injected(t, v2.obj()).upgradableCondition(`{"s":false}`, corev1.ConditionFalse),
			cond(corev1.ConditionTrue, `{"s":true}`, now)},
		{"a pod that never was a candidate gets no condition", v2, makePod("p").injected(t, v2.obj()), nil},
		{"a paused SidecarSet touches no pod condition", immutable.clone().paused(), makePod("p").injected(t, v1.obj()), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pod := tc.pod.obj()
			plan := compute(t, input(t, tc.set.obj(), pod))
			var want []PodCondition
			if tc.want != nil {
				want = []PodCondition{{Pod: keyOf(pod), Condition: *tc.want}}
			}
			if diff := cmp.Diff(want, plan.Upgradable); diff != "" {
				t.Errorf("pod conditions (-want +got):\n%s", diff)
			}
		})
	}
}
