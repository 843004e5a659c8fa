package rollout

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// upgradableButPullPolicy reports whether the pod's recorded without-image
// hash is the SidecarSet's once every sidecar whose imagePullPolicy is the
// default for its image takes the pull policy the pod's container has. A
// manifest that omits imagePullPolicy gets it from the tag, so a full
// replace that moves an image to or from :latest changes the without-image
// hash although only the image changed (OpenKruise's 4.1 #2); the pod keeps
// its own pull policy, which Kubernetes does not let change in place.
// OpenKruise pods are compared to their recorded hashes as they are.
func (s *setView) upgradableButPullPolicy(pod *corev1.Pod, state podstate.State) bool {
	recorded := state.HashesWithoutImage[s.name].Hash
	if recorded == "" {
		return false
	}
	policies := map[string]corev1.PullPolicy{}
	hash, substituted, err := appsv1beta1.WithoutImageHashWithPullPolicies(&s.obj.Spec, func(name string) (corev1.PullPolicy, bool) {
		c := podContainer(pod, s.podName(name))
		if c == nil {
			return "", false
		}
		policies[name] = c.ImagePullPolicy
		return c.ImagePullPolicy, true
	})
	if err != nil || !substituted {
		return false
	}
	key := policyKey(policies)
	if cached, ok := s.pullPolicyHashes[key]; ok {
		return cached == recorded
	}
	if s.pullPolicyHashes == nil {
		s.pullPolicyHashes = map[string]string{}
	}
	s.pullPolicyHashes[key] = hash
	return hash == recorded
}

// podName is the name of a sidecar's container in a pod: the first twin
// of a hot-upgrade sidecar (both twins have its pull policy).
func (s *setView) podName(sidecar string) string {
	for _, h := range s.hot {
		if h.name == sidecar {
			return h.twin1
		}
	}
	return sidecar
}

// podContainer returns a pod's container or init container by name.
func podContainer(pod *corev1.Pod, name string) *corev1.Container {
	for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		if i := slices.IndexFunc(list, func(c corev1.Container) bool { return c.Name == name }); i >= 0 {
			return &list[i]
		}
	}
	return nil
}

// policyKey identifies a set of pull policies by sidecar name (container
// names cannot hold '=' or ';').
func policyKey(policies map[string]corev1.PullPolicy) string {
	names := make([]string, 0, len(policies))
	for n := range policies {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, n := range names {
		b.WriteString(n)
		b.WriteByte('=')
		b.WriteString(string(policies[n]))
		b.WriteByte(';')
	}
	return b.String()
}
