package controllers

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/controllers/rollout"
)

// EventSidecarsRestricted is the warning emitted when the pods whose
// sidecars were injected without parts their SidecarSet's authority did
// not cover change; it says what the Restricted condition says.
const EventSidecarsRestricted = "SidecarsRestricted"

// announceRestricted emits a warning when the restricted pods change.
func (r *SidecarSetReconciler) announceRestricted(obj *appsv1beta1.SidecarSet, pods []rollout.RestrictedPod, st *appsv1beta1.SidecarSetStatus, note *noteState) {
	var keys []string
	for _, p := range pods {
		keys = append(keys, p.Pod)
	}
	key := strings.Join(keys, ",")
	if key == note.restricted {
		return
	}
	if c := meta.FindStatusCondition(st.Conditions, appsv1beta1.SidecarSetConditionRestricted); c != nil {
		r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, EventSidecarsRestricted, "Detect", "%s", c.Message)
	}
	note.restricted = key
}
