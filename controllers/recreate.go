package controllers

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sidecarset-operator/sidecarset-operator/api/match"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/controllers/detect"
	"github.com/sidecarset-operator/sidecarset-operator/controllers/rollout"
	"github.com/sidecarset-operator/sidecarset-operator/internal/metrics"
)

// The recreate path's I/O (the decision is rollout/recreate.go's): pods are
// evicted through the Eviction API, never deleted, so that the API server
// applies their PodDisruptionBudgets.
// +kubebuilder:rbac:groups="",resources=pods/eviction,verbs=create

// Events of the recreate path.
const (
	// EventRecreating, on a pod: the SidecarSet evicted it to have it
	// recreated with its current sidecars.
	EventRecreating = "Recreating"
	// EventEvictionFailed, on a pod: the eviction failed for another reason
	// than a PodDisruptionBudget.
	EventEvictionFailed = "EvictionFailed"
	// EventWaitingForPodDisruptionBudget, on a SidecarSet: evictions are
	// refused by PodDisruptionBudgets (once per change of the refused set).
	EventWaitingForPodDisruptionBudget = "WaitingForPodDisruptionBudget"
	// EventPodsNotRecreatable, on a SidecarSet: pods need a recreation no
	// controller of theirs would make (once per change).
	EventPodsNotRecreatable = "PodsNotRecreatable"
)

// recreations remembers, per SidecarSet, the pods the controller evicted
// and has not seen replaced, and the evictions the API server refused.
// Entries go when the planner reports them done, when the pod is deleted
// (refusals) and when the SidecarSet is deleted. Nothing survives a
// restart: an evicted pod is then no longer counted once it is gone.
type recreations struct {
	mu      sync.Mutex
	evicted map[string]map[types.UID]rollout.Eviction
	refused map[string]map[types.UID]rollout.Refusal
}

func newRecreations() *recreations {
	return &recreations{evicted: map[string]map[types.UID]rollout.Eviction{}, refused: map[string]map[types.UID]rollout.Refusal{}}
}

// snapshot returns copies of a SidecarSet's evictions and refusals.
func (r *recreations) snapshot(set string) (map[types.UID]rollout.Eviction, map[types.UID]rollout.Refusal) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.evicted[set]), maps.Clone(r.refused[set])
}

func (r *recreations) evict(set string, uid types.UID, e rollout.Eviction) {
	r.mu.Lock()
	defer r.mu.Unlock()
	put(r.evicted, set, uid, e)
	delete(r.refused[set], uid)
}

func (r *recreations) refuse(set string, uid types.UID, f rollout.Refusal) {
	r.mu.Lock()
	defer r.mu.Unlock()
	put(r.refused, set, uid, f)
}

// done forgets the evictions the planner settled.
func (r *recreations) done(set string, uids ...types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, uid := range uids {
		delete(r.evicted[set], uid)
	}
	if len(r.evicted[set]) == 0 {
		delete(r.evicted, set)
	}
}

// replaced notes the replacement credited to each eviction whose record
// stays (rollout.Eviction.ReplacedBy).
func (r *recreations) replaced(set string, by map[types.UID]types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for uid, replacement := range by {
		if e, ok := r.evicted[set][uid]; ok {
			e.ReplacedBy = replacement
			r.evicted[set][uid] = e
		}
	}
}

// forgetPod drops a deleted pod's refusals.
func (r *recreations) forgetPod(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for set, m := range r.refused {
		delete(m, uid)
		if len(m) == 0 {
			delete(r.refused, set)
		}
	}
}

func (r *recreations) forgetSet(set string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.evicted, set)
	delete(r.refused, set)
}

// notInjectedPods returns, of the pods the detector found without the
// SidecarSet's sidecars (missing), those that a recreation would inject
// (created before it, or admitted without it), when the SidecarSet
// recreates pods.
func (r *SidecarSetReconciler) notInjectedPods(ctx context.Context, s *appsv1beta1.SidecarSet, missing []detect.NotInjectedPod) ([]*corev1.Pod, error) {
	if !appsv1beta1.RecreatesPods(s) {
		return nil, nil
	}
	var pods []*corev1.Pod
	for _, p := range missing {
		if p.Reason != match.NotInjectedCreatedBefore && p.Reason != match.NotInjectedAtAdmission {
			continue
		}
		pod := &corev1.Pod{}
		if err := r.Client.Get(ctx, p.Pod, pod, client.UnsafeDisableDeepCopy); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, err
		}
		if match.PodActive(pod) {
			pods = append(pods, pod)
		}
	}
	return pods, nil
}

// applyEvictions evicts pods in parallel (bounded by PodWriters), recording
// the evictions and the refusals. No failure is an error of the reconcile:
// a refusal (HTTP 429: a PodDisruptionBudget allows no disruption now), or
// another error (logged, with an event), makes the pod wait
// rollout.EvictionRetry before it is tried again.
func (r *SidecarSetReconciler) applyEvictions(ctx context.Context, set string, evictions []rollout.PodEviction) {
	if len(evictions) == 0 {
		return
	}
	var (
		mu   sync.Mutex
		errs []error
	)
	r.inParallel(len(evictions), func(i int) {
		e := evictions[i]
		pod := &corev1.Pod{}
		pod.Namespace, pod.Name = e.Pod.Namespace, e.Pod.Name
		uid := e.UID
		eviction := &policyv1.Eviction{DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}}
		// The eviction dates from its request: the pod's controller may
		// create the replacement before the response arrives, and a
		// replacement older than the record would never be matched to it.
		sent := r.now()
		err := evict(ctx, r.Evictions, e.Pod, eviction)
		now := r.now()
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err == nil:
			r.recreations.evict(set, e.UID, rollout.Eviction{Owner: e.Owner, Since: sent, NotReplacements: e.Siblings})
			metrics.PodEvictions.WithLabelValues(set, "evicted").Inc()
			r.Recorder.Eventf(pod, nil, corev1.EventTypeNormal, EventRecreating, "Evict",
				"SidecarSet %s evicted the pod to have it recreated with its current sidecars: %s", set, e.Reason)
		case apierrors.IsTooManyRequests(err):
			r.recreations.refuse(set, e.UID, rollout.Refusal{Message: apiMessage(err), At: now})
			metrics.PodEvictions.WithLabelValues(set, "refused").Inc()
		case apierrors.IsNotFound(err), apierrors.IsConflict(err):
			// Gone, or replaced under the same name: nothing to evict.
			metrics.PodEvictions.WithLabelValues(set, "gone").Inc()
		default:
			// A PodDisruptionBudget that cannot be applied (several
			// select the pod) is a 500: wait as for a refusal, and say so.
			r.recreations.refuse(set, e.UID, rollout.Refusal{Message: apiMessage(err), At: now})
			metrics.PodEvictions.WithLabelValues(set, "error").Inc()
			r.Recorder.Eventf(pod, nil, corev1.EventTypeWarning, EventEvictionFailed, "Evict", "SidecarSet %s: %v", set, err)
			errs = append(errs, fmt.Errorf("evicting pod %s: %w", e.Pod, err))
		}
	})
	if err := errors.Join(errs...); err != nil {
		ctrl.LoggerFrom(ctx).Info("Evictions failed; retrying later", "error", err.Error())
	}
}

// evict posts an eviction with no retry: client-go retries a 429 by itself,
// waiting its Retry-After (10 seconds for a PodDisruptionBudget) up to ten
// times, which would hold the reconcile for minutes; the rollout tries the
// pod again itself (rollout.EvictionRetry). The request is client-go's own
// (PolicyV1().Evictions().Evict) otherwise.
func evict(ctx context.Context, policyClient rest.Interface, pod types.NamespacedName, eviction *policyv1.Eviction) error {
	eviction.Name, eviction.Namespace = pod.Name, pod.Namespace
	return policyClient.Post().AbsPath("/api/v1").Namespace(pod.Namespace).Resource("pods").Name(pod.Name).
		SubResource("eviction").MaxRetries(0).Body(eviction).Do(ctx).Error()
}

// apiMessage is the message of an API error, without the client's prefix.
func apiMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Message != "" {
		return status.Status().Message
	}
	return err.Error()
}

// announceRecreation emits the SidecarSet's events of the recreate path on
// transitions only: evictions refused by PodDisruptionBudgets, pods that
// cannot be recreated.
func (r *SidecarSetReconciler) announceRecreation(obj *appsv1beta1.SidecarSet, plan *rollout.Plan, note *noteState) {
	var refused, blocked []string
	for _, d := range plan.Decisions {
		if d.Refusal != "" {
			refused = append(refused, d.Pod.String())
		}
		if d.Blocker == rollout.BlockerNotRecreatable {
			blocked = append(blocked, fmt.Sprintf("%s (%s)", d.Pod, d.Detail))
		}
	}
	if key := strings.Join(refused, ","); key != note.pdbRefused {
		if len(refused) > 0 {
			r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, EventWaitingForPodDisruptionBudget, "Evict",
				"PodDisruptionBudgets refuse the eviction of %d pod(s) for now: %s", len(refused), names(refused))
		}
		note.pdbRefused = key
	}
	if key := strings.Join(blocked, ","); key != note.notRecreatable {
		if len(blocked) > 0 {
			r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, EventPodsNotRecreatable, "Plan",
				"%d pod(s) need a recreation no controller of theirs would make: %s", len(blocked), names(blocked))
		}
		note.notRecreatable = key
	}
}

// names joins up to maxNamedPods names, saying how many more there are.
func names(list []string) string {
	s := strings.Join(list[:min(len(list), maxNamedPods)], ", ")
	if len(list) > maxNamedPods {
		s += fmt.Sprintf(" and %d more", len(list)-maxNamedPods)
	}
	return s
}
