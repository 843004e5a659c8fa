package rollout

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// res builds resource requirements: requests then limits, each a
// "cpu=100m,memory=64Mi" list ("" for none).
func res(requests, limits string) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Requests: list(requests), Limits: list(limits)}
}

func list(s string) corev1.ResourceList {
	if s == "" {
		return nil
	}
	out := corev1.ResourceList{}
	for _, kv := range splitComma(s) {
		for i := range kv {
			if kv[i] == '=' {
				out[corev1.ResourceName(kv[:i])] = resource.MustParse(kv[i+1:])
			}
		}
	}
	return out
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := range len(s) + 1 {
		if i == len(s) || s[i] == ',' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return out
}

// resources sets a sidecar's resources in the SidecarSet.
func (s *setWrapper) resources(container string, r corev1.ResourceRequirements) *setWrapper {
	for _, l := range [][]appsv1beta1.SidecarContainer{s.Spec.Containers, s.Spec.InitContainers} {
		for i := range l {
			if l[i].Name == container {
				l[i].Resources = r
			}
		}
	}
	return s
}

func (s *setWrapper) annotate(k, v string) *setWrapper {
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	s.Annotations[k] = v
	return s
}

// reporting makes every container status report its spec resources, as a
// kubelet that supports resizing does.
func (p *podWrapper) reporting() *podWrapper {
	for _, name := range longRunningNames(&p.Pod) {
		p.status(name).Resources = p.spec(name).Resources.DeepCopy()
	}
	if p.Generation == 0 {
		p.Generation, p.Status.ObservedGeneration = 1, 1
	}
	return p
}

// resized makes the pod's spec carry a resize the kubelet has observed and
// not yet applied (its statuses keep the old resources).
func (p *podWrapper) resized(container string, r corev1.ResourceRequirements) *podWrapper {
	p.spec(container).Resources = r
	p.Generation++
	p.Status.ObservedGeneration = p.Generation
	return p
}

// applied makes the kubelet report the spec's resources.
func (p *podWrapper) applied() *podWrapper {
	p.reporting()
	p.Status.ObservedGeneration = p.Generation
	return p
}

func (p *podWrapper) resizeCondition(t corev1.PodConditionType, reason, message string, since time.Time) *podWrapper {
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
		Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: message, LastTransitionTime: metav1.NewTime(since)})
	return p
}

func (p *podWrapper) ownedBy(kind, apiVersion, uid string) *podWrapper {
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: "owner", UID: types.UID(uid), Controller: new(true)}}
	return p
}

// revisionsOf records the SidecarSets as revisions, by without-image hash.
func revisionsOf(tb testing.TB, sets ...*appsv1beta1.SidecarSet) map[string]*appsv1beta1.SidecarSetSpec {
	tb.Helper()
	out := map[string]*appsv1beta1.SidecarSetSpec{}
	for _, s := range sets {
		out[hashesOf(tb, s).WithoutImage] = &s.Spec
	}
	return out
}

// resizedResources decodes the resources a resize patch gives a container.
func resizedResources(tb testing.TB, r PodResize, container string) corev1.ResourceRequirements {
	tb.Helper()
	var patch struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
		Spec struct {
			Containers     []corev1.Container `json:"containers"`
			InitContainers []corev1.Container `json:"initContainers"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(r.Patch, &patch); err != nil {
		tb.Fatal(err)
	}
	if patch.Metadata.ResourceVersion == "" {
		tb.Errorf("the resize of %s carries no resourceVersion", r.Pod)
	}
	for _, c := range append(patch.Spec.Containers, patch.Spec.InitContainers...) {
		if c.Name == container {
			return c.Resources
		}
	}
	tb.Fatalf("the resize of %s does not resize %s: %s", r.Pod, container, r.Patch)
	return corev1.ResourceRequirements{}
}

var quantityCmp = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

func resizedNames(rs []PodResize) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, r.Pod.Name)
	}
	return out
}

func TestPlan_Resize(t *testing.T) {
	t.Parallel()
	small, big := res("cpu=100m,memory=64Mi", "cpu=200m,memory=128Mi"), res("cpu=200m,memory=128Mi", "cpu=400m,memory=256Mi")
	v1 := makeSet("mesh").cold("agent", "agent:1").resources("agent", small).maxUnavailable(intstr.FromInt32(1))
	v2 := v1.clone().resources("agent", big)
	running := func(name string) *podWrapper {
		p := makePod(name).injected(t, v1.obj())
		p.spec("agent").Resources = small
		return p.reporting()
	}

	t.Run("a resources change resizes the pods in place, one at a time under maxUnavailable 1", func(t *testing.T) {
		t.Parallel()
		in := input(t, v2.obj(), pods(running("a"), running("b"), running("c"))...)
		in.Revisions = revisionsOf(t, v1.obj())
		plan := compute(t, in)
		if got := resizedNames(plan.Resizes); !cmp.Equal(got, []string{"a"}) {
			t.Fatalf("resized %v, want [a] (updates %v, blocked %v)", got, updatedNames(plan.Updates), plan.Blocked)
		}
		if diff := cmp.Diff(big, resizedResources(t, plan.Resizes[0], "agent"), quantityCmp); diff != "" {
			t.Errorf("resources (-want +got):\n%s", diff)
		}
		if len(plan.Updates) != 0 || len(plan.NotUpgradable) != 0 || len(plan.Evictions) != 0 {
			t.Errorf("updates %v, not upgradable %v, evictions %v: want none", plan.Updates, plan.NotUpgradable, plan.Evictions)
		}
		if got := conditionReason(plan.Status.Conditions, appsv1beta1.SidecarSetConditionProgressing); got != appsv1beta1.ReasonUpdating {
			t.Errorf("Progressing %q, want %q", got, appsv1beta1.ReasonUpdating)
		}
		if plan.Status.UpdatedPods != 0 || plan.Settled {
			t.Errorf("updated %d, settled %v: a resize issued is not an update", plan.Status.UpdatedPods, plan.Settled)
		}
	})

	t.Run("a resize in flight and one being applied hold the budget; neither is updated", func(t *testing.T) {
		t.Parallel()
		a := running("a")
		b := running("b").resized("agent", big).resizeCondition(corev1.PodResizeInProgress, "", "", t0)
		in := input(t, v2.clone().maxUnavailable(intstr.FromInt32(2)).obj(), pods(a, b, running("c"))...)
		in.Revisions = revisionsOf(t, v1.obj())
		in.InFlight = map[types.UID]InFlight{a.UID: {Hash: in.Hashes.Hash, Since: t0, Resize: true, Generation: 1}}
		plan := compute(t, in)
		if len(plan.Resizes) != 0 || len(plan.Updates) != 0 {
			t.Errorf("resizes %v, updates %v: the budget of 2 is held", resizedNames(plan.Resizes), updatedNames(plan.Updates))
		}
		if plan.Status.UpdatedPods != 0 || plan.Status.ResizePendingPods != 0 {
			t.Errorf("status %+v", plan.Status)
		}
	})

	t.Run("an applied resize is finished by the in-place patch, recording the revision in both hashes", func(t *testing.T) {
		t.Parallel()
		a := running("a").resized("agent", big).applied()
		in := input(t, v2.obj(), pods(a)...)
		in.Revisions = revisionsOf(t, v1.obj())
		plan := compute(t, in)
		anns := patchedAnnotations(t, plan)
		h := hashesOf(t, v2.obj())
		for key, want := range map[string]string{appsv1beta1.SidecarSetHashAnnotation: h.Hash,
			appsv1beta1.SidecarSetHashWithoutImageAnnotation: h.WithoutImage} {
			got, err := podstate.DecodeHashes(anns[key])
			if err != nil || got["mesh"].Hash != want {
				t.Errorf("%s: %+v (%v), want hash %s", key, got, err, want)
			}
		}
		if len(plan.Resizes) != 0 {
			t.Errorf("resized again: %v", resizedNames(plan.Resizes))
		}
	})

	t.Run("a finished resize without an image change takes no share of maxUnavailable", func(t *testing.T) {
		t.Parallel()
		a := running("a").resized("agent", big).applied()
		b := running("b").resized("agent", big).resizeCondition(corev1.PodResizeInProgress, "", "", t0)
		in := input(t, v2.obj(), pods(a, b)...)
		in.Revisions = revisionsOf(t, v1.obj())
		if plan := compute(t, in); !cmp.Equal(updatedNames(plan.Updates), []string{"a"}) {
			t.Errorf("updates %v, want [a]", updatedNames(plan.Updates))
		}
	})

	t.Run("resources and an image: resized first, the image patched once the resize is applied", func(t *testing.T) {
		t.Parallel()
		v3 := v2.clone().image("agent", "agent:2")
		in := input(t, v3.obj(), pods(running("a"))...)
		in.Revisions = revisionsOf(t, v1.obj())
		plan := compute(t, in)
		if len(plan.Resizes) != 1 || len(plan.Updates) != 0 {
			t.Fatalf("resizes %v, updates %v: want the resize alone", resizedNames(plan.Resizes), updatedNames(plan.Updates))
		}
		in.Pods = pods(running("a").resized("agent", big).applied())
		plan = compute(t, in)
		if len(plan.Updates) != 1 || len(plan.Resizes) != 0 {
			t.Fatalf("resizes %v, updates %v: want the patch alone", resizedNames(plan.Resizes), updatedNames(plan.Updates))
		}
		var patch struct {
			Spec struct {
				Containers []corev1.Container `json:"containers"`
			} `json:"spec"`
		}
		if err := json.Unmarshal(plan.Updates[0].Patch, &patch); err != nil || len(patch.Spec.Containers) != 1 || patch.Spec.Containers[0].Image != "agent:2" {
			t.Errorf("patch %s: want the image agent:2", plan.Updates[0].Patch)
		}
	})

	t.Run("a deferred, an infeasible and a stuck resize are reported and hold no share", func(t *testing.T) {
		t.Parallel()
		deferred := running("a").resized("agent", big).resizeCondition(corev1.PodResizePending, corev1.PodReasonDeferred, "Node didn't have enough resource: cpu", t0)
		infeasible := running("b").resized("agent", big).resizeCondition(corev1.PodResizePending, corev1.PodReasonInfeasible, "Node didn't have enough capacity: memory", t0)
		stuck := running("c").resized("agent", big).resizeCondition(corev1.PodResizeInProgress, "", "", t0.Add(-ResizeTimeout))
		in := input(t, v2.obj(), pods(deferred, infeasible, stuck, running("d"))...)
		in.Revisions = revisionsOf(t, v1.obj())
		plan := compute(t, in)
		if got := resizedNames(plan.Resizes); !cmp.Equal(got, []string{"d"}) {
			t.Errorf("resized %v, want [d]: pending resizes hold no share", got)
		}
		if plan.Status.ResizePendingPods != 3 {
			t.Errorf("resizePendingPods %d, want 3", plan.Status.ResizePendingPods)
		}
		c := findCondition(plan.Status.Conditions, appsv1beta1.SidecarSetConditionResized)
		if c == nil || c.Reason != appsv1beta1.ReasonResizeInfeasible || c.Status != metav1.ConditionFalse {
			t.Fatalf("Resized condition %+v, want False with reason %s", c, appsv1beta1.ReasonResizeInfeasible)
		}
		want := "3 pods wait for their in-place resize (1 infeasible on their node, 1 stuck, 1 deferred by the kubelet), keeping their " +
			"resources: default/a (deferred: Node didn't have enough resource: cpu), default/b (infeasible: Node didn't have enough " +
			"capacity: memory), default/c (stuck: in progress for more than 5m0s)"
		if c.Message != want {
			t.Errorf("message\n%s\nwant\n%s", c.Message, want)
		}
	})

	t.Run("a rollout left with an infeasible resize says so instead of complete", func(t *testing.T) {
		t.Parallel()
		infeasible := running("a").resized("agent", big).resizeCondition(corev1.PodResizePending, corev1.PodReasonInfeasible, "too big", t0)
		done := makePod("b").injected(t, v2.obj()).reporting()
		in := input(t, v2.obj(), pods(infeasible, done)...)
		in.Revisions = revisionsOf(t, v1.obj())
		plan := compute(t, in)
		c := findCondition(plan.Status.Conditions, appsv1beta1.SidecarSetConditionProgressing)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != appsv1beta1.ReasonResizePending ||
			c.Message != "1 of 2 pods wait for the kubelet to apply their resize (the Resized condition says why)" {
			t.Errorf("Progressing %+v", c)
		}
		if !plan.Settled {
			t.Error("not settled: nothing is left to do until the kubelet moves")
		}
	})

	t.Run("an infeasible resize is recreated when the SidecarSet allows it", func(t *testing.T) {
		t.Parallel()
		infeasible := running("a").resized("agent", big).ownedBy("ReplicaSet", "apps/v1", "rs-1").
			resizeCondition(corev1.PodResizePending, corev1.PodReasonInfeasible, "too big", t0)
		in := input(t, v2.clone().annotate(appsv1beta1.RecreatePodsAnnotation, "true").obj(), pods(infeasible)...)
		in.Revisions = revisionsOf(t, v1.obj())
		plan := compute(t, in)
		if len(plan.Evictions) != 1 || plan.Evictions[0].Owner != "rs-1" || plan.Evictions[0].UID != "uid-a" {
			t.Fatalf("evictions %+v, want pod a of rs-1", plan.Evictions)
		}
		if plan.Evictions[0].Reason != "its node cannot fit the new resources: too big" {
			t.Errorf("reason %q", plan.Evictions[0].Reason)
		}
	})

	t.Run("resizes the API server would refuse are never sent", func(t *testing.T) {
		t.Parallel()
		guaranteed := res("cpu=100m,memory=64Mi", "cpu=100m,memory=64Mi")
		g1 := makeSet("mesh").cold("agent", "agent:1").resources("agent", guaranteed)
		podG := func(name string) *podWrapper {
			p := makePod(name).injected(t, g1.obj())
			p.spec("app").Resources = guaranteed
			p.spec("agent").Resources = guaranteed
			return p.reporting()
		}
		tests := []struct {
			name        string
			from, to    *setWrapper
			pod         *podWrapper
			unsupported bool
			want        string
		}{
			{name: "a change of the QoS class", from: g1, to: g1.clone().resources("agent", res("cpu=100m,memory=64Mi", "cpu=200m,memory=64Mi")),
				pod: podG("a"), want: "its resize cannot be made: its QoS class would change from Guaranteed to Burstable"},
			{name: "a limit removed", from: v1, to: v1.clone().resources("agent", res("cpu=100m,memory=64Mi", "cpu=200m")),
				pod: running("b"), want: "its resize cannot be made: sidecar agent: a resize cannot remove the memory limit"},
			{name: "another resource than CPU and memory", from: v1,
				to:  v1.clone().resources("agent", res("cpu=100m,memory=64Mi,ephemeral-storage=1Gi", "cpu=200m,memory=128Mi")),
				pod: running("c"), want: "its resize cannot be made: sidecar agent: only CPU and memory can be resized, and its ephemeral-storage request changes"},
			{name: "a cluster without pods/resize", from: v1, to: v2, pod: running("d"), unsupported: true,
				want: "its resize cannot be made: the API server does not serve pods/resize (in-place resize needs Kubernetes 1.33 or later)"},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				in := input(t, tc.to.obj(), pods(tc.pod)...)
				in.Revisions = revisionsOf(t, tc.from.obj())
				in.ResizeUnsupported = tc.unsupported
				plan := compute(t, in)
				if len(plan.Resizes) != 0 || len(plan.NotUpgradable) != 1 {
					t.Fatalf("resizes %v, not upgradable %v: want the pod reported", resizedNames(plan.Resizes), plan.NotUpgradable)
				}
				if got := decisionOf(plan, tc.pod.Name); got.Action != ActionBlocked || got.Detail != tc.want {
					t.Errorf("decision %+v, want blocked: %s", got, tc.want)
				}
				if c := findCondition(plan.Status.Conditions, appsv1beta1.SidecarSetConditionResized); c == nil || c.Reason != appsv1beta1.ReasonResizeRefused {
					t.Errorf("Resized condition %+v, want reason %s", c, appsv1beta1.ReasonResizeRefused)
				}
			})
		}
	})

	t.Run("a resourcesPolicy is computed from the pod's own containers", func(t *testing.T) {
		t.Parallel()
		requestsOnly := res("cpu=100m,memory=64Mi", "")
		p1 := makeSet("mesh").cold("agent", "agent:1").resources("agent", requestsOnly)
		withPolicy := p1.clone().resources("agent", corev1.ResourceRequirements{})
		withPolicy.Spec.Containers[0].ResourcesPolicy = &appsv1beta1.ResourcesPolicy{TargetContainerMode: appsv1beta1.TargetContainerModeSum,
			ResourceExpr: appsv1beta1.ResourceExpr{Requests: &appsv1beta1.ResourceExprRequests{CPU: "cpu*50%", Memory: "memory*25%"}}}
		p := makePod("a").injected(t, p1.obj())
		p.spec("agent").Resources = requestsOnly
		p.spec("app").Resources = res("cpu=1,memory=1Gi", "")
		p.reporting()
		in := input(t, withPolicy.obj(), pods(p)...)
		in.Revisions = revisionsOf(t, p1.obj())
		plan := compute(t, in)
		if len(plan.Resizes) != 1 {
			t.Fatalf("resizes %v, blocked %v, decisions %+v", resizedNames(plan.Resizes), plan.Blocked, plan.Decisions)
		}
		if diff := cmp.Diff(res("cpu=500m,memory=256Mi", ""), resizedResources(t, plan.Resizes[0], "agent"), quantityCmp); diff != "" {
			t.Errorf("resources (-want +got):\n%s", diff)
		}
		if got := decisionOf(plan, "a"); got.Action != ActionResize || got.Detail != "agent cpu request 100m→500m, memory request 64Mi→256Mi" {
			t.Errorf("decision %+v", got)
		}
	})

	t.Run("a native sidecar is resized in spec.initContainers", func(t *testing.T) {
		t.Parallel()
		n1 := makeSet("mesh").native("proxy", "envoy:1").resources("proxy", small)
		p := makePod("a").injected(t, n1.obj())
		p.spec("proxy").Resources = small
		p.reporting()
		in := input(t, n1.clone().resources("proxy", big).obj(), pods(p)...)
		in.Revisions = revisionsOf(t, n1.obj())
		plan := compute(t, in)
		if len(plan.Resizes) != 1 {
			t.Fatalf("resizes %v, decisions %+v", resizedNames(plan.Resizes), plan.Decisions)
		}
		var patch struct {
			Spec struct {
				Containers     []corev1.Container `json:"containers"`
				InitContainers []corev1.Container `json:"initContainers"`
			} `json:"spec"`
		}
		if err := json.Unmarshal(plan.Resizes[0].Patch, &patch); err != nil {
			t.Fatal(err)
		}
		if len(patch.Spec.Containers) != 0 || len(patch.Spec.InitContainers) != 1 || patch.Spec.InitContainers[0].Name != "proxy" {
			t.Errorf("patch %s: want the native sidecar in spec.initContainers only", plan.Resizes[0].Patch)
		}
	})

	t.Run("a pod whose revision is not recorded is not resized", func(t *testing.T) {
		t.Parallel()
		plan := compute(t, input(t, v2.obj(), pods(running("a"))...))
		if len(plan.Resizes) != 0 || len(plan.NotUpgradable) != 1 {
			t.Errorf("resizes %v, not upgradable %v", resizedNames(plan.Resizes), plan.NotUpgradable)
		}
		if got := decisionOf(plan, "a"); got.Detail != "the revision it runs is no longer recorded" {
			t.Errorf("decision %+v", got)
		}
	})
}

func findCondition(conds []metav1.Condition, t string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

func decisionOf(plan Plan, pod string) Decision {
	for _, d := range plan.Decisions {
		if d.Pod.Name == pod {
			return d
		}
	}
	return Decision{}
}
