package controllers

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// EventSidecarsRestricted is the warning emitted when the pods whose
// sidecars were injected without parts their SidecarSet's authority did
// not cover change.
const EventSidecarsRestricted = "SidecarsRestricted"

// restrictedPod is a pod whose sidecars were not given something, and the
// first thing.
type restrictedPod struct {
	pod, what string
}

// restrictedPods lists the matched pods that record a restriction of the
// SidecarSet (appsv1beta1.RestrictedAnnotation), sorted by namespace/name.
func restrictedPods(set string, pods []*corev1.Pod) []restrictedPod {
	var out []restrictedPod
	for _, p := range pods {
		if what := podstate.DecodeRestricted(p.Annotations)[set]; len(what) > 0 {
			out = append(out, restrictedPod{pod: p.Namespace + "/" + p.Name, what: what[0]})
		}
	}
	slices.SortFunc(out, func(a, b restrictedPod) int { return strings.Compare(a.pod, b.pod) })
	return out
}

// restrictedMessage names up to three pods and what their sidecars were
// not given.
func restrictedMessage(pods []restrictedPod) string {
	var parts []string
	for _, p := range pods[:min(3, len(pods))] {
		parts = append(parts, p.pod+": "+p.what)
	}
	more := ""
	if len(pods) > 3 {
		more = fmt.Sprintf(", and %d more", len(pods)-3)
	}
	return fmt.Sprintf("%d pod(s) run the sidecars without what the SidecarSet's authority does not cover: %s%s",
		len(pods), strings.Join(parts, "; "), more)
}

// setRestricted sets, or removes, the Restricted condition.
func setRestricted(obj *appsv1beta1.SidecarSet, st *appsv1beta1.SidecarSetStatus, pods []restrictedPod) {
	if len(pods) == 0 {
		meta.RemoveStatusCondition(&st.Conditions, appsv1beta1.SidecarSetConditionRestricted)
		return
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: appsv1beta1.SidecarSetConditionRestricted, Status: metav1.ConditionTrue,
		Reason: appsv1beta1.ReasonSidecarsRestricted, Message: restrictedMessage(pods), ObservedGeneration: obj.Generation,
	})
}

// announceRestricted emits a warning when the restricted pods change.
func (r *SidecarSetReconciler) announceRestricted(obj *appsv1beta1.SidecarSet, pods []restrictedPod, note *noteState) {
	var keys []string
	for _, p := range pods {
		keys = append(keys, p.pod)
	}
	key := strings.Join(keys, ",")
	if key == note.restricted {
		return
	}
	if len(pods) > 0 {
		r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, EventSidecarsRestricted, "Detect", "%s", restrictedMessage(pods))
	}
	note.restricted = key
}
