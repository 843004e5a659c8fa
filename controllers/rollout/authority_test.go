package rollout

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/policy/authority"
)

// Issue 22, the in-place upgrade: an author without inject-secrets changes
// the image of a sidecar that was given a Secret of the pod at injection
// (under the former author's authority). The new image would read it: the
// pod is not upgraded, and is reported; a pod whose sidecar reaches nothing
// beyond the new authority is upgraded.
func TestPlan_UpgradesOnlyWhatTheAuthorityCovers(t *testing.T) {
	t.Parallel()
	v1 := makeSet("s").cold("agent", "agent:1")
	v2 := v1.clone().image("agent", "agent:2").maxUnavailable(intstr.FromString("100%"))
	v2.Annotations = map[string]string{authority.Annotation: authority.VerbAllNamespaces}
	secretReach := makePod("secret").injected(t, v1.obj()).annotation(appsv1beta1.ReachAnnotation, `{"s":"inject-secrets"}`)
	plain := makePod("plain").injected(t, v1.obj()).annotation(appsv1beta1.ReachAnnotation, `{"s":""}`)
	unrecorded := makePod("unrecorded").injected(t, v1.obj())
	plan := compute(t, input(t, v2.obj(), pods(secretReach, plain, unrecorded)...))
	if diff := cmp.Diff([]string{"plain"}, updatedNames(plan.Updates)); diff != "" {
		t.Errorf("updates (-want +got):\n%s", diff)
	}
	blocked := map[string]string{}
	for _, b := range plan.Blocked {
		blocked[b.Pod.Name] = b.Reason
	}
	if !strings.Contains(blocked["secret"], "needs inject-secrets in this pod") {
		t.Errorf("the pod whose sidecar reaches a Secret: %q", blocked["secret"])
	}
	if !strings.Contains(blocked["unrecorded"], "does not record what SidecarSet") {
		t.Errorf("the pod without a record: %q", blocked["unrecorded"])
	}
	// The condition names the authority among the causes of blocked pods.
	if c := meta.FindStatusCondition(plan.Status.Conditions, appsv1beta1.SidecarSetConditionProgressing); c == nil ||
		!strings.Contains(c.Message, "2 pods cannot be patched") || !strings.Contains(c.Message, "authority") {
		t.Errorf("Progressing: %+v", c)
	}

	// Under a SidecarSet without a record (written before the operator), or
	// whose author held every verb, every pod is upgraded.
	v2.Annotations[authority.Annotation] = authority.Format(authority.All)
	plan = compute(t, input(t, v2.obj(), pods(secretReach, plain, unrecorded)...))
	if len(plan.Updates) != 3 || len(plan.Blocked) != 0 {
		t.Errorf("under every verb: %d updates, blocked %v", len(plan.Updates), plan.Blocked)
	}
}
