package rollout

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// The SidecarSetUpgradable pod condition holds, in its message, a JSON map
// from SidecarSet name to whether the pod can be upgraded in place. Its
// status is True (reason AllSidecarsetUpgradable) when every entry is true,
// else False (reason UpdateImmutableField).
//
// The planner sets this SidecarSet's entry to false for each selected pod
// that needs the upgrade and cannot get it in place. Unlike OpenKruise, which
// writes a true entry after every in-place upgrade (a second write per pod),
// it writes true only to turn a stale false entry back, once the pod is
// being upgraded, is updated, or can be upgraded again (for example after
// the SidecarSet was changed back); the shell writes the entry of a pod being
// upgraded after its upgrade succeeds. Pods that never were reported not
// upgradable get no condition, so an upgrade is one pod write.

// desiredUpgradable returns the entry this SidecarSet wants on the pod's
// condition, and whether it wants one.
func desiredUpgradable(v *podView, set string, upgrading bool) (value, ok bool) {
	switch {
	case v.err != nil:
		return false, false
	case !upgrading && v.notUpgradable():
		return false, true
	}
	cond := findPodCondition(v.pod, appsv1beta1.SidecarSetUpgradableCondition)
	if cond == nil {
		return false, false
	}
	if entry, found := podstate.DecodeUpgradable(cond.Message)[set]; found && !entry && (upgrading || v.upgradable) {
		return true, true
	}
	return false, false
}

// upgradableCondition returns the pod's SidecarSetUpgradable condition with
// this SidecarSet's entry set to value, and whether it differs from the
// pod's current one. The transition time moves only when the status does.
func upgradableCondition(pod *corev1.Pod, set string, value bool, now time.Time) (corev1.PodCondition, bool) {
	old := findPodCondition(pod, appsv1beta1.SidecarSetUpgradableCondition)
	var entries map[string]bool
	if old != nil {
		entries = podstate.DecodeUpgradable(old.Message)
	} else {
		entries = map[string]bool{}
	}
	entries[set] = value
	cond := corev1.PodCondition{
		Type:    appsv1beta1.SidecarSetUpgradableCondition,
		Status:  corev1.ConditionTrue,
		Reason:  appsv1beta1.AllSidecarSetUpgradableReason,
		Message: podstate.EncodeUpgradable(entries),
	}
	for _, ok := range entries {
		if !ok {
			cond.Status = corev1.ConditionFalse
			cond.Reason = appsv1beta1.UpdateImmutableFieldReason
			break
		}
	}
	cond.LastTransitionTime = metav1.NewTime(now.Truncate(time.Second))
	if old != nil {
		cond.LastProbeTime = old.LastProbeTime
		if old.Status == cond.Status {
			cond.LastTransitionTime = old.LastTransitionTime
		}
	}
	changed := old == nil || old.Status != cond.Status || old.Reason != cond.Reason || old.Message != cond.Message
	return cond, changed
}

func findPodCondition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}
