package validation

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/distribution/reference"
	corev1 "k8s.io/api/core/v1"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/sidecarset-operator/sidecarset-operator/api/resources"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// validateSidecarContainers checks each sidecar of spec.initContainers
// (init == true) or spec.containers with the subset of Kubernetes pod
// validation that a pod built from them would fail, so that the mistake is
// reported on the SidecarSet rather than on every pod creation.
func validateSidecarContainers(list []appsv1beta1.SidecarContainer, init bool, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range list {
		errs = append(errs, validateSidecarContainer(&list[i], init, path.Index(i))...)
	}
	return errs
}

func validateSidecarContainer(c *appsv1beta1.SidecarContainer, init bool, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateContainerName(c.Name, path.Child("name"))...)
	errs = append(errs, validateImage(c.Image, path.Child("image"), true)...)
	if empty := c.UpgradeStrategy.HotUpgradeEmptyImage; empty != "" {
		errs = append(errs, validateImage(empty, path.Child("upgradeStrategy", "hotUpgradeEmptyImage"), false)...)
	}
	errs = append(errs, validatePorts(c.Ports, path.Child("ports"))...)
	errs = append(errs, validateEnv(c.Env, path.Child("env"))...)
	errs = append(errs, validateEnvFrom(c.EnvFrom, path.Child("envFrom"))...)
	errs = append(errs, validateMounts(c.VolumeMounts, c.VolumeDevices, path)...)
	errs = append(errs, validateResources(&c.Resources, path.Child("resources"))...)
	errs = append(errs, validateProbesAndLifecycle(&c.Container, init && !appsv1beta1.IsNativeSidecar(&c.Container), path)...)
	errs = append(errs, validateTransferEnv(c.TransferEnv, path.Child("transferEnv"))...)
	if p := c.ResourcesPolicy; p != nil {
		errs = append(errs, validateResourcesPolicy(p, path.Child("resourcesPolicy"))...)
	}
	if init && !appsv1beta1.IsNativeSidecar(&c.Container) && c.UpgradeStrategy.UpgradeType == appsv1beta1.SidecarContainerHotUpgrade {
		errs = append(errs, field.Forbidden(path.Child("upgradeStrategy", "upgradeType"),
			"HotUpgrade needs a sidecar that keeps running, but a plain init container runs once, to completion, at pod "+
				"creation: use ColdUpgrade, or make it a native sidecar with restartPolicy: Always"))
	}
	return errs
}

func validateContainerName(name string, path *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(path, "a sidecar needs a name")}
	}
	var errs field.ErrorList
	for _, msg := range utilvalidation.IsDNS1123Label(name) {
		errs = append(errs, field.Invalid(path, name, msg))
	}
	return errs
}

// validateImage checks that an image is a valid reference, such as
// "nginx:1.25" or "registry.example.com/proxy@sha256:...".
func validateImage(image string, path *field.Path, required bool) field.ErrorList {
	if image == "" {
		if required {
			return field.ErrorList{field.Required(path, "a sidecar needs an image: it is injected into pods as is")}
		}
		return nil
	}
	if _, err := reference.ParseAnyReference(image); err != nil {
		return field.ErrorList{field.Invalid(path, image, fmt.Sprintf(
			"must be a valid image reference, such as nginx:1.25 or registry.example.com/team/proxy@sha256:<digest>: %v", err))}
	}
	return nil
}

var supportedProtocols = []corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP}

func validatePorts(ports []corev1.ContainerPort, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := map[string]int{}
	endpoints := map[string]int{}
	for i, p := range ports {
		pp := path.Index(i)
		for _, msg := range utilvalidation.IsValidPortNum(int(p.ContainerPort)) {
			errs = append(errs, field.Invalid(pp.Child("containerPort"), p.ContainerPort, msg))
		}
		if p.HostPort != 0 {
			for _, msg := range utilvalidation.IsValidPortNum(int(p.HostPort)) {
				errs = append(errs, field.Invalid(pp.Child("hostPort"), p.HostPort, msg))
			}
		}
		if p.Name != "" {
			for _, msg := range utilvalidation.IsValidPortName(p.Name) {
				errs = append(errs, field.Invalid(pp.Child("name"), p.Name, msg))
			}
			if first, seen := names[p.Name]; seen {
				errs = append(errs, withDetail(field.Duplicate(pp.Child("name"), p.Name),
					fmt.Sprintf("ports[%d] already has this name: port names must be unique within a container", first)))
			} else {
				names[p.Name] = i
			}
		}
		protocol := p.Protocol
		if protocol == "" {
			protocol = corev1.ProtocolTCP
		}
		if !slices.Contains(supportedProtocols, protocol) {
			errs = append(errs, field.NotSupported(pp.Child("protocol"), p.Protocol, supportedProtocols))
		}
		endpoint := fmt.Sprintf("%d/%s", p.ContainerPort, protocol)
		if first, seen := endpoints[endpoint]; seen {
			errs = append(errs, withDetail(field.Duplicate(pp, endpoint),
				fmt.Sprintf("ports[%d] already declares this containerPort and protocol: remove one of them", first)))
		} else {
			endpoints[endpoint] = i
		}
	}
	return errs
}

func validateEnv(env []corev1.EnvVar, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, e := range env {
		ep := path.Index(i)
		if e.Name == "" {
			errs = append(errs, field.Required(ep.Child("name"), "an environment variable needs a name"))
		} else {
			for _, msg := range utilvalidation.IsRelaxedEnvVarName(e.Name) {
				errs = append(errs, field.Invalid(ep.Child("name"), e.Name, msg))
			}
		}
		if e.ValueFrom == nil {
			continue
		}
		if e.Value != "" {
			errs = append(errs, field.Forbidden(ep.Child("valueFrom"),
				"cannot be set together with value: keep one of them"))
		}
		errs = append(errs, exactlyOne(e.ValueFrom, ep.Child("valueFrom"))...)
	}
	return errs
}

func validateEnvFrom(envFrom []corev1.EnvFromSource, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range envFrom {
		errs = append(errs, exactlyOne(&envFrom[i], path.Index(i))...)
	}
	return errs
}

// validateMounts checks that volumeMounts name a volume and have unique
// mountPaths, and that volumeDevices name a volume and have unique
// devicePaths distinct from the mountPaths.
func validateMounts(mounts []corev1.VolumeMount, devices []corev1.VolumeDevice, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	mountPaths := map[string]int{}
	for i, m := range mounts {
		mp := path.Child("volumeMounts").Index(i)
		if m.Name == "" {
			errs = append(errs, field.Required(mp.Child("name"), "name the volume of spec.volumes to mount"))
		}
		switch first, seen := mountPaths[m.MountPath]; {
		case m.MountPath == "":
			errs = append(errs, field.Required(mp.Child("mountPath"), "say where the volume is mounted in the container"))
		case seen:
			errs = append(errs, withDetail(field.Duplicate(mp.Child("mountPath"), m.MountPath), fmt.Sprintf(
				"volumeMounts[%d] already mounts a volume there: mountPaths must be unique within a container", first)))
		default:
			mountPaths[m.MountPath] = i
		}
	}
	devicePaths := map[string]int{}
	for i, d := range devices {
		dp := path.Child("volumeDevices").Index(i)
		if d.Name == "" {
			errs = append(errs, field.Required(dp.Child("name"), "name the volume of spec.volumes to attach"))
		}
		switch first, seen := devicePaths[d.DevicePath]; {
		case d.DevicePath == "":
			errs = append(errs, field.Required(dp.Child("devicePath"), "say where the device appears in the container"))
		case seen:
			errs = append(errs, withDetail(field.Duplicate(dp.Child("devicePath"), d.DevicePath), fmt.Sprintf(
				"volumeDevices[%d] already uses this devicePath: devicePaths must be unique within a container", first)))
		default:
			devicePaths[d.DevicePath] = i
			if m, clash := mountPaths[d.DevicePath]; clash {
				errs = append(errs, field.Invalid(dp.Child("devicePath"), d.DevicePath, fmt.Sprintf(
					"is also the mountPath of volumeMounts[%d]: a path holds either a mount or a device", m)))
			}
		}
	}
	return errs
}

// validateResources checks that quantities are not negative and that no
// request exceeds its limit.
func validateResources(r *corev1.ResourceRequirements, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, list := range []struct {
		name  string
		items corev1.ResourceList
	}{{"limits", r.Limits}, {"requests", r.Requests}} {
		for _, name := range slices.Sorted(maps.Keys(list.items)) {
			if q := list.items[name]; q.Sign() < 0 {
				errs = append(errs, field.Invalid(path.Child(list.name).Key(string(name)), q.String(), "must not be negative"))
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(r.Requests)) {
		limit, limited := r.Limits[name]
		if request := r.Requests[name]; limited && request.Cmp(limit) > 0 {
			errs = append(errs, field.Invalid(path.Child("requests").Key(string(name)), request.String(), fmt.Sprintf(
				"must be less than or equal to the %s limit (%s): raise the limit or lower the request", name, limit.String())))
		}
	}
	return errs
}

// validateTransferEnv checks the label or annotation key that
// sourceContainerNameFrom reads; the schema checks the shape of the path.
func validateTransferEnv(transfers []appsv1beta1.TransferEnvVar, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range transfers {
		if t.SourceContainerNameFrom == nil || t.SourceContainerNameFrom.FieldRef == nil {
			continue
		}
		fieldPath := t.SourceContainerNameFrom.FieldRef.FieldPath
		fp := path.Index(i).Child("sourceContainerNameFrom", "fieldRef", "fieldPath")
		for _, prefix := range []string{"metadata.labels['", "metadata.annotations['"} {
			key, ok := strings.CutPrefix(fieldPath, prefix)
			if !ok || !strings.HasSuffix(key, "']") {
				continue
			}
			key = strings.TrimSuffix(key, "']")
			if prefix == "metadata.annotations['" {
				key = strings.ToLower(key) // annotation keys are case-insensitive
			}
			for _, msg := range utilvalidation.IsQualifiedName(key) {
				errs = append(errs, field.Invalid(fp, fieldPath, "the key in brackets must be a valid label or annotation key: "+msg))
			}
		}
	}
	return errs
}

// validateResourcesPolicy checks the target regex and parses every resource
// expression with the calculator the injector uses, so that a bad
// expression is rejected here and not at pod creation.
func validateResourcesPolicy(p *appsv1beta1.ResourcesPolicy, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if p.TargetContainersNameRegex != "" {
		if _, err := regexp.Compile(p.TargetContainersNameRegex); err != nil {
			errs = append(errs, field.Invalid(path.Child("targetContainersNameRegex"),
				p.TargetContainersNameRegex, fmt.Sprintf("must be a valid regular expression (RE2 syntax): %v", err)))
		}
	}
	exprPath := path.Child("resourcesExpr")
	check := func(expr, variable string, p *field.Path) {
		if expr == "" {
			return
		}
		if _, err := resources.Parse(expr, variable); err != nil {
			errs = append(errs, field.Invalid(p, expr, err.Error()))
		}
	}
	if l := p.ResourceExpr.Limits; l != nil {
		check(l.CPU, resources.VariableCPU, exprPath.Child("limits", "cpu"))
		check(l.Memory, resources.VariableMemory, exprPath.Child("limits", "memory"))
	}
	if r := p.ResourceExpr.Requests; r != nil {
		check(r.CPU, resources.VariableCPU, exprPath.Child("requests", "cpu"))
		check(r.Memory, resources.VariableMemory, exprPath.Child("requests", "memory"))
	}
	return errs
}
