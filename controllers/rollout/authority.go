package rollout

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	"github.com/sidecarset-operator/sidecarset-operator/policy/authority"
)

// checkAuthority says why a pod's sidecars may not be upgraded in place
// under the SidecarSet's current authority, or nil. An in-place upgrade
// swaps images, and the new image runs with what the sidecar was given at
// injection (a Secret of the pod mounted by name, the pod's token): the
// authority recorded on the SidecarSet by its last author must still cover
// it. The injector recorded that reach on the pod (ReachAnnotation); a pod
// without the record (injected by OpenKruise or before it existed) is
// upgraded only under every verb (a SidecarSet without a record, or whose
// author held every verb).
func (s *setView) checkAuthority(pod *corev1.Pod) error {
	have := s.authority
	if have == authority.All {
		return nil
	}
	reach, ok := podstate.DecodeReach(pod.Annotations)
	recorded, known := reach[s.name]
	if !ok || !known {
		return fmt.Errorf("the pod does not record what SidecarSet %q's sidecars reach in it (injected before this operator recorded it), "+
			"and the SidecarSet's authority (%s, from its last author) does not hold every verb: "+
			"it is not upgraded in place; recreate the pod to inject it under the current authority", s.name, have)
	}
	verbs, err := authority.Parse(recorded)
	if err != nil {
		return fmt.Errorf("the pod's record of what SidecarSet %q's sidecars reach cannot be read (%w): it is not upgraded in place", s.name, err)
	}
	if missing := have.Missing(verbs); missing != authority.None {
		return fmt.Errorf("SidecarSet %q's sidecars reach what needs %s in this pod (recorded at injection), which the SidecarSet's authority "+
			"(%s, from its last author) does not hold: they are not upgraded in place; recreate the pod to inject it under the current authority",
			s.name, missing, have)
	}
	return nil
}
