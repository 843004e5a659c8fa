// Package cachetransform holds the manager's cache transforms, which the
// informers apply to each object as it is decoded, before they store it:
// PodCache keeps of a pod only what the operator reads, compact; Interner
// shares the strings, string maps and raw data that many SidecarSets,
// ControllerRevisions and pods hold alike. Both shells read the cache, and
// neither writes into a cached object: what the transforms share is shared
// read-only.
package cachetransform

import (
	"crypto/sha256"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// PodCache is the pod cache transform (Trim). It keeps of each pod only
// what the operator decides from, compact:
//
//   - metadata, with the SidecarSet state annotations decoded once, when the
//     pod arrives, into podstate's compact form (podstate.Compact), which
//     every reader decodes without JSON: no raw JSON, and no memo of decoded
//     states beside the cache;
//   - container names, images, pull policies and resources, the init
//     containers' restart policy, the pod's restart policy, OS and pod-level
//     resources, the node;
//   - the phase, the QoS class, the observed generation, the conditions the
//     operator reads (Ready, the resize conditions, SidecarSetUpgradable),
//     the container statuses;
//   - the strings, label sets, owner references and resource lists that
//     many pods share (namespaces, images, image IDs, a ReplicaSet's labels)
//     once: each pod points to one copy instead of its own.
//
// Cached pods are read-only views: the controller only ever patches pods,
// so pods may share what they hold.
type PodCache struct {
	mu     sync.Mutex
	labels interned[map[string]string]
	owners interned[[]metav1.OwnerReference]
	lists  interned[corev1.ResourceList]
	// containerSets are the pods' container lists.
	containerSets interned[[]corev1.Container]
	// statusSets and conditionSets are the pods' container statuses and
	// read conditions.
	statusSets    interned[[]corev1.ContainerStatus]
	conditionSets interned[[]corev1.PodCondition]
	// annotationSets are the pods' compacted annotations, by content;
	// rawAnnotations the same, by the annotations they were compacted from.
	annotationSets, rawAnnotations interned[map[string]string]
	// requirementSets are the pod's and the container statuses' resources.
	requirementSets interned[*corev1.ResourceRequirements]
}

// maxInternedSets bounds the tables of shared label sets, owner
// references and resource lists.
const maxInternedSets = 1 << 13

// maxInternedVersions bounds the tables of what changes with each version
// of a pod (container statuses, conditions, annotations): a rollout writes
// new ones for every pod, and a table keeps the old ones, which no pod holds
// any more, until it starts over. A pod version's values are shared with
// the pods that reach the same state in the same second, all looked up
// within a few seconds: a few hundred entries keep that sharing, and bound
// what the table keeps for nobody (about 1 KiB of dead container statuses
// per entry).
const maxInternedVersions = 1 << 9

// NewPodCache returns an empty transform. Its strings are shared with the
// Interner's (share).
func NewPodCache() *PodCache {
	return &PodCache{
		labels:          newInterned[map[string]string](maxInternedSets),
		owners:          newInterned[[]metav1.OwnerReference](maxInternedSets),
		lists:           newInterned[corev1.ResourceList](maxInternedSets),
		containerSets:   newInterned[[]corev1.Container](maxInternedSets),
		requirementSets: newInterned[*corev1.ResourceRequirements](maxInternedSets),
		annotationSets:  newInterned[map[string]string](maxInternedVersions),
		rawAnnotations:  newInterned[map[string]string](maxInternedVersions),
		statusSets:      newInterned[[]corev1.ContainerStatus](maxInternedVersions),
		conditionSets:   newInterned[[]corev1.PodCondition](maxInternedVersions),
	}
}

// readConditions are the pod conditions the operator reads.
var readConditions = []corev1.PodConditionType{
	corev1.PodReady, corev1.PodResizePending, corev1.PodResizeInProgress, appsv1beta1.SidecarSetUpgradableCondition,
}

// Trim is the cache.TransformFunc: it returns a new, compact pod; other
// objects go through unchanged. The input is not modified.
func (c *PodCache) Trim(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.str
	meta := metav1.ObjectMeta{
		Name: p.Name, GenerateName: s(p.GenerateName), Namespace: s(p.Namespace), UID: p.UID,
		ResourceVersion: p.ResourceVersion, Generation: p.Generation, CreationTimestamp: p.CreationTimestamp,
		DeletionTimestamp: p.DeletionTimestamp, DeletionGracePeriodSeconds: p.DeletionGracePeriodSeconds,
		Labels: c.stringMap(p.Labels), Annotations: c.annotations(p.Annotations),
		OwnerReferences: c.ownerReferences(p.OwnerReferences), Finalizers: p.Finalizers,
	}
	trimmed := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: s(p.APIVersion), Kind: s(p.Kind)},
		ObjectMeta: meta,
		Spec: corev1.PodSpec{
			NodeName:       s(p.Spec.NodeName),
			Containers:     c.containers(p.Spec.Containers),
			InitContainers: c.containers(p.Spec.InitContainers),
			RestartPolicy:  corev1.RestartPolicy(s(string(p.Spec.RestartPolicy))),
			OS:             p.Spec.OS,
			Resources:      c.requirements(p.Spec.Resources),
		},
		Status: corev1.PodStatus{
			Phase:                 corev1.PodPhase(s(string(p.Status.Phase))),
			Conditions:            c.conditions(p.Status.Conditions),
			ContainerStatuses:     c.statuses(p.Status.ContainerStatuses),
			InitContainerStatuses: c.statuses(p.Status.InitContainerStatuses),
			QOSClass:              corev1.PodQOSClass(s(string(p.Status.QOSClass))),
			ObservedGeneration:    p.Status.ObservedGeneration,
		},
	}
	return trimmed, nil
}

// str returns the shared copy of a string.
func (c *PodCache) str(v string) string { return share(v) }

// stringMap returns one shared copy of a label set.
func (c *PodCache) stringMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	return c.labels.intern(pairsKey(m), m, func() map[string]string {
		out := make(map[string]string, len(m))
		for k, v := range m {
			out[c.str(k)] = c.str(v)
		}
		return out
	})
}

// annotations keeps the pod's annotations with their SidecarSet state
// compacted, one shared copy per content: the pods of a workload injected
// or upgraded in the same second hold the same state. Keys and short
// values are shared strings; the compact state, which holds timestamps,
// is not put in the string table.
func (c *PodCache) annotations(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	// A pod's next events, and the pods injected with it, carry the same
	// annotations: they are compacted once.
	return c.rawAnnotations.intern(pairsKey(m), m, func() map[string]string { return c.compactAnnotations(m) })
}

func (c *PodCache) compactAnnotations(m map[string]string) map[string]string {
	compact, _ := podstate.Compact(m)
	return c.annotationSets.intern(pairsKey(compact), compact, func() map[string]string {
		out := make(map[string]string, len(compact))
		for k, v := range compact {
			if k == podstate.CachedKey {
				out[k] = strings.Clone(v) // the builder's buffer has room to spare
				continue
			}
			out[c.str(k)] = c.str(v)
		}
		return out
	})
}

// pairsKey is a map's content as one string (sorted key and value pairs).
func pairsKey(m map[string]string) string {
	keys := make([]string, 0, len(m))
	n := 0
	for k, v := range m {
		keys = append(keys, k)
		n += len(k) + len(v) + 2
	}
	slices.Sort(keys)
	var b strings.Builder
	b.Grow(n)
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(m[k])
		b.WriteByte(0)
	}
	return b.String()
}

func (c *PodCache) ownerReferences(refs []metav1.OwnerReference) []metav1.OwnerReference {
	if len(refs) == 0 {
		return nil
	}
	var b strings.Builder
	for _, r := range refs {
		b.WriteString(r.APIVersion + "\x00" + r.Kind + "\x00" + r.Name + "\x00" + string(r.UID) + "\x00" +
			boolKey(r.Controller) + boolKey(r.BlockOwnerDeletion) + "\x00")
	}
	return c.owners.intern(b.String(), refs, func() []metav1.OwnerReference {
		out := make([]metav1.OwnerReference, len(refs))
		for i, r := range refs {
			out[i] = metav1.OwnerReference{APIVersion: c.str(r.APIVersion), Kind: c.str(r.Kind), Name: c.str(r.Name),
				UID: r.UID, Controller: sharedBool(r.Controller), BlockOwnerDeletion: sharedBool(r.BlockOwnerDeletion)}
		}
		return out
	})
}

var sharedTrue, sharedFalse = true, false

// sharedBool points to one of two shared booleans.
func sharedBool(b *bool) *bool {
	switch {
	case b == nil:
		return nil
	case *b:
		return &sharedTrue
	}
	return &sharedFalse
}

func boolKey(b *bool) string {
	switch {
	case b == nil:
		return "-"
	case *b:
		return "t"
	}
	return "f"
}

// containers keeps what the operator reads of a pod's containers, one
// shared copy per content: the pods of a workload run the same containers,
// and a corev1.Container is 408 bytes.
func (c *PodCache) containers(in []corev1.Container) []corev1.Container {
	if in == nil {
		return nil
	}
	var b strings.Builder
	for i := range in {
		restart := "-"
		if in[i].RestartPolicy != nil {
			restart = string(*in[i].RestartPolicy)
		}
		b.WriteString(in[i].Name + "\x00" + in[i].Image + "\x00" + string(in[i].ImagePullPolicy) + "\x00" + restart + "\x00" +
			requirementsKey(in[i].Resources.Requests, in[i].Resources.Limits) + "\x02")
	}
	return c.containerSets.intern(b.String(), in, func() []corev1.Container {
		out := make([]corev1.Container, len(in))
		for i := range in {
			out[i] = corev1.Container{
				Name: c.str(in[i].Name), Image: c.str(in[i].Image),
				ImagePullPolicy: corev1.PullPolicy(c.str(string(in[i].ImagePullPolicy))), RestartPolicy: sharedRestartPolicy(in[i].RestartPolicy),
				Resources: corev1.ResourceRequirements{Requests: c.resourceList(in[i].Resources.Requests), Limits: c.resourceList(in[i].Resources.Limits)},
			}
		}
		return out
	})
}

// sharedRestartPolicy points to a shared copy of a container's restart
// policy, not to the decoded pod's.
func sharedRestartPolicy(p *corev1.ContainerRestartPolicy) *corev1.ContainerRestartPolicy {
	if p == nil {
		return nil
	}
	if *p == corev1.ContainerRestartPolicyAlways {
		return &restartAlways
	}
	v := *p
	return &v
}

var restartAlways = corev1.ContainerRestartPolicyAlways

// statuses keeps what the operator reads of the container statuses, one
// shared copy per content: the pods of a workload started in the same
// second report the same.
func (c *PodCache) statuses(in []corev1.ContainerStatus) []corev1.ContainerStatus {
	if in == nil {
		return nil
	}
	var b strings.Builder
	for i := range in {
		st := &in[i]
		var res string
		if st.Resources != nil {
			res = requirementsKey(st.Resources.Requests, st.Resources.Limits)
		}
		fmt.Fprintf(&b, "%s\x00%s\x00%s\x00%t\x00%d\x00%s\x00%s\x00%s\x00%s\x02", st.Name, st.Image, st.ImageID, st.Ready, st.RestartCount,
			boolKey(st.Started), stateKey(st.State), lastTerminationKey(st.LastTerminationState.Terminated), res)
	}
	return c.statusSets.intern(b.String(), in, func() []corev1.ContainerStatus {
		out := make([]corev1.ContainerStatus, len(in))
		for i := range in {
			out[i] = corev1.ContainerStatus{
				Name: c.str(in[i].Name), Image: c.str(in[i].Image), ImageID: c.str(in[i].ImageID), Ready: in[i].Ready,
				RestartCount: in[i].RestartCount, Started: sharedBool(in[i].Started), State: *in[i].State.DeepCopy(),
				LastTerminationState: c.lastTermination(in[i].LastTerminationState.Terminated),
				Resources:            c.requirements(in[i].Resources),
			}
		}
		return out
	})
}

// lastTermination keeps of a container's last terminated instance what the
// rollout reads (a sidecar that crashed since its upgrade): when it
// started, its exit code and reason.
func (c *PodCache) lastTermination(t *corev1.ContainerStateTerminated) corev1.ContainerState {
	if t == nil {
		return corev1.ContainerState{}
	}
	return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: t.ExitCode, Reason: c.str(t.Reason), StartedAt: t.StartedAt}}
}

func lastTerminationKey(t *corev1.ContainerStateTerminated) string {
	if t == nil {
		return "-"
	}
	return fmt.Sprintf("%d\x00%s\x00%s", t.ExitCode, t.Reason, timeKey(t.StartedAt))
}

// stateKey is a container state's content as one string.
func stateKey(s corev1.ContainerState) string {
	switch {
	case s.Running != nil:
		return "R" + timeKey(s.Running.StartedAt)
	case s.Waiting != nil:
		return "W" + s.Waiting.Reason + "\x00" + s.Waiting.Message
	case s.Terminated != nil:
		t := s.Terminated
		return fmt.Sprintf("T%d\x00%d\x00%s\x00%s\x00%s\x00%s\x00%s", t.ExitCode, t.Signal, t.Reason, t.Message,
			timeKey(t.StartedAt), timeKey(t.FinishedAt), t.ContainerID)
	}
	return "-"
}

func timeKey(t metav1.Time) string {
	if t.IsZero() {
		return "0"
	}
	return strconv.FormatInt(t.UnixNano(), 10)
}

// requirements keeps requests and limits (resize and resourcesPolicy read
// them), not resource claims.
func (c *PodCache) requirements(r *corev1.ResourceRequirements) *corev1.ResourceRequirements {
	if r == nil {
		return nil
	}
	return c.requirementSets.intern(requirementsKey(r.Requests, r.Limits), nil, func() *corev1.ResourceRequirements {
		return &corev1.ResourceRequirements{Requests: c.resourceList(r.Requests), Limits: c.resourceList(r.Limits)}
	})
}

func (c *PodCache) resourceList(l corev1.ResourceList) corev1.ResourceList {
	if l == nil {
		return nil
	}
	return c.lists.intern(resourceListKey(l), l, func() corev1.ResourceList {
		out := make(corev1.ResourceList, len(l))
		for name, q := range l {
			out[corev1.ResourceName(c.str(string(name)))] = q.DeepCopy()
		}
		return out
	})
}

// requirementsKey is requests' and limits' content as one string.
func requirementsKey(requests, limits corev1.ResourceList) string {
	return resourceListKey(requests) + "\x01" + resourceListKey(limits)
}

// resourceListKey is a resource list's content as one string.
func resourceListKey(l corev1.ResourceList) string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(l)) {
		q := l[name]
		b.WriteString(string(name) + "\x00" + q.String() + "\x00")
	}
	return b.String()
}

// conditions keeps the conditions the operator reads, without their probe
// time.
func (c *PodCache) conditions(in []corev1.PodCondition) []corev1.PodCondition {
	n := 0
	for i := range in {
		if slices.Contains(readConditions, in[i].Type) {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	var b strings.Builder
	for i := range in {
		if cond := &in[i]; slices.Contains(readConditions, cond.Type) {
			fmt.Fprintf(&b, "%s\x00%s\x00%d\x00%s\x00%s\x00%s\x02", cond.Type, cond.Status, cond.ObservedGeneration,
				timeKey(cond.LastTransitionTime), cond.Reason, cond.Message)
		}
	}
	// One shared copy per content: the pods of a workload that became
	// ready in the same second hold the same.
	return c.conditionSets.intern(b.String(), nil, func() []corev1.PodCondition {
		out := make([]corev1.PodCondition, 0, n)
		for _, cond := range in {
			if slices.Contains(readConditions, cond.Type) {
				out = append(out, corev1.PodCondition{
					Type: corev1.PodConditionType(c.str(string(cond.Type))), Status: corev1.ConditionStatus(c.str(string(cond.Status))),
					ObservedGeneration: cond.ObservedGeneration, LastTransitionTime: cond.LastTransitionTime,
					Reason: c.str(cond.Reason), Message: strings.Clone(cond.Message),
				})
			}
		}
		return out
	})
}

// interned is a table of shared values by content key, bounded: past max
// entries it starts over. It files each value under a digest of its key
// (the first 128 bits of its SHA-256), not the key: a table of 8 192
// revisions' data or label sets would otherwise hold a second copy of
// each. A table entry is paid for every distinct value, shared or not:
// half the digest is a third less per entry.
type interned[V any] struct {
	m   map[digest]V
	max int
}

// digest is a key's SHA-256, cut to 128 bits: two keys of a table share one
// with a chance of about 2^-102.
type digest [16]byte

func newInterned[V any](maxEntries int) interned[V] {
	return interned[V]{m: map[digest]V{}, max: maxEntries}
}

// intern returns the shared value for key, making it with fresh (from a
// value like zero) the first time. An empty key is not shared.
func (t *interned[V]) intern(key string, zero V, fresh func() V) V {
	if key == "" {
		return zero
	}
	sum := sha256.Sum256([]byte(key))
	d := digest(sum[:len(digest{})])
	if v, ok := t.m[d]; ok {
		return v
	}
	t.makeRoom()
	v := fresh()
	t.m[d] = v
	return v
}

func (t *interned[V]) makeRoom() {
	if len(t.m) >= t.max {
		clear(t.m)
	}
}
