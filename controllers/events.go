package controllers

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/controllers/detect"
	"github.com/sidecarset-operator/sidecarset-operator/controllers/rollout"
)

// announce emits the SidecarSet's events on transitions only: a rollout
// starts, completes, a new set of pods turns out not upgradable, upgrades
// leave out other patchPodMetadata annotations than before, the rollout
// passes its progress deadline, pods are restricted, or the pod webhooks'
// scope leaves the SidecarSet out.
func (r *SidecarSetReconciler) announce(obj, s *appsv1beta1.SidecarSet, hash string, plan *rollout.Plan, st *appsv1beta1.SidecarSetStatus,
	notInjected []detect.NotInjectedPod, detected bool, restricted []restrictedPod, scopeWhy string, scopeDegraded bool) {
	prev, _ := r.notes.Load(s.Name)
	note, _ := prev.(noteState)
	next := note

	if n := len(plan.NotUpgradable); n > 0 {
		key := fmt.Sprintf("%d/%d", s.Generation, n)
		if key != note.notUpgradable {
			r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, EventNotUpgradablePods, "Plan",
				"SidecarSet in-place update detected %d not upgradable pod(s) in this round, will skip them", n)
			next.notUpgradable = key
		}
	} else {
		next.notUpgradable = ""
	}
	if len(plan.Updates) > 0 && note.rollingTo != hash {
		r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, EventRolloutStarted, "Upgrade",
			"Upgrading sidecars in place to revision %s (%d of %d pods updated)", st.LatestRevision, st.UpdatedPods, st.MatchedPods)
		next.rollingTo = hash
	}
	if note.rollingTo == hash && st.MatchedPods > 0 && st.UpdatedPods == st.MatchedPods && note.completed != hash {
		r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, EventRolloutCompleted, "Upgrade",
			"All %d pods run revision %s", st.MatchedPods, st.LatestRevision)
		next.completed = hash
	}
	if len(plan.Warnings) > 0 {
		if key := strings.Join(plan.Warnings, "\n"); key != note.notPatched {
			r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, EventPodMetadataNotPatched, "Upgrade", "%s", key)
			next.notPatched = key
		}
	}
	if detected {
		r.announceNotInjected(obj, notInjected, &next)
	}
	r.announceResizes(obj, plan, &next)
	r.announceRecreation(obj, plan, &next)
	r.announceDeadline(obj, st, plan.Progress, &next)
	r.announceRestricted(obj, restricted, &next)
	r.announceScope(obj, scopeWhy, scopeDegraded, &next)
	if next != note {
		r.notes.Store(s.Name, next)
	}
}

// conditionPatch is a strategic-merge patch of the pod status setting one
// condition (conditions merge by type).
func conditionPatch(c corev1.PodCondition) ([]byte, error) {
	return json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.PodCondition{c}}})
}
