package controllers

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset-operator/sidecarset-operator/api/match"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/controllers/detect"
)

// Events about the pods a SidecarSet selects that run without its sidecars.
const (
	// EventPodsNotInjected: the set of such pods changed and is not empty.
	EventPodsNotInjected = "PodsNotInjected"
	// EventPodsInjected: every selected pod carries the sidecars again.
	EventPodsInjected = "PodsInjected"
)

// maxNamedPods is how many pods the Injected condition and event name.
const maxNamedPods = 3

// notInjectedReasons say the detector's reasons in words.
var notInjectedReasons = map[string]string{
	match.NotInjectedCreatedBefore: "created before the SidecarSet",
	match.NotInjectedPaused:        "injection paused",
	match.NotInjectedNameConflict:  "has a container of a sidecar's name",
	match.NotInjectedAtAdmission:   "admitted without it: the operator unreachable, a best-effort failure, or created just after the SidecarSet",
	match.NotInjectedUnreadable:    "its SidecarSet annotations cannot be read",
	match.NotInjectedOperatorLabel: "carries the operator's label app.kubernetes.io/name=sidecarset-operator, which exempts it from injection under OLM",
	match.NotInjectedNamespaceReplaced: "its namespace was deleted and created again since the SidecarSet was written: " +
		"it applies there only once someone allowed to create pods there writes it again",
	match.NotInjectedCanaryBaseReplaced: "the canary's base was deleted and created again since the canary was written: " +
		"the base is injected until the canary is written again",
}

// notInjectedMessage names up to maxNamedPods pods and why.
func notInjectedMessage(pods []detect.NotInjectedPod) string {
	var named []string
	for _, p := range pods[:min(len(pods), maxNamedPods)] {
		named = append(named, fmt.Sprintf("%s (%s)", p.Pod, notInjectedReasons[p.Reason]))
	}
	more := ""
	if len(pods) > maxNamedPods {
		more = fmt.Sprintf(" and %d more", len(pods)-maxNamedPods)
	}
	what := "pods it selects run"
	if len(pods) == 1 {
		what = "pod it selects runs"
	}
	return fmt.Sprintf("%d %s without its sidecars: %s%s", len(pods), what, strings.Join(named, ", "), more)
}

// detected returns the pods the SidecarSet selects that run without its
// sidecars, as the detector knows them now, and whether it has looked at
// every pod (until then the counts are not known). One reconcile reads
// them once: the recreate path and the status then agree.
func (r *SidecarSetReconciler) detected(name string) ([]detect.NotInjectedPod, bool) {
	if r.Detector == nil {
		return nil, false
	}
	return r.Detector.NotInjected(name), r.Detector.Synced()
}

// setNotInjected writes what the detector knows into the status: the count
// and, while it is not zero, the Injected condition. Until the detector has
// looked at every pod (synced), the previous values stay.
func setNotInjected(obj *appsv1beta1.SidecarSet, st *appsv1beta1.SidecarSetStatus, pods []detect.NotInjectedPod, synced bool) {
	if !synced {
		st.NotInjectedPods = obj.Status.NotInjectedPods
		if c := meta.FindStatusCondition(obj.Status.Conditions, appsv1beta1.SidecarSetConditionInjected); c != nil {
			meta.SetStatusCondition(&st.Conditions, *c)
		}
		return
	}
	st.NotInjectedPods = int32(len(pods))
	if len(pods) == 0 {
		meta.RemoveStatusCondition(&st.Conditions, appsv1beta1.SidecarSetConditionInjected)
		return
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: appsv1beta1.SidecarSetConditionInjected, Status: metav1.ConditionFalse,
		Reason: appsv1beta1.ReasonPodsNotInjected, Message: notInjectedMessage(pods), ObservedGeneration: obj.Generation,
	})
}

// announceNotInjected emits an event when the set of pods changes: a
// warning naming them, or a note when none is left.
func (r *SidecarSetReconciler) announceNotInjected(obj *appsv1beta1.SidecarSet, pods []detect.NotInjectedPod, note *noteState) {
	var keys []string
	for _, p := range pods {
		keys = append(keys, p.Pod.String()+":"+p.Reason)
	}
	key := strings.Join(keys, ",")
	if key == note.notInjected {
		return
	}
	switch {
	case len(pods) > 0:
		r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, EventPodsNotInjected, "Detect", "%s", notInjectedMessage(pods))
	case note.notInjected != "":
		r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, EventPodsInjected, "Detect", "Every pod the SidecarSet selects carries its sidecars")
	}
	note.notInjected = key
}
