package inject

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// plan is what one SidecarSet injects into a pod.
type plan struct {
	v *version
	// initContainers and containers are the built sidecars, in spec order,
	// hot-upgrade sidecars expanded into their twins.
	initContainers []sidecar
	containers     []sidecar
	// volumes are the SidecarSet volumes its sidecars mount, in the order
	// they are first mounted.
	volumes []corev1.Volume
	// pullSecrets are the SidecarSet's imagePullSecrets.
	pullSecrets []corev1.LocalObjectReference
	// sidecarList is the sorted names recorded in the hash annotations
	// (podstate.SidecarList).
	sidecarList []string
	// hotUpgrade is the base names of the hot-upgrade sidecars.
	hotUpgrade []string
	warnings   []string
}

// sidecar is a built container and where it goes.
type sidecar struct {
	container corev1.Container
	policy    appsv1beta1.PodInjectPolicyType
}

func (p *plan) empty() bool {
	return len(p.initContainers) == 0 && len(p.containers) == 0
}

// buildPlan builds the sidecars of one SidecarSet version for a pod being
// created. annotations are the pod's annotations after patchPodMetadata
// (a transferEnv may read one); sidecarNames are the names of every sidecar
// being injected into the pod, which resourcesPolicy never counts as the
// pod's own containers.
func buildPlan(v *version, pod *corev1.Pod, annotations map[string]string, sidecarNames map[string]bool) (*plan, error) {
	p := &plan{v: v}
	spec := &v.set.Spec
	apps := appContainers(pod.Spec.Containers)
	b := &builder{pod: pod, apps: apps, annotations: annotations, setName: v.name, sidecarNames: sidecarNames}
	for i := range spec.InitContainers {
		if err := p.add(b, &spec.InitContainers[i], true); err != nil {
			return nil, err
		}
	}
	for i := range spec.Containers {
		if err := p.add(b, &spec.Containers[i], false); err != nil {
			return nil, err
		}
	}
	if p.empty() {
		return p, nil
	}
	p.volumes = collectVolumes(v, spec, pod, b)
	p.pullSecrets = spec.ImagePullSecrets
	p.sidecarList = podstate.SidecarList(spec)
	p.warnings = b.warnings
	return p, nil
}

// add builds one sidecar (or its hot-upgrade twins) into the plan. A
// resourcesPolicy sets the sidecar's resources from the pod's own containers
// (behavior 2.8); it failing denies the pod.
func (p *plan) add(b *builder, sc *appsv1beta1.SidecarContainer, isInit bool) error {
	c := b.build(sc)
	res, err := p.v.resources.ForPod(sc, b.pod.Spec.Containers, b.pod.Spec.InitContainers, b.sidecarNames)
	if err != nil {
		return fmt.Errorf("SidecarSet %q, sidecar %q: resourcesPolicy: %w", b.setName, sc.Name, err)
	}
	c.Resources = res
	if !isInit || appsv1beta1.IsNativeSidecar(&c) {
		setResizePolicy(&c)
	}
	place := func(c corev1.Container) {
		s := sidecar{container: c, policy: sc.PodInjectPolicy}
		if isInit {
			p.initContainers = append(p.initContainers, s)
		} else {
			p.containers = append(p.containers, s)
		}
	}
	if !appsv1beta1.IsHotUpgrade(sc, isInit) {
		place(c)
		return nil
	}
	working, idle := hotUpgradeTwins(c, sc.UpgradeStrategy.HotUpgradeEmptyImage)
	place(working)
	place(idle)
	p.hotUpgrade = append(p.hotUpgrade, sc.Name)
	return nil
}

// setResizePolicy gives a long-running sidecar that sets no resizePolicy an
// explicit one: CPU and memory are resized without restarting it. A pod's
// resize policies are fixed at its creation in most clusters, and the
// rollout resizes running sidecars when their SidecarSet's resources
// change (controllers/rollout, resize.go); a sidecar that must restart to
// take new memory (a JVM's heap) says so in its SidecarSet, as
// resizePolicy [{resourceName: memory, restartPolicy: RestartContainer}].
func setResizePolicy(c *corev1.Container) {
	if len(c.ResizePolicy) > 0 {
		return
	}
	c.ResizePolicy = []corev1.ContainerResizePolicy{
		{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired},
		{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.NotRequired},
	}
}

// builder builds the sidecars of one SidecarSet for one pod.
type builder struct {
	pod *corev1.Pod
	// apps are the pod's containers not marked IS_INJECTED=true: the ones
	// whose mounts are shared.
	apps        []*corev1.Container
	annotations map[string]string
	setName     string
	// sidecarNames are every sidecar being injected into the pod.
	sidecarNames map[string]bool
	warnings     []string
}

// build returns the container to inject for a sidecar: its own definition,
// plus the shared mounts and devices, IS_INJECTED=true and the transferred
// envs. The resulting env order is: own env, IS_INJECTED, transferred envs
// (per entry, sorted by name), the envs referenced by shared subPathExpr
// mounts. An env the sidecar defines itself is never overridden or
// duplicated.
func (b *builder) build(sc *appsv1beta1.SidecarContainer) corev1.Container {
	c := *sc.Container.DeepCopy()
	var mounts []corev1.VolumeMount
	var subPathEnv []corev1.EnvVar
	if sc.ShareVolumePolicy.Type == appsv1beta1.ShareVolumePolicyEnabled {
		mounts, subPathEnv = shareMounts(&sc.Container, b.apps)
	}
	var devices []corev1.VolumeDevice
	if p := sc.ShareVolumeDevicePolicy; p != nil && p.Type == appsv1beta1.ShareVolumePolicyEnabled {
		devices = shareDevices(&sc.Container, b.apps)
	}
	transferred := b.transferEnv(sc)
	c.VolumeMounts = append(c.VolumeMounts, mounts...)
	c.Env = mergeEnv(c.Env, transferred, subPathEnv)
	c.VolumeDevices = append(c.VolumeDevices, devices...)
	return c
}

// appContainers returns the pod's containers that are not themselves
// injected sidecars (env IS_INJECTED=true).
func appContainers(containers []corev1.Container) []*corev1.Container {
	apps := make([]*corev1.Container, 0, len(containers))
	for i := range containers {
		if !isInjected(&containers[i]) {
			apps = append(apps, &containers[i])
		}
	}
	return apps
}

func isInjected(c *corev1.Container) bool {
	for _, e := range c.Env {
		if e.Name == appsv1beta1.SidecarEnvInjected && e.Value == "true" {
			return true
		}
	}
	return false
}

// subPathVar matches the $(VAR) references of a subPathExpr.
var subPathVar = regexp.MustCompile(`\$\(([^()]+)\)`)

// shareMounts returns the app containers' mounts the sidecar gets, in
// container and mount order, deduplicated by mountPath (the sidecar's own
// mount and device paths win, then the first app container), and the envs
// their subPathExprs reference, taken from the same app container.
func shareMounts(own *corev1.Container, apps []*corev1.Container) ([]corev1.VolumeMount, []corev1.EnvVar) {
	taken := ownPaths(own)
	var mounts []corev1.VolumeMount
	var envs []corev1.EnvVar
	for _, app := range apps {
		for _, m := range app.VolumeMounts {
			if taken[m.MountPath] {
				continue
			}
			taken[m.MountPath] = true
			mounts = append(mounts, m)
			for _, ref := range subPathVar.FindAllStringSubmatch(m.SubPathExpr, -1) {
				if e := findEnv(app.Env, ref[1]); e != nil {
					envs = append(envs, *e)
				}
			}
		}
	}
	return mounts, envs
}

// shareDevices returns the app containers' volumeDevices the sidecar gets,
// deduplicated by devicePath against the sidecar's own devices and mounts.
func shareDevices(own *corev1.Container, apps []*corev1.Container) []corev1.VolumeDevice {
	taken := ownPaths(own)
	var devices []corev1.VolumeDevice
	for _, app := range apps {
		for _, d := range app.VolumeDevices {
			if taken[d.DevicePath] {
				continue
			}
			taken[d.DevicePath] = true
			devices = append(devices, d)
		}
	}
	return devices
}

func ownPaths(c *corev1.Container) map[string]bool {
	paths := make(map[string]bool, len(c.VolumeMounts)+len(c.VolumeDevices))
	for _, m := range c.VolumeMounts {
		paths[m.MountPath] = true
	}
	for _, d := range c.VolumeDevices {
		paths[d.DevicePath] = true
	}
	return paths
}

func findEnv(env []corev1.EnvVar, name string) *corev1.EnvVar {
	for i := range env {
		if env[i].Name == name {
			return &env[i]
		}
	}
	return nil
}

// mergeEnv appends IS_INJECTED=true and then the extra envs to the
// sidecar's own env, skipping every name already present.
func mergeEnv(own []corev1.EnvVar, extra ...[]corev1.EnvVar) []corev1.EnvVar {
	present := make(map[string]bool, len(own)+1)
	for _, e := range own {
		present[e.Name] = true
	}
	env := own
	if !present[appsv1beta1.SidecarEnvInjected] {
		env = append(env, corev1.EnvVar{Name: appsv1beta1.SidecarEnvInjected, Value: "true"})
		present[appsv1beta1.SidecarEnvInjected] = true
	}
	for _, list := range extra {
		for _, e := range list {
			if !present[e.Name] {
				present[e.Name] = true
				env = append(env, e)
			}
		}
	}
	return env
}

// transferEnv returns the envs the sidecar copies from the pod's
// containers: per entry, the source container's envs named by envName and
// envNames, sorted by name. Missing containers and envs are skipped.
func (b *builder) transferEnv(sc *appsv1beta1.SidecarContainer) []corev1.EnvVar {
	var envs []corev1.EnvVar
	for _, t := range sc.TransferEnv {
		source := t.SourceContainerName
		if from := t.SourceContainerNameFrom; from != nil && from.FieldRef != nil {
			name, err := b.resolveFieldPath(from.FieldRef.FieldPath)
			if err != nil {
				b.warnings = append(b.warnings, fmt.Sprintf(
					"SidecarSet %q: container %q: transferEnv sourceContainerNameFrom: %v; the entry is ignored",
					b.setName, sc.Name, err))
				continue
			}
			source = name
		}
		c := findContainer(b.pod.Spec.Containers, source)
		if c == nil {
			continue
		}
		names := append([]string{t.EnvName}, t.EnvNames...)
		slices.Sort(names)
		for _, n := range slices.Compact(names) {
			if e := findEnv(c.Env, n); n != "" && e != nil {
				envs = append(envs, *e)
			}
		}
	}
	return envs
}

// resolveFieldPath reads a container name from the pod: metadata.name,
// metadata.labels['<key>'] or metadata.annotations['<key>'] (a missing key
// reads as "").
func (b *builder) resolveFieldPath(path string) (string, error) {
	if path == "metadata.name" {
		return b.pod.Name, nil
	}
	if key, ok := subscript(path, "metadata.labels"); ok {
		return b.pod.Labels[key], nil
	}
	if key, ok := subscript(path, "metadata.annotations"); ok {
		return b.annotations[key], nil
	}
	return "", fmt.Errorf("unsupported fieldPath %q (want metadata.name, metadata.labels['<key>'] or metadata.annotations['<key>'])", path)
}

// subscript parses "<field>['<key>']".
func subscript(path, field string) (string, bool) {
	rest, ok := strings.CutPrefix(path, field+"['")
	if !ok {
		return "", false
	}
	key, ok := strings.CutSuffix(rest, "']")
	return key, ok && key != ""
}

func findContainer(containers []corev1.Container, name string) *corev1.Container {
	for i := range containers {
		if containers[i].Name == name {
			return &containers[i]
		}
	}
	return nil
}

// collectVolumes returns the SidecarSet volumes the sidecars mount or use
// as devices, in order: init containers then containers, each its mounts
// then its devices. Only the sidecars' own mounts count: shared mounts use
// the pod's volumes. A mount of a volume neither the SidecarSet nor the pod
// defines is reported as a warning (the API server will reject the pod).
func collectVolumes(v *version, spec *appsv1beta1.SidecarSetSpec, pod *corev1.Pod, b *builder) []corev1.Volume {
	declared := make(map[string]*corev1.Volume, len(spec.Volumes))
	for i := range spec.Volumes {
		declared[spec.Volumes[i].Name] = &spec.Volumes[i]
	}
	var out []corev1.Volume
	added := map[string]bool{}
	use := func(container, volume string) {
		if added[volume] {
			return
		}
		if vol, ok := declared[volume]; ok {
			added[volume] = true
			out = append(out, *vol.DeepCopy())
			return
		}
		if !slices.ContainsFunc(pod.Spec.Volumes, func(pv corev1.Volume) bool { return pv.Name == volume }) {
			added[volume] = true
			b.warnings = append(b.warnings, fmt.Sprintf(
				"SidecarSet %q: container %q uses volume %q, which neither the SidecarSet nor the pod defines",
				v.name, container, volume))
		}
	}
	for _, list := range [][]appsv1beta1.SidecarContainer{spec.InitContainers, spec.Containers} {
		for i := range list {
			for _, m := range list[i].VolumeMounts {
				use(list[i].Name, m.Name)
			}
			for _, d := range list[i].VolumeDevices {
				use(list[i].Name, d.Name)
			}
		}
	}
	return out
}
