package inject

import (
	"fmt"
	"maps"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/policy/podmeta"
)

// podState is the SidecarSet state of a pod, as injection needs it.
type podState struct {
	hashes             podstate.Hashes
	hashesWithoutImage podstate.Hashes
	injected           []string
	working            map[string]string
}

// stateOf keeps what injection needs of the pod's decoded SidecarSet
// state (match.Applicability.Recorded); a state that cannot be decoded
// fails every SidecarSet that applies to the pod.
func stateOf(s podstate.State, err error) (podState, error) {
	if err != nil {
		return podState{}, fmt.Errorf("pod %w; fix or remove it to create the pod", err)
	}
	return podState{hashes: s.Hashes, hashesWithoutImage: s.HashesWithoutImage, injected: s.Injected, working: s.WorkingHotUpgrade}, nil
}

// lists reports whether the pod's annotations already record a SidecarSet:
// it was injected before (a webhook re-invocation, or a pod created from an
// injected pod's manifest), and injecting it again would duplicate it.
func (s podState) lists(name string) bool {
	if _, ok := s.hashes[name]; ok {
		return true
	}
	if _, ok := s.hashesWithoutImage[name]; ok {
		return true
	}
	return slices.Contains(s.injected, name)
}

// patchMetadata applies a SidecarSet version's patchPodMetadata to the
// annotations, in place, under the rule the controller applies at upgrade
// (policy/podmeta): keys holding SidecarSet state, and keys the whitelist
// in force does not allow, are not written, and a warning says so.
func patchMetadata(v *version, annotations map[string]string, w podmeta.Whitelist) ([]string, error) {
	res, err := podmeta.Apply(annotations, v.set, w)
	if err != nil {
		return nil, fmt.Errorf("SidecarSet %q: patchPodMetadata: %w", v.name, err)
	}
	maps.Copy(annotations, res.Changed)
	warnings := make([]string, 0, len(res.Skipped))
	for _, skip := range res.Skipped {
		warnings = append(warnings, skip.Warning(v.name))
	}
	return warnings, nil
}

// recordInjection writes, for the SidecarSets that injected something, the
// hash and hash-without-image entries and the hot-upgrade annotations, and
// adds the listed SidecarSets to the injected-list. Entries of other
// SidecarSets are kept (legacy ones are rewritten in the current format).
func recordInjection(annotations map[string]string, s podState, plans []*plan, listed []string, now metav1.Time) {
	hotUpgrade := false
	for _, p := range plans {
		if p.empty() {
			continue
		}
		entry, withoutImage := podstate.Version{
			SidecarSet:         p.v.name,
			Hashes:             p.v.hashes,
			SidecarList:        p.sidecarList,
			ControllerRevision: p.v.controllerRevision,
		}.Entries(now.Time)
		s.hashes[p.v.name] = entry
		s.hashesWithoutImage[p.v.name] = withoutImage
		for _, base := range p.hotUpgrade {
			recordHotUpgrade(annotations, s.working, base)
			hotUpgrade = true
		}
	}
	annotations[appsv1beta1.SidecarSetHashAnnotation] = s.hashes.Encode()
	annotations[appsv1beta1.SidecarSetHashWithoutImageAnnotation] = s.hashesWithoutImage.Encode()
	annotations[appsv1beta1.SidecarSetListAnnotation] = podstate.EncodeInjectedList(append(slices.Clone(s.injected), listed...))
	if hotUpgrade {
		annotations[appsv1beta1.WorkingHotUpgradeContainerAnnotation] = podstate.EncodeStringMap(s.working)
	}
}
