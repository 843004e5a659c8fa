package inject

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/sidecarset-operator/sidecarset-operator/api/match"
	"github.com/sidecarset-operator/sidecarset-operator/api/resources"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// version is the version of a SidecarSet chosen for a pod: the live object
// or a pinned revision.
type version struct {
	// name is the SidecarSet's name.
	name string
	// origin is the live SidecarSet (its failure policy applies).
	origin *appsv1beta1.SidecarSet
	// set is the selected object (live, or restored from the revision).
	set *appsv1beta1.SidecarSet
	// hashes are the hashes of set's spec.
	hashes appsv1beta1.Hashes
	// controllerRevision is recorded in the pod's hash annotation.
	controllerRevision string
	// resources are set's compiled resourcesPolicies.
	resources resources.Policies
}

// orderCandidates returns the candidates sorted by SidecarSet name, so that
// injection does not depend on the cache's iteration order. A SidecarSet
// listed twice (it can be indexed under several namespaces) is kept once.
func orderCandidates(in []Candidate) ([]*Candidate, error) {
	out := make([]*Candidate, 0, len(in))
	for i := range in {
		if in[i].SidecarSet == nil {
			return nil, fmt.Errorf("candidate %d has no SidecarSet", i)
		}
		out = append(out, &in[i])
	}
	slices.SortStableFunc(out, func(a, b *Candidate) int {
		return strings.Compare(a.SidecarSet.Name, b.SidecarSet.Name)
	})
	return slices.CompactFunc(out, func(a, b *Candidate) bool {
		return a.SidecarSet.Name == b.SidecarSet.Name
	}), nil
}

// undecided is a candidate whose namespaceSelector cannot be evaluated
// because the namespace's labels could not be read, and why.
type undecided struct {
	c       *Candidate
	message string
}

// matchCandidates splits the candidates by match.Applicable's verdict:
// those that apply to the pod, those that do not (with the reason), and
// those that cannot be decided. It also returns the pod's recorded
// SidecarSet state, decoded.
func matchCandidates(cands []*Candidate, pod *corev1.Pod, ns Namespace) (matched []*Candidate, skips []Skip, unknown []undecided, state podState, stateErr error) {
	in := make([]match.Candidate, len(cands))
	for i, c := range cands {
		in[i] = match.Candidate{SidecarSet: c.SidecarSet, Selector: c.Selector}
	}
	a := match.Applicable(pod, match.PodNamespace{Name: ns.Name, Labels: ns.Labels, UID: ns.UID, LabelsError: ns.LabelsError}, in)
	for i, c := range cands {
		switch v := a.Verdicts[i]; v.Reason { // one verdict per candidate, in order
		case "":
			matched = append(matched, c)
		case match.ReasonNamespaceLabelsUnknown:
			unknown = append(unknown, undecided{c: c, message: v.Message})
		default:
			skips = append(skips, Skip{SidecarSet: c.SidecarSet.Name, Reason: v.Reason, Message: v.Message})
		}
	}
	state, stateErr = stateOf(a.Recorded, a.RecordedError)
	return matched, skips, unknown, state, stateErr
}

// identityWarnings tells the user creating the pod which SidecarSets that
// select it are left out because an object they were written for was
// deleted and created again (their namespace, a canary's base): someone
// may want to write them again, or delete them.
func identityWarnings(skips []Skip) []string {
	var warnings []string
	for _, s := range skips {
		if s.Reason == ReasonNamespaceReplaced || s.Reason == ReasonCanaryBaseReplaced {
			warnings = append(warnings, fmt.Sprintf("SidecarSet %q is not injected: %s", s.SidecarSet, s.Message))
		}
	}
	return warnings
}

// chooseVersion picks the version of a matched SidecarSet to inject: the
// live object, unless spec.injectionStrategy.revision pins a revision and
// the policy sends this pod to it.
func chooseVersion(c *Candidate, podLabels map[string]string, coin float64) (*version, error) {
	s := c.SidecarSet
	live := &version{name: s.Name, origin: s, set: s, hashes: c.Hashes, controllerRevision: s.Status.LatestRevision,
		resources: c.Resources}
	pin := s.Spec.InjectionStrategy.Revision
	if pin == nil || (pin.RevisionName == nil && pin.CustomVersion == nil) {
		return live, nil
	}
	if c.PinnedError != nil || c.Pinned == nil || c.Pinned.SidecarSet == nil {
		return nil, pinError(s.Name, pin, c.PinnedError)
	}
	history, err := useHistory(s, pin, podLabels, coin)
	if err != nil || !history {
		return live, err
	}
	rev := c.Pinned.RevisionName
	if rev == "" {
		rev = c.Pinned.SidecarSet.Status.LatestRevision
	}
	return &version{name: s.Name, origin: s, set: c.Pinned.SidecarSet, hashes: c.Pinned.Hashes, controllerRevision: rev,
		resources: c.Pinned.Resources}, nil
}

// useHistory reports whether the pinned revision, rather than the latest
// spec, is injected into a pod.
//
//   - updateStrategy.paused: always the pinned revision.
//   - policy Always: always the pinned revision.
//   - policy Partial: the pinned revision for pods outside
//     updateStrategy.selector; otherwise, with a percentage partition p%, the
//     pinned revision with probability p (0% never, 100% always), and with
//     an integer partition the latest.
func useHistory(s *appsv1beta1.SidecarSet, pin *appsv1beta1.SidecarSetInjectRevision, podLabels map[string]string, coin float64) (bool, error) {
	us := s.Spec.UpdateStrategy
	if us.Paused || pin.Policy != appsv1beta1.PartialSidecarSetInjectRevisionPolicy {
		return true, nil
	}
	if us.Selector != nil {
		ok, err := match.Selects(us.Selector, podLabels)
		if err != nil {
			return false, fmt.Errorf("SidecarSet %q: updateStrategy.selector: %w", s.Name, err)
		}
		if !ok {
			return true, nil
		}
	}
	if us.Partition == nil || us.Partition.Type == intstr.Int {
		return false, nil
	}
	pct, err := appsv1beta1.ParsePercent(us.Partition.StrVal)
	if err != nil {
		return false, fmt.Errorf("SidecarSet %q: updateStrategy.partition %q: %w", s.Name, us.Partition.StrVal, err)
	}
	return coin < float64(pct)/100, nil
}

// pinError is the denial of a pod whose SidecarSet pins a revision that the
// shell could not resolve. It wraps the shell's error.
func pinError(name string, pin *appsv1beta1.SidecarSetInjectRevision, err error) error {
	what := ""
	if pin.RevisionName != nil {
		what = fmt.Sprintf("revisionName %q", *pin.RevisionName)
	} else {
		what = fmt.Sprintf("customVersion %q", *pin.CustomVersion)
	}
	prefix := fmt.Sprintf("SidecarSet %q: injectionStrategy.revision %s", name, what)
	switch {
	case err == nil:
		return &pinnedRevisionError{msg: prefix + " was not resolved; pods matching it cannot be created until it is"}
	case apierrors.IsNotFound(err):
		return &pinnedRevisionError{err: err, msg: prefix +
			" not found; pods matching it cannot be created until it exists or the pin is removed"}
	default:
		return &pinnedRevisionError{err: err, msg: fmt.Sprintf("%s cannot be resolved (%v); "+
			"pods matching it cannot be created until it can or the pin is removed", prefix, err)}
	}
}

// pinnedRevisionError is a pinned revision that could not be resolved.
type pinnedRevisionError struct {
	msg string
	err error
}

func (e *pinnedRevisionError) Error() string { return e.msg }
func (e *pinnedRevisionError) Unwrap() error { return e.err }
