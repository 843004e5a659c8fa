package v1beta1

import (
	"github.com/distribution/reference"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// DefaultRevisionHistoryLimit is the default number of kept revisions.
const DefaultRevisionHistoryLimit int32 = 10

// SetDefaults fills in the defaults of a SidecarSet in place, exactly as
// OpenKruise's SidecarSet mutating webhook does. The container defaults are
// part of the SidecarSet hash, so they must match bit for bit: a pod injected
// by OpenKruise then looks up to date to this operator and vice versa.
func SetDefaults(s *SidecarSet) {
	spec := &s.Spec
	if spec.UpdateStrategy.Type == "" {
		spec.UpdateStrategy.Type = RollingUpdateSidecarSetStrategyType
	}
	if spec.UpdateStrategy.MaxUnavailable == nil {
		v := intstr.FromInt32(1)
		spec.UpdateStrategy.MaxUnavailable = &v
	}
	if spec.UpdateStrategy.Partition == nil {
		v := intstr.FromInt32(0)
		spec.UpdateStrategy.Partition = &v
	}
	for i := range spec.InitContainers {
		setSidecarContainerDefaults(&spec.InitContainers[i], AfterAppContainerType)
	}
	for i := range spec.Containers {
		setSidecarContainerDefaults(&spec.Containers[i], BeforeAppContainerType)
	}
	SetVolumeDefaults(spec.Volumes)
	if spec.RevisionHistoryLimit == nil {
		v := DefaultRevisionHistoryLimit
		spec.RevisionHistoryLimit = &v
	}
	for i := range spec.PatchPodMetadata {
		if spec.PatchPodMetadata[i].PatchPolicy == "" {
			spec.PatchPodMetadata[i].PatchPolicy = SidecarSetRetainPatchPolicy
		}
	}
	if r := spec.InjectionStrategy.Revision; r != nil && r.Policy == "" {
		r.Policy = AlwaysSidecarSetInjectRevisionPolicy
	}
}

func setSidecarContainerDefaults(c *SidecarContainer, policy PodInjectPolicyType) {
	if c.PodInjectPolicy == "" {
		c.PodInjectPolicy = policy
	}
	if c.UpgradeStrategy.UpgradeType == "" {
		c.UpgradeStrategy.UpgradeType = SidecarContainerColdUpgrade
	}
	if c.ShareVolumePolicy.Type == "" {
		c.ShareVolumePolicy.Type = ShareVolumePolicyDisabled
	}
	for i := range c.TransferEnv {
		if from := c.TransferEnv[i].SourceContainerNameFrom; from != nil {
			setFieldSelectorDefaults(from.FieldRef)
		}
	}
	setContainerDefaults(&c.Container)
}

// setContainerDefaults applies the subset of the Kubernetes core/v1 container
// defaults that OpenKruise applies to sidecars (and that the hash covers):
// pull policy, termination message, port protocol, env field refs, resource
// rounding, liveness and readiness probes, and lifecycle HTTP handlers.
func setContainerDefaults(c *corev1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = DefaultPullPolicy(c.Image)
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
	for i := range c.Env {
		if from := c.Env[i].ValueFrom; from != nil {
			setFieldSelectorDefaults(from.FieldRef)
		}
	}
	roundUpToMilli(c.Resources.Limits)
	roundUpToMilli(c.Resources.Requests)
	setProbeDefaults(c.LivenessProbe)
	setProbeDefaults(c.ReadinessProbe)
	if c.Lifecycle != nil {
		if c.Lifecycle.PostStart != nil {
			setHTTPGetDefaults(c.Lifecycle.PostStart.HTTPGet)
		}
		if c.Lifecycle.PreStop != nil {
			setHTTPGetDefaults(c.Lifecycle.PreStop.HTTPGet)
		}
	}
}

// DefaultPullPolicy is the Kubernetes default image pull policy: Always for
// an image without a tag or tagged latest, IfNotPresent otherwise (including
// digest-pinned and unparsable references).
func DefaultPullPolicy(image string) corev1.PullPolicy {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return corev1.PullIfNotPresent
	}
	tagged, hasTag := named.(reference.Tagged)
	_, hasDigest := named.(reference.Digested)
	if (hasTag && tagged.Tag() == "latest") || (!hasTag && !hasDigest) {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

func setFieldSelectorDefaults(f *corev1.ObjectFieldSelector) {
	if f != nil && f.APIVersion == "" {
		f.APIVersion = "v1"
	}
}

func roundUpToMilli(list corev1.ResourceList) {
	for name, q := range list {
		q.RoundUp(-3)
		list[name] = q
	}
}

func setProbeDefaults(p *corev1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	setHTTPGetDefaults(p.HTTPGet)
}

func setHTTPGetDefaults(h *corev1.HTTPGetAction) {
	if h == nil {
		return
	}
	if h.Path == "" {
		h.Path = "/"
	}
	if h.Scheme == "" {
		h.Scheme = corev1.URISchemeHTTP
	}
}

// SetVolumeDefaults applies the Kubernetes core/v1 volume defaults, so that
// two SidecarSets declaring the same volume compare equal whether or not one
// of them spelled the defaults out.
func SetVolumeDefaults(volumes []corev1.Volume) {
	const defaultMode int32 = 0o644
	for i := range volumes {
		src := &volumes[i].VolumeSource
		if isEmptyVolumeSource(src) {
			src.EmptyDir = &corev1.EmptyDirVolumeSource{}
		}
		if src.HostPath != nil && src.HostPath.Type == nil {
			t := corev1.HostPathUnset
			src.HostPath.Type = &t
		}
		if src.Secret != nil && src.Secret.DefaultMode == nil {
			m := defaultMode
			src.Secret.DefaultMode = &m
		}
		if src.ConfigMap != nil && src.ConfigMap.DefaultMode == nil {
			m := defaultMode
			src.ConfigMap.DefaultMode = &m
		}
		if d := src.DownwardAPI; d != nil {
			if d.DefaultMode == nil {
				m := defaultMode
				d.DefaultMode = &m
			}
			for j := range d.Items {
				setFieldSelectorDefaults(d.Items[j].FieldRef)
			}
		}
		if p := src.Projected; p != nil {
			if p.DefaultMode == nil {
				m := defaultMode
				p.DefaultMode = &m
			}
			for j := range p.Sources {
				if d := p.Sources[j].DownwardAPI; d != nil {
					for k := range d.Items {
						setFieldSelectorDefaults(d.Items[k].FieldRef)
					}
				}
				if t := p.Sources[j].ServiceAccountToken; t != nil && t.ExpirationSeconds == nil {
					e := int64(3600)
					t.ExpirationSeconds = &e
				}
			}
		}
	}
}

func isEmptyVolumeSource(s *corev1.VolumeSource) bool {
	return *s == corev1.VolumeSource{}
}
