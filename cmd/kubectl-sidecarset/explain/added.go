package explain

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/sidecarset-operator/sidecarset-operator/api/match"
	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/inject"
)

// Added is what injection adds to the pod, read from the injected pod.
type Added struct {
	// InitContainers are the init containers added, in pod order.
	InitContainers []Container `json:"initContainers,omitempty"`
	// Containers are the containers added, in pod order.
	Containers []Container `json:"containers,omitempty"`
	// Changed are the pod's own containers that injection changed.
	Changed []string `json:"changed,omitempty"`
	// Volumes are the names of the volumes added.
	Volumes []string `json:"volumes,omitempty"`
	// ImagePullSecrets are the names of the pull secrets added.
	ImagePullSecrets []string `json:"imagePullSecrets,omitempty"`
	// Annotations are the annotation keys added or changed, sorted.
	Annotations []string `json:"annotations,omitempty"`
}

// Container is an injected container.
type Container struct {
	// Name of the container.
	Name string `json:"name"`
	// Image of the container.
	Image string `json:"image"`
	// SidecarSet that injects it.
	SidecarSet string `json:"sidecarSet"`
	// Init is set for an init container.
	Init bool `json:"init,omitempty"`
}

// attribute maps the name of each container the injected SidecarSets
// define (hot-upgrade sidecars by their twins' names) to its SidecarSet.
func attribute(in Input) map[string]string {
	out := map[string]string{}
	for _, c := range in.Injection.Candidates {
		if !slices.Contains(in.Output.Injected, c.SidecarSet.Name) {
			continue
		}
		specs := []*appsv1beta1.SidecarSetSpec{&c.SidecarSet.Spec}
		if c.Pinned != nil && c.Pinned.SidecarSet != nil {
			specs = append(specs, &c.Pinned.SidecarSet.Spec)
		}
		for _, spec := range specs {
			for _, list := range [][]appsv1beta1.SidecarContainer{spec.InitContainers, spec.Containers} {
				for i := range list {
					name := list[i].Name
					out[name] = c.SidecarSet.Name
					working, idle := appsv1beta1.HotUpgradeTwins(name)
					out[working], out[idle] = c.SidecarSet.Name, c.SidecarSet.Name
				}
			}
		}
	}
	return out
}

// added compares the pod with the injected pod.
func added(before, after *corev1.Pod, attribution map[string]string) Added {
	var a Added
	a.InitContainers, a.Changed = newContainers(before.Spec.InitContainers, after.Spec.InitContainers, attribution, true, a.Changed)
	a.Containers, a.Changed = newContainers(before.Spec.Containers, after.Spec.Containers, attribution, false, a.Changed)
	for _, v := range after.Spec.Volumes {
		if !slices.ContainsFunc(before.Spec.Volumes, func(o corev1.Volume) bool { return o.Name == v.Name }) {
			a.Volumes = append(a.Volumes, v.Name)
		}
	}
	for _, s := range after.Spec.ImagePullSecrets {
		if !slices.Contains(before.Spec.ImagePullSecrets, s) {
			a.ImagePullSecrets = append(a.ImagePullSecrets, s.Name)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(after.Annotations)) {
		if old, ok := before.Annotations[k]; !ok || old != after.Annotations[k] {
			a.Annotations = append(a.Annotations, k)
		}
	}
	return a
}

func newContainers(before, after []corev1.Container, attribution map[string]string, init bool, changed []string) ([]Container, []string) {
	var out []Container
	for i := range after {
		c := &after[i]
		j := slices.IndexFunc(before, func(o corev1.Container) bool { return o.Name == c.Name })
		if j < 0 {
			out = append(out, Container{Name: c.Name, Image: c.Image, SidecarSet: attribution[c.Name], Init: init})
			continue
		}
		if !equality.Semantic.DeepEqual(&before[j], c) {
			changed = append(changed, c.Name)
		}
	}
	return out, changed
}

// containersOf are the added containers of one SidecarSet.
func containersOf(a Added, name string) []Container {
	var out []Container
	for _, list := range [][]Container{a.InitContainers, a.Containers} {
		for _, c := range list {
			if c.SidecarSet == name {
				out = append(out, c)
			}
		}
	}
	return out
}

// injectedVersion names the version of an injected SidecarSet, from the hash
// annotation the injector wrote.
func injectedVersion(injected *corev1.Pod, c *inject.Candidate) string {
	if injected == nil {
		return ""
	}
	hashes, err := podstate.DecodeHashes(injected.Annotations[appsv1beta1.SidecarSetHashAnnotation])
	if err != nil {
		return ""
	}
	e, ok := hashes[c.SidecarSet.Name]
	if !ok {
		return ""
	}
	rev := ""
	if e.ControllerRevision != "" {
		rev = ", ControllerRevision " + e.ControllerRevision
	}
	if e.Hash != c.Hashes.Hash && c.Pinned != nil {
		return "pinned by injectionStrategy.revision (hash " + e.Hash + rev + ")"
	}
	return "latest spec (hash " + e.Hash + rev + ")"
}

// formatSelector shows a label selector as kubectl does.
func formatSelector(sel *metav1.LabelSelector) string {
	if match.IsEmpty(sel) {
		return "none (selects no pod)"
	}
	return metav1.FormatLabelSelector(sel)
}

// namespaceSelection shows how a SidecarSet selects namespaces.
func namespaceSelection(s *appsv1beta1.SidecarSet) string {
	if ns := match.IndexValues(s); len(ns) == 1 && ns[0] != match.ClusterScope && !match.NeedsNamespaceLabels(s) {
		return "namespace: " + ns[0]
	}
	if s.Spec.NamespaceSelector != nil {
		return "namespaceSelector: " + metav1.FormatLabelSelector(s.Spec.NamespaceSelector)
	}
	return "every namespace"
}

// notes are facts about the decision that a reader may need.
func notes(in Input) []string {
	var out []string
	for _, c := range in.Injection.Candidates {
		s := c.SidecarSet
		pin := s.Spec.InjectionStrategy.Revision
		p := s.Spec.UpdateStrategy.Partition
		if !slices.Contains(in.Output.Injected, s.Name) || pin == nil || pin.Policy != appsv1beta1.PartialSidecarSetInjectRevisionPolicy ||
			s.Spec.UpdateStrategy.Paused || p == nil || p.Type != intstr.String {
			continue
		}
		out = append(out, fmt.Sprintf("SidecarSet %q pins a revision with policy Partial and partition %s: the webhook draws the version "+
			"of each pod at random; this answer used the coin %.2f (--partition-coin)", s.Name, p.StrVal, in.Injection.Rand))
	}
	return out
}

// Recorded is what an existing pod's annotations record.
type Recorded struct {
	// Error is set when the annotations do not decode.
	Error string `json:"error,omitempty"`
	// Injected is the kruise.io/sidecarset-injected-list.
	Injected []string `json:"injected,omitempty"`
	// SidecarSets are the entries of the kruise.io/sidecarset-hash
	// annotation, by name.
	SidecarSets []RecordedSidecarSet `json:"sidecarSets,omitempty"`
}

// RecordedSidecarSet is one entry of a pod's hash annotation.
type RecordedSidecarSet struct {
	// Name of the SidecarSet.
	Name string `json:"name"`
	// Hash of the SidecarSet spec the pod's sidecars correspond to.
	Hash string `json:"hash"`
	// ControllerRevision the pod's sidecars come from.
	ControllerRevision string `json:"controllerRevision,omitempty"`
	// Sidecars are the sidecar names recorded.
	Sidecars []string `json:"sidecars,omitempty"`
	// UpdateTimestamp is when the entry was written.
	UpdateTimestamp string `json:"updateTimestamp,omitempty"`
	// Current compares the entry with the SidecarSet as it is now.
	Current string `json:"current"`
}

// recorded decodes an existing pod's SidecarSet annotations.
func recorded(pod *corev1.Pod, cands []inject.Candidate) *Recorded {
	state, err := podstate.Read(pod.Annotations)
	if err != nil {
		return &Recorded{Error: err.Error()}
	}
	r := &Recorded{Injected: state.Injected}
	for _, name := range slices.Sorted(maps.Keys(state.Hashes)) {
		e := state.Hashes[name]
		rs := RecordedSidecarSet{Name: name, Hash: e.Hash, ControllerRevision: e.ControllerRevision, Sidecars: e.SidecarList}
		if !e.UpdateTimestamp.IsZero() {
			rs.UpdateTimestamp = e.UpdateTimestamp.UTC().Format("2006-01-02T15:04:05Z")
		}
		i := slices.IndexFunc(cands, func(c inject.Candidate) bool { return c.SidecarSet.Name == name })
		switch {
		case i < 0:
			rs.Current = "the SidecarSet no longer exists"
		case cands[i].Hashes.Hash == e.Hash:
			rs.Current = "the SidecarSet's current spec"
		default:
			rs.Current = "not the SidecarSet's current spec (hash " + cands[i].Hashes.Hash + "): an upgrade is pending, paused or not wanted"
		}
		r.SidecarSets = append(r.SidecarSets, rs)
	}
	return r
}
