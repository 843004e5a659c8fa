package rollout

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// Resize in place.
//
// A pod whose sidecars differ from the current revision in images and in
// the CPU and memory of containers and native sidecars only
// (upgrade.PathResize: resources, or a resourcesPolicy) is upgraded in
// place in two steps:
//
//  1. one pods/resize patch gives each of its sidecars the resources it
//     should have now (resources.Policies.ForPod: the SidecarSet's
//     resources, or its resourcesPolicy computed from the pod's own
//     containers, as injection computes them), with requests defaulted to
//     limits as the API server defaults them;
//  2. once the kubelet has applied the resize, the usual in-place patch
//     (update.go) changes the images and records the current revision in
//     both hash annotations: the pod now runs it, and an OpenKruise
//     manager taking over sees an up-to-date pod.
//
// The pod counts as updated only after step 2, that is once the kubelet has
// applied the resize: status.observedGeneration has reached the pod's
// generation, no PodResizePending or PodResizeInProgress condition is left,
// and the container statuses report the new resources. Until then:
//
//   - a resize issued and not yet applied (in flight, or
//     PodResizeInProgress) takes a share of maxUnavailable, as an image
//     being pulled does, so maxUnavailable paces resizes;
//   - a resize the kubelet deferred (PodResizePending, reason Deferred: the
//     node has no room now; the kubelet retries by itself), found infeasible
//     (reason Infeasible: the node can never fit it), or that is stuck
//     (PodResizeInProgress with reason Error, or in progress for longer
//     than ResizeTimeout) takes no share: the pod keeps running with its
//     old resources, is counted in status.resizePendingPods and named in
//     the Resized condition, and the rollout moves on. An infeasible pod is
//     recreated when the SidecarSet allows it (its replacement is scheduled
//     where the resources fit);
//   - a resize the API server would refuse is never sent: a change of the
//     pod's QoS class, a request or limit removed, another resource than
//     CPU and memory, pod-level resources, a Windows pod, a node that does
//     not report container resources, or a cluster without pods/resize.
//     Such a pod goes to the recreate path when the SidecarSet allows it,
//     else it is reported (Resized, reason ResizeRefused) and left alone.

// ResizeTimeout is how long a resize may stay in progress before it is
// reported stuck and stops holding a share of maxUnavailable.
const ResizeTimeout = 5 * time.Minute

// resizeState is where a pod's resize stands.
type resizeState int

const (
	// resizeNeeded: some sidecar's spec differs from its resources now.
	resizeNeeded resizeState = iota + 1
	// resizeApplying: the spec has them; the kubelet is applying them.
	resizeApplying
	// resizeDeferred, resizeInfeasible, resizeStuck: reported, waiting.
	resizeDeferred
	resizeInfeasible
	resizeStuck
	// resizeApplied: the kubelet applied them.
	resizeApplied
	// resizeRefused: the resize cannot be made on this pod.
	resizeRefused
)

// resizeView is a pod's resize.
type resizeView struct {
	state resizeState
	// containers are the sidecars whose spec resources differ from the
	// ones they should have, in pod order.
	containers []containerResize
	// message is the kubelet's message (deferred, infeasible, stuck) or
	// why the resize cannot be made (refused).
	message string
}

// containerResize is one sidecar's resize.
type containerResize struct {
	name     string
	init     bool
	from, to corev1.ResourceRequirements
}

// listResize is the change of a sidecar's requests, or of its limits.
type listResize struct {
	what     string
	from, to corev1.ResourceList
}

// lists are the changes of its requests and of its limits.
func (c containerResize) lists() [2]listResize {
	return [2]listResize{{"request", c.from.Requests, c.to.Requests}, {"limit", c.from.Limits, c.to.Limits}}
}

// planResize sets the kind of a pod on the resize path from its resize.
func (s *setView) planResize(v *podView) {
	r := s.resizeOf(v)
	v.resize = r
	v.upgradable = r.state != resizeRefused
	switch r.state {
	case resizeNeeded:
		v.kind = kindResize
	case resizeApplying:
		v.kind = kindResizing
	case resizeApplied:
		v.kind = kindResized
		v.changesImages = s.changesImages(v)
	case resizeDeferred, resizeStuck:
		v.kind = kindResizePending
	case resizeInfeasible:
		v.kind = kindResizePending
		if s.recreate {
			if ok, _ := recreatable(v.pod, s.recreateJobs); ok {
				v.kind, v.why = kindRecreate, "its node cannot fit the new resources: "+r.message
			}
		}
	case resizeRefused:
		s.toRecreate(v, "its resize cannot be made: "+r.message)
	}
}

// resizeOf computes a pod's resize: the resources each sidecar should
// have, whether the resize can be made, and where it stands.
func (s *setView) resizeOf(v *podView) *resizeView {
	pod := v.pod
	r := &resizeView{}
	refuse := func(format string, args ...any) *resizeView {
		r.state, r.message = resizeRefused, fmt.Sprintf(format, args...)
		return r
	}
	exclude := s.sidecarNames(v)
	desired := map[string]corev1.ResourceRequirements{}
	for _, sc := range s.cold {
		c := specContainer(pod, sc.Name)
		if c == nil || !s.injectedInto(v, sc.Name) {
			continue
		}
		to, err := s.policies.ForPod(sc, pod.Spec.Containers, pod.Spec.InitContainers, exclude)
		if err != nil {
			return refuse("sidecar %s: resourcesPolicy: %v", sc.Name, err)
		}
		defaultRequests(&to)
		desired[sc.Name] = to
		if !sameResources(c.Resources, to) {
			r.containers = append(r.containers, containerResize{name: sc.Name, init: slices.ContainsFunc(pod.Spec.InitContainers,
				func(ic corev1.Container) bool { return ic.Name == sc.Name }), from: c.Resources, to: to})
		}
	}
	if len(r.containers) > 0 {
		if msg, ok := s.resizeRefused[pod.UID]; ok {
			return refuse("the API server refused it: %s", msg)
		}
		if why := s.refusal(pod, r.containers); why != "" {
			return refuse("%s", why)
		}
		r.state = resizeNeeded
		return r
	}
	r.state, r.message = kubeletResize(pod, desired, s.now)
	return r
}

// sidecarNames are the names of every sidecar the pod records, of any
// SidecarSet (hot-upgrade twins included): a resourcesPolicy never counts
// them as the pod's own containers, as at injection.
func (s *setView) sidecarNames(v *podView) map[string]bool {
	names := map[string]bool{}
	for _, e := range v.state.Hashes {
		for _, n := range e.SidecarList {
			t1, t2 := appsv1beta1.HotUpgradeTwins(n)
			names[n], names[t1], names[t2] = true, true, true
		}
	}
	for _, n := range s.names {
		names[n] = true
	}
	return names
}

// refusal says why the API server would refuse resizing the pod's sidecars
// to their new resources, or "" when it would accept it.
func (s *setView) refusal(pod *corev1.Pod, changes []containerResize) string {
	switch {
	case s.resizeUnsupported:
		return "the API server does not serve pods/resize (in-place resize needs Kubernetes 1.33 or later)"
	case pod.Spec.OS != nil && pod.Spec.OS.Name == corev1.Windows:
		return "Windows pods cannot be resized"
	case pod.Spec.Resources != nil && (len(pod.Spec.Resources.Requests) > 0 || len(pod.Spec.Resources.Limits) > 0):
		return "the pod sets pod-level resources"
	case !nodeReportsResources(pod):
		return "its node does not support resizing (its container statuses report no resources)"
	}
	for _, c := range changes {
		for _, l := range c.lists() {
			for _, name := range slices.Sorted(maps.Keys(l.from)) {
				if _, ok := l.to[name]; !ok {
					return fmt.Sprintf("sidecar %s: a resize cannot remove the %s %s", c.name, name, l.what)
				}
			}
			for _, name := range slices.Sorted(maps.Keys(l.to)) {
				old, had := l.from[name]
				if name != corev1.ResourceCPU && name != corev1.ResourceMemory && (!had || old.Cmp(l.to[name]) != 0) {
					return fmt.Sprintf("sidecar %s: only CPU and memory can be resized, and its %s %s changes", c.name, name, l.what)
				}
			}
		}
	}
	before := pod.Status.QOSClass
	if before == "" {
		before = podQOS(pod, nil)
	}
	if after := podQOS(pod, changes); after != before {
		return fmt.Sprintf("its QoS class would change from %s to %s", before, after)
	}
	return ""
}

// nodeReportsResources is the API server's test of a node's support for
// resizing: the first running container's status reports its resources
// (a pod with no running container is assumed to be on a node that does).
func nodeReportsResources(pod *corev1.Pod) bool {
	for i := range pod.Status.ContainerStatuses {
		if st := &pod.Status.ContainerStatuses[i]; st.State.Running != nil {
			return st.Resources != nil
		}
	}
	return true
}

// kubeletResize says where a resize the pod's spec already carries stands.
func kubeletResize(pod *corev1.Pod, desired map[string]corev1.ResourceRequirements, now time.Time) (resizeState, string) {
	pending := findPodCondition(pod, corev1.PodResizePending)
	progress := findPodCondition(pod, corev1.PodResizeInProgress)
	switch {
	case pending != nil && pending.Reason == corev1.PodReasonInfeasible:
		return resizeInfeasible, pending.Message
	case pending != nil:
		return resizeDeferred, pending.Message
	case progress != nil && progress.Reason == corev1.PodReasonError:
		return resizeStuck, progress.Message
	case progress != nil && now.Sub(progress.LastTransitionTime.Time) >= ResizeTimeout:
		return resizeStuck, fmt.Sprintf("in progress for more than %v", ResizeTimeout)
	case progress != nil:
		return resizeApplying, ""
	case pod.Status.ObservedGeneration != 0 && pod.Status.ObservedGeneration < pod.Generation:
		// Not yet observed by the kubelet, and no longer in flight (the
		// shell's record expired, or the manager restarted).
		return resizeStuck, "the kubelet has not observed the pod's last change"
	}
	for name, want := range desired {
		if st := containerStatus(pod, name); st != nil && st.Resources != nil && !sameCPUMemory(*st.Resources, want) {
			return resizeApplying, ""
		}
	}
	return resizeApplied, ""
}

// nextResizeDeadline returns how long until the first resize in progress
// turns stuck (ResizeTimeout), or 0 if none is in progress: the round
// plans again then, as no event may come.
func nextResizeDeadline(views []*podView, now time.Time) time.Duration {
	var next time.Duration
	for _, v := range views {
		if v.kind != kindResizing {
			continue
		}
		if c := findPodCondition(v.pod, corev1.PodResizeInProgress); c != nil {
			next = earliest(next, c.LastTransitionTime.Add(ResizeTimeout).Sub(now))
		}
	}
	return next
}

// defaultRequests sets each request that a limit has and the request lacks
// to the limit, as the API server defaults a container's resources.
func defaultRequests(r *corev1.ResourceRequirements) {
	for name, q := range r.Limits {
		if _, ok := r.Requests[name]; !ok {
			if r.Requests == nil {
				r.Requests = corev1.ResourceList{}
			}
			r.Requests[name] = q.DeepCopy()
		}
	}
}

// sameResources compares requests and limits by value.
func sameResources(a, b corev1.ResourceRequirements) bool {
	return sameList(a.Requests, b.Requests) && sameList(a.Limits, b.Limits)
}

// sameCPUMemory compares the CPU and memory of requests and limits by value,
// as the kubelet reports them.
func sameCPUMemory(a, b corev1.ResourceRequirements) bool {
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if !sameQuantity(a.Requests, b.Requests, name) || !sameQuantity(a.Limits, b.Limits, name) {
			return false
		}
	}
	return true
}

func sameList(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for name := range a {
		if !sameQuantity(a, b, name) {
			return false
		}
	}
	return true
}

func sameQuantity(a, b corev1.ResourceList, name corev1.ResourceName) bool {
	qa, okA := a[name]
	qb, okB := b[name]
	return okA == okB && qa.Cmp(qb) == 0
}

// podQOS computes a pod's QoS class as the API server does for pods
// without pod-level resources, with the given sidecars' resources replaced
// (nil: as the pod is): BestEffort when no container requests or limits
// anything, Guaranteed when every container's CPU and memory requests
// equal its limits and are set, Burstable otherwise.
func podQOS(pod *corev1.Pod, changes []containerResize) corev1.PodQOSClass {
	var class corev1.PodQOSClass
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			res := list[i].Resources
			if j := slices.IndexFunc(changes, func(c containerResize) bool { return c.name == list[i].Name }); j >= 0 {
				res = changes[j].to
			}
			c := containerQOS(res)
			switch {
			case c == corev1.PodQOSBurstable:
				return c
			case class == "":
				class = c
			case class != c:
				return corev1.PodQOSBurstable
			}
		}
	}
	if class == "" {
		return corev1.PodQOSBestEffort
	}
	return class
}

func containerQOS(r corev1.ResourceRequirements) corev1.PodQOSClass {
	if len(r.Requests) == 0 && len(r.Limits) == 0 {
		return corev1.PodQOSBestEffort
	}
	var class corev1.PodQOSClass
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, lim := r.Requests[name], r.Limits[name]
		c := corev1.PodQOSGuaranteed
		switch {
		case !req.Equal(lim):
			return corev1.PodQOSBurstable
		case req.IsZero():
			c = corev1.PodQOSBestEffort
		}
		if class != "" && class != c {
			return corev1.PodQOSBurstable
		}
		class = c
	}
	return class
}

// PodResize is one pods/resize patch.
type PodResize struct {
	// Pod names the pod.
	Pod types.NamespacedName
	// UID is the pod's UID, the key of the in-flight record.
	UID types.UID
	// Generation is the pod's metadata.generation before the resize: the
	// resize is observed once the pod's generation is larger.
	Generation int64
	// Patch is a strategic-merge patch of the pods/resize subresource: the
	// resized sidecars' resources (spec.containers and
	// spec.initContainers, by name) and metadata.resourceVersion, so that
	// the API server rejects it if the pod changed.
	Patch []byte
	// Hash is the SidecarSet hash the resize leads to.
	Hash string
}

// buildResize builds a pod's pods/resize patch.
func buildResize(v *podView, hash string) PodResize {
	spec := map[string]any{}
	for _, list := range []struct {
		key  string
		init bool
	}{{"containers", false}, {"initContainers", true}} {
		var items []map[string]any
		for _, c := range v.resize.containers {
			if c.init == list.init {
				items = append(items, map[string]any{"name": c.name, "resources": c.to})
			}
		}
		if len(items) > 0 {
			spec[list.key] = items
		}
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": v.pod.ResourceVersion}, "spec": spec})
	if err != nil {
		panic(fmt.Sprintf("rollout: encoding a resize: %v", err)) // resource lists always encode
	}
	return PodResize{Pod: v.key, UID: v.pod.UID, Generation: v.pod.Generation, Patch: patch, Hash: hash}
}

// describeResize says what a resize changes, per sidecar: "agent cpu
// request 100m→200m, memory limit 128Mi→256Mi".
func describeResize(r *resizeView) string {
	var parts []string
	for _, c := range r.containers {
		var changes []string
		for _, l := range c.lists() {
			for _, name := range slices.Sorted(maps.Keys(l.to)) {
				if !sameQuantity(l.from, l.to, name) {
					changes = append(changes, fmt.Sprintf("%s %s %s→%s", name, l.what, quantity(l.from, name), quantity(l.to, name)))
				}
			}
		}
		parts = append(parts, c.name+" "+strings.Join(changes, ", "))
	}
	return strings.Join(parts, "; ")
}

func quantity(l corev1.ResourceList, name corev1.ResourceName) string {
	if q, ok := l[name]; ok {
		return q.String()
	}
	return "none"
}

// resizeCondition returns the Resized condition: False while some pods'
// resizes wait (deferred, infeasible, stuck) or cannot be made, naming a
// few; nil when none does.
func resizeCondition(views []*podView, generation int64, now time.Time) *metav1.Condition {
	var waiting []*podView
	reasons := map[resizeState]int{}
	for _, v := range views {
		if v.resize == nil || v.updated || v.err != nil || !v.selected {
			continue
		}
		if v.kind == kindResizePending || (v.kind == kindBlocked && v.resize.state == resizeRefused) {
			waiting = append(waiting, v)
			reasons[v.resize.state]++
		}
	}
	if len(waiting) == 0 {
		return nil
	}
	reason := appsv1beta1.ReasonResizeDeferred
	switch {
	case reasons[resizeInfeasible] > 0:
		reason = appsv1beta1.ReasonResizeInfeasible
	case reasons[resizeRefused] > 0:
		reason = appsv1beta1.ReasonResizeRefused
	case reasons[resizeStuck] > 0:
		reason = appsv1beta1.ReasonResizeStuck
	}
	var counts []string
	for _, st := range []struct {
		state resizeState
		what  string
	}{{resizeInfeasible, "infeasible on their node"}, {resizeRefused, "cannot be made"}, {resizeStuck, "stuck"}, {resizeDeferred, "deferred by the kubelet"}} {
		if n := reasons[st.state]; n > 0 {
			counts = append(counts, fmt.Sprintf("%d %s", n, st.what))
		}
	}
	var named []string
	for _, v := range waiting[:min(len(waiting), maxNamed)] {
		named = append(named, fmt.Sprintf("%s (%s: %s)", v.key, resizeStateWord(v.resize.state), v.resize.message))
	}
	more := ""
	if len(waiting) > maxNamed {
		more = fmt.Sprintf(" and %d more", len(waiting)-maxNamed)
	}
	c := &metav1.Condition{
		Type: appsv1beta1.SidecarSetConditionResized, Status: metav1.ConditionFalse, Reason: reason, ObservedGeneration: generation,
		LastTransitionTime: metav1.NewTime(now.Truncate(time.Second)),
		Message:            fmt.Sprintf(waitFormat(len(waiting)), strings.Join(counts, ", "), strings.Join(named, ", "), more),
	}
	return c
}

// waitFormat is the Resized condition's message format for n pods.
func waitFormat(n int) string {
	if n == 1 {
		return "1 pod waits for its in-place resize (%s), keeping its resources: %s%s"
	}
	return fmt.Sprintf("%d pods wait for their in-place resize ", n) + "(%s), keeping their resources: %s%s"
}

// maxNamed is how many pods a condition names.
const maxNamed = 3

func resizeStateWord(s resizeState) string {
	switch s {
	case resizeInfeasible:
		return "infeasible"
	case resizeRefused:
		return "refused"
	case resizeStuck:
		return "stuck"
	default:
		return "deferred"
	}
}

// setCondition sets or removes a condition of the SidecarSet's list.
func setCondition(conds *[]metav1.Condition, t string, c *metav1.Condition) {
	if c == nil {
		meta.RemoveStatusCondition(conds, t)
		return
	}
	meta.SetStatusCondition(conds, *c)
}
