package controllers

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/controllers/rollout"
)

// Events about the pods a SidecarSet selects that run without its sidecars.
const (
	// EventPodsNotInjected: the set of such pods changed and is not empty.
	EventPodsNotInjected = "PodsNotInjected"
	// EventPodsInjected: every selected pod carries the sidecars again.
	EventPodsInjected = "PodsInjected"
)

// maxNamedPods is how many pods the events name.
const maxNamedPods = 3

// detected returns the pods the SidecarSet selects that run without its
// sidecars, as the detector knows them now, and whether it has looked at
// every pod (until then the counts are not known). One reconcile reads
// them once: the recreate path and the status then agree.
func (r *SidecarSetReconciler) detected(name string) ([]rollout.NotInjectedPod, bool) {
	if r.Detector == nil {
		return nil, false
	}
	found := r.Detector.NotInjected(name)
	pods := make([]rollout.NotInjectedPod, len(found))
	for i, p := range found {
		pods[i] = rollout.NotInjectedPod{Pod: p.Pod, Reason: p.Reason}
	}
	return pods, r.Detector.Synced()
}

// announceNotInjected emits an event when the set of pods changes: a
// warning saying what the Injected condition says, or a note when none is
// left.
func (r *SidecarSetReconciler) announceNotInjected(obj *appsv1beta1.SidecarSet, pods []rollout.NotInjectedPod, st *appsv1beta1.SidecarSetStatus, note *noteState) {
	var keys []string
	for _, p := range pods {
		keys = append(keys, p.Pod.String()+":"+p.Reason)
	}
	key := strings.Join(keys, ",")
	if key == note.notInjected {
		return
	}
	c := meta.FindStatusCondition(st.Conditions, appsv1beta1.SidecarSetConditionInjected)
	switch {
	case len(pods) > 0 && c != nil:
		r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, EventPodsNotInjected, "Detect", "%s", c.Message)
	case len(pods) == 0 && note.notInjected != "":
		r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, EventPodsInjected, "Detect", "Every pod the SidecarSet selects carries its sidecars")
	}
	note.notInjected = key
}
