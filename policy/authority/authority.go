// Package authority says what a SidecarSet's sidecars may reach, and what
// permission each part of it needs: the Go side of the authoring policy
// (policy/authoring's ValidatingAdmissionPolicy is its CEL side, checked
// against this package by its tests and against docs/security.md's table).
//
// Three custom verbs on sidecarsets.apps.kruise.io, on top of the right to
// write SidecarSets, bound what a sidecar may do in other people's pods:
//
//   - inject-privileged: anything beyond the Pod Security Standards'
//     baseline level (privileged, added capabilities beyond baseline's,
//     Windows hostProcess, an unmasked /proc, seccomp or AppArmor profiles
//     other than RuntimeDefault, SELinux types and users, host ports, host
//     probes, hostPath volumes);
//   - inject-secrets: anything that reaches data the pod holds on behalf of
//     its owner (Secret references, service-account tokens, claims and
//     network or CSI volumes, copies of the pod's own environment, volumes
//     and devices);
//   - inject-all-namespaces: a reach beyond namespaces named one by one.
//
// Volume types and settings this package does not know need every verb:
// the lists are allow-lists.
//
// The operator records, on each SidecarSet, the verbs its author held when
// it last changed what the SidecarSet injects (Annotation); the injector
// bounds what a sidecar reaches in the real pod by that record.
//
// The package is pure.
package authority

import (
	"fmt"
	"iter"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// Verbs is a set of the custom verbs.
type Verbs uint8

const (
	// Privileged is the verb inject-privileged.
	Privileged Verbs = 1 << iota
	// Secrets is the verb inject-secrets.
	Secrets
	// AllNamespaces is the verb inject-all-namespaces.
	AllNamespaces

	// None is the empty set.
	None Verbs = 0
	// All is every verb.
	All = Privileged | Secrets | AllNamespaces
)

// Verb names, as RBAC rules grant them.
const (
	VerbPrivileged    = "inject-privileged"
	VerbSecrets       = "inject-secrets"
	VerbAllNamespaces = "inject-all-namespaces"
)

var verbNames = []struct {
	verb Verbs
	name string
}{{Privileged, VerbPrivileged}, {Secrets, VerbSecrets}, {AllNamespaces, VerbAllNamespaces}}

// Has reports whether v holds every verb of o.
func (v Verbs) Has(o Verbs) bool { return v&o == o }

// Missing returns the verbs of need that v lacks.
func (v Verbs) Missing(need Verbs) Verbs { return need &^ v }

// Names are the verbs' names, in a fixed order.
func (v Verbs) Names() []string {
	var out []string
	for _, n := range verbNames {
		if v.Has(n.verb) {
			out = append(out, n.name)
		}
	}
	return out
}

// String joins the names with " and ", or says "no verb".
func (v Verbs) String() string {
	if v == None {
		return "no verb"
	}
	return strings.Join(v.Names(), " and ")
}

// Parse reads a comma-separated list of verb names ("" is no verb).
func Parse(s string) (Verbs, error) {
	var v Verbs
	for name := range strings.SplitSeq(s, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		i := slices.IndexFunc(verbNames, func(n struct {
			verb Verbs
			name string
		}) bool {
			return n.name == name
		})
		if i < 0 {
			return None, fmt.Errorf("unknown verb %q", name)
		}
		v |= verbNames[i].verb
	}
	return v, nil
}

// Format writes verbs as Parse reads them.
func Format(v Verbs) string { return strings.Join(v.Names(), ",") }

// Annotation is where the operator records, on a SidecarSet, the verbs its
// author held when it last changed what the SidecarSet injects or where.
// Only the operator's defaulting webhook writes it; a user's write of it is
// refused.
const Annotation = "sidecarset-operator.dev/authority"

// Of returns the verbs a SidecarSet's sidecars act with: its record, or, for
// a SidecarSet with none (written before this operator ran, by OpenKruise
// or an earlier release), every verb: it keeps the behavior it had. A
// record that does not parse grants nothing.
func Of(s *appsv1beta1.SidecarSet) Verbs {
	record, ok := s.Annotations[Annotation]
	if !ok {
		return All
	}
	v, err := Parse(record)
	if err != nil {
		return None
	}
	return v
}

// Need is one part of a SidecarSet, or of a pod it reaches, that needs
// verbs.
type Need struct {
	// Path is the field, as a field path ("spec.volumes[0].hostPath").
	Path string
	// Verbs are the verbs it needs.
	Verbs Verbs
}

// Sum is the union of the needs' verbs.
func Sum(needs []Need) Verbs {
	var v Verbs
	for _, n := range needs {
		v |= n.Verbs
	}
	return v
}

// baselineCapabilities are the capabilities the Pod Security Standards'
// baseline level lets a container add.
var baselineCapabilities = []corev1.Capability{
	"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
	"NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
}

// baselineSELinuxTypes are the SELinux types the baseline level allows.
var baselineSELinuxTypes = []string{"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"}

// localHosts are the hosts a probe or a lifecycle handler may name: the
// pod itself (the baseline level's Host Probes check).
var localHosts = []string{"", "127.0.0.1", "::1", "localhost"}

// ContainerNeeds lists what a sidecar's own definition needs, with paths
// below the container's (".securityContext.privileged"). Volumes it mounts
// are judged where they are defined (VolumeNeeds, InPod).
func ContainerNeeds(c *appsv1beta1.SidecarContainer) []Need {
	out := settingNeeds(&c.Container)
	add := func(path string, v Verbs) { out = append(out, Need{Path: path, Verbs: v}) }
	if len(c.TransferEnv) > 0 {
		add(".transferEnv", Secrets)
	}
	if c.ShareVolumePolicy.Type == appsv1beta1.ShareVolumePolicyEnabled {
		add(".shareVolumePolicy.type", Secrets)
	}
	if p := c.ShareVolumeDevicePolicy; p != nil && p.Type == appsv1beta1.ShareVolumePolicyEnabled {
		add(".shareVolumeDevicePolicy.type", Secrets)
	}
	slices.SortStableFunc(out, func(a, b Need) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// settingNeeds lists what a container's own settings need: its security
// context, host ports and hosts, mount propagation and Secret references.
func settingNeeds(c *corev1.Container) []Need {
	var out []Need
	add := func(path string, v Verbs) { out = append(out, Need{Path: path, Verbs: v}) }
	if sc := c.SecurityContext; sc != nil {
		if sc.Privileged != nil && *sc.Privileged {
			add(".securityContext.privileged", Privileged)
		}
		if caps := sc.Capabilities; caps != nil && slices.ContainsFunc(caps.Add, func(c corev1.Capability) bool {
			return !slices.Contains(baselineCapabilities, c)
		}) {
			add(".securityContext.capabilities.add", Privileged)
		}
		if w := sc.WindowsOptions; w != nil {
			if w.HostProcess != nil && *w.HostProcess {
				add(".securityContext.windowsOptions.hostProcess", Privileged)
			}
			if w.GMSACredentialSpec != nil || w.GMSACredentialSpecName != nil {
				add(".securityContext.windowsOptions.gmsaCredentialSpec", Secrets)
			}
		}
		if sc.ProcMount != nil && *sc.ProcMount != corev1.DefaultProcMount {
			add(".securityContext.procMount", Privileged)
		}
		if p := sc.SeccompProfile; p != nil && p.Type != corev1.SeccompProfileTypeRuntimeDefault {
			add(".securityContext.seccompProfile.type", Privileged)
		}
		if p := sc.AppArmorProfile; p != nil && p.Type != corev1.AppArmorProfileTypeRuntimeDefault {
			add(".securityContext.appArmorProfile.type", Privileged)
		}
		if o := sc.SELinuxOptions; o != nil && (o.User != "" || o.Role != "" || !slices.Contains(baselineSELinuxTypes, o.Type)) {
			add(".securityContext.seLinuxOptions", Privileged)
		}
	}
	for i, p := range c.Ports {
		if p.HostPort != 0 {
			add(fmt.Sprintf(".ports[%d].hostPort", i), Privileged)
		}
	}
	for path, h := range handlers(c) {
		if h.HTTPGet != nil && !slices.Contains(localHosts, h.HTTPGet.Host) {
			add(path+".httpGet.host", Privileged)
		}
		if h.TCPSocket != nil && !slices.Contains(localHosts, h.TCPSocket.Host) {
			add(path+".tcpSocket.host", Privileged)
		}
	}
	for i, m := range c.VolumeMounts {
		if m.MountPropagation != nil && *m.MountPropagation == corev1.MountPropagationBidirectional {
			add(fmt.Sprintf(".volumeMounts[%d].mountPropagation", i), Privileged)
		}
	}
	for i, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			add(fmt.Sprintf(".env[%d].valueFrom.secretKeyRef", i), Secrets)
		}
	}
	for i, e := range c.EnvFrom {
		if e.SecretRef != nil {
			add(fmt.Sprintf(".envFrom[%d].secretRef", i), Secrets)
		}
	}
	// A resource claim names one of the pod's claims (DRA devices: GPUs,
	// NICs): what the pod holds for its owner, as its volumes' devices are.
	if len(c.Resources.Claims) > 0 {
		add(".resources.claims", Secrets)
	}
	return out
}

// handlers yields a container's probe and lifecycle handlers by path, in a
// fixed order.
func handlers(c *corev1.Container) iter.Seq2[string, corev1.ProbeHandler] {
	return func(yield func(string, corev1.ProbeHandler) bool) {
		for _, p := range []struct {
			path  string
			probe *corev1.Probe
		}{{".livenessProbe", c.LivenessProbe}, {".readinessProbe", c.ReadinessProbe}, {".startupProbe", c.StartupProbe}} {
			if p.probe != nil && !yield(p.path, p.probe.ProbeHandler) {
				return
			}
		}
		l := c.Lifecycle
		if l == nil {
			return
		}
		for _, h := range []struct {
			path    string
			handler *corev1.LifecycleHandler
		}{{".lifecycle.postStart", l.PostStart}, {".lifecycle.preStop", l.PreStop}} {
			if h.handler != nil && !yield(h.path, corev1.ProbeHandler{HTTPGet: h.handler.HTTPGet, TCPSocket: h.handler.TCPSocket}) {
				return
			}
		}
	}
}

// VolumeNeeds says what a volume needs, and which of its fields: none for
// emptyDir, configMap, downwardAPI, image and projected volumes of
// configMaps, downwardAPI and clusterTrustBundles; inject-secrets for
// Secrets, projected Secrets and service-account tokens, claims
// (persistentVolumeClaim, ephemeral), CSI and network storage;
// inject-privileged for hostPath; both for flexVolume, gitRepo and any
// other type.
func VolumeNeeds(v *corev1.Volume) (string, Verbs) {
	s := &v.VolumeSource
	switch {
	case s.EmptyDir != nil:
		return "emptyDir", None
	case s.ConfigMap != nil:
		return "configMap", None
	case s.DownwardAPI != nil:
		return "downwardAPI", None
	case s.Image != nil:
		return "image", None
	case s.Projected != nil:
		for _, src := range s.Projected.Sources {
			if src.Secret != nil || src.ServiceAccountToken != nil || src.PodCertificate != nil {
				return "projected", Secrets
			}
			if src.ConfigMap == nil && src.DownwardAPI == nil && src.ClusterTrustBundle == nil {
				return "projected", All &^ AllNamespaces
			}
		}
		return "projected", None
	case s.HostPath != nil:
		return "hostPath", Privileged
	case s.FlexVolume != nil:
		return "flexVolume", Privileged | Secrets
	case s.GitRepo != nil:
		return "gitRepo", Privileged | Secrets
	}
	if kind := storageKind(s); kind != "" {
		return kind, Secrets
	}
	return "volume", Privileged | Secrets
}

// storageKind names the claim, CSI, Secret and network storage types: the
// data they hold belongs to the pod's owner.
func storageKind(s *corev1.VolumeSource) string {
	kinds := []struct {
		set  bool
		name string
	}{
		{s.Secret != nil, "secret"},
		{s.PersistentVolumeClaim != nil, "persistentVolumeClaim"},
		{s.Ephemeral != nil, "ephemeral"},
		{s.CSI != nil, "csi"},
		{s.NFS != nil, "nfs"},
		{s.ISCSI != nil, "iscsi"},
		{s.RBD != nil, "rbd"},
		{s.CephFS != nil, "cephfs"},
		{s.Glusterfs != nil, "glusterfs"},
		{s.FC != nil, "fc"},
		{s.AzureFile != nil, "azureFile"},
		{s.AzureDisk != nil, "azureDisk"},
		{s.AWSElasticBlockStore != nil, "awsElasticBlockStore"},
		{s.GCEPersistentDisk != nil, "gcePersistentDisk"},
		{s.Cinder != nil, "cinder"},
		{s.PortworxVolume != nil, "portworxVolume"},
		{s.ScaleIO != nil, "scaleIO"},
		{s.StorageOS != nil, "storageos"},
		{s.VsphereVolume != nil, "vsphereVolume"},
		{s.Quobyte != nil, "quobyte"},
		{s.PhotonPersistentDisk != nil, "photonPersistentDisk"},
		{s.Flocker != nil, "flocker"},
	}
	for _, k := range kinds {
		if k.set {
			return k.name
		}
	}
	return ""
}

// SpecNeeds lists what a SidecarSet's own content needs: its sidecars, its
// volumes, and a pinned revision (content the policy cannot see, which
// needs inject-privileged and inject-secrets). The namespaces it reaches are
// judged apart (they need permissions on pods, not a verb).
func SpecNeeds(spec *appsv1beta1.SidecarSetSpec) []Need {
	var out []Need
	for _, list := range []struct {
		path       string
		containers []appsv1beta1.SidecarContainer
	}{{"spec.initContainers", spec.InitContainers}, {"spec.containers", spec.Containers}} {
		for i := range list.containers {
			for _, n := range ContainerNeeds(&list.containers[i]) {
				out = append(out, Need{Path: fmt.Sprintf("%s[%d]%s", list.path, i, n.Path), Verbs: n.Verbs})
			}
		}
	}
	for i := range spec.Volumes {
		if kind, v := VolumeNeeds(&spec.Volumes[i]); v != None {
			out = append(out, Need{Path: fmt.Sprintf("spec.volumes[%d].%s", i, kind), Verbs: v})
		}
	}
	if spec.InjectionStrategy.Revision != nil {
		out = append(out, Need{Path: "spec.injectionStrategy.revision", Verbs: Privileged | Secrets})
	}
	return out
}

// Reach is what a container reaches in a pod through one of its mounts or
// devices: the volume the name resolves to there.
type Reach struct {
	// Mount is the index of the mount in VolumeMounts, or -1.
	Mount int
	// Device is the index of the device in VolumeDevices, or -1.
	Device int
	// Volume is the volume's name, Type its type ("secret").
	Volume, Type string
	// Verbs are what the volume needs.
	Verbs Verbs
}

// InPod lists what a container reaches in a pod whose volumes are given
// (the pod's own, then those injected): each mount and device resolves to
// the volume of its name, whoever defined it (a same-named volume of the
// pod wins over a SidecarSet's, as in OpenKruise), and each reach needs
// that volume's verbs (VolumeNeeds); the first definition of a name counts.
// Mounts of a volume the pod does not have reach nothing.
func InPod(volumes []corev1.Volume, c *corev1.Container) []Reach {
	byName := make(map[string]*corev1.Volume, len(volumes))
	for i := range volumes {
		if _, ok := byName[volumes[i].Name]; !ok {
			byName[volumes[i].Name] = &volumes[i]
		}
	}
	var out []Reach
	resolve := func(name string, mount, device int) {
		if v, ok := byName[name]; ok {
			kind, verbs := VolumeNeeds(v)
			out = append(out, Reach{Mount: mount, Device: device, Volume: name, Type: kind, Verbs: verbs})
		}
	}
	for i, m := range c.VolumeMounts {
		resolve(m.Name, i, -1)
	}
	for i, d := range c.VolumeDevices {
		resolve(d.Name, -1, i)
	}
	return out
}

// SettingNeeds lists what a container of a pod needs by its own settings
// (not its mounts): the sidecar's definition as injected, with what
// transferEnv copied into its env.
func SettingNeeds(c *corev1.Container) []Need { return settingNeeds(c) }

// ContentChanged reports whether an update changes what a SidecarSet
// injects or where: its sidecars, volumes, pinned revision, selectors,
// image pull secrets, patchPodMetadata or canary annotations. The authoring
// policy asks for the content's verbs again then, and the operator records
// the writer's authority anew; other updates (a pause, a label, the failure
// policy) keep the record.
func ContentChanged(old, s *appsv1beta1.SidecarSet) bool {
	o, n := &old.Spec, &s.Spec
	return !equality.Semantic.DeepEqual(o.InitContainers, n.InitContainers) ||
		!equality.Semantic.DeepEqual(o.Containers, n.Containers) ||
		!equality.Semantic.DeepEqual(o.Volumes, n.Volumes) ||
		!equality.Semantic.DeepEqual(o.InjectionStrategy.Revision, n.InjectionStrategy.Revision) ||
		!equality.Semantic.DeepEqual(o.Selector, n.Selector) ||
		!equality.Semantic.DeepEqual(o.NamespaceSelector, n.NamespaceSelector) ||
		!equality.Semantic.DeepEqual(o.ImagePullSecrets, n.ImagePullSecrets) ||
		!equality.Semantic.DeepEqual(o.PatchPodMetadata, n.PatchPodMetadata) ||
		old.Annotations[appsv1beta1.SidecarSetCanaryAnnotation] != s.Annotations[appsv1beta1.SidecarSetCanaryAnnotation] ||
		old.Annotations[appsv1beta1.SidecarSetBaseAnnotation] != s.Annotations[appsv1beta1.SidecarSetBaseAnnotation]
}

// Namespaces are the namespaces a SidecarSet reaches when its
// namespaceSelector names them one by one (kubernetes.io/metadata.name
// alone, in matchLabels or in one In requirement); every is true otherwise
// (no namespaceSelector: every namespace; one on other labels: those they
// pick), which needs inject-all-namespaces. The authoring policy computes
// the same in CEL (its newReach and oldReach variables).
func Namespaces(s *appsv1beta1.SidecarSet) (names []string, every bool) {
	sel := s.Spec.NamespaceSelector
	switch {
	case sel == nil:
		return nil, true
	case len(sel.MatchExpressions) == 0 && len(sel.MatchLabels) == 1:
		if ns, ok := sel.MatchLabels[appsv1beta1.NamespaceNameLabel]; ok {
			return []string{ns}, false
		}
	case len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 1:
		if r := sel.MatchExpressions[0]; r.Key == appsv1beta1.NamespaceNameLabel && r.Operator == metav1.LabelSelectorOpIn {
			return slices.Clone(r.Values), false
		}
	}
	return nil, true
}
