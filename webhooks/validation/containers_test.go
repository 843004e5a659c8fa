package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

var (
	c0 = field.NewPath("spec", "containers").Index(0)
	i0 = field.NewPath("spec", "initContainers").Index(0)
)

func TestValidateSidecarSet_ContainerNamesAndImages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		mutate func(*appsv1beta1.SidecarSet)
		want   field.ErrorList
	}{
		{name: "a container with a DNS label name and a tagged image is accepted", mutate: func(*appsv1beta1.SidecarSet) {}},
		{
			name: "images by digest and with a registry port are accepted",
			mutate: func(s *appsv1beta1.SidecarSet) {
				s.Spec.Containers[0].Image = "registry.example.com:5000/team/proxy@sha256:" +
					"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
			},
		},
		{
			name:   "an uppercase container name is rejected",
			mutate: func(s *appsv1beta1.SidecarSet) { s.Spec.Containers[0].Name = "Sidecar" },
			want: field.ErrorList{field.Invalid(c0.Child("name"), "Sidecar",
				"a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "+
					"and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "+
					"'[a-z0-9]([-a-z0-9]*[a-z0-9])?')")},
		},
		{
			name: "an empty init container name is required",
			mutate: func(s *appsv1beta1.SidecarSet) {
				s.Spec.InitContainers = []appsv1beta1.SidecarContainer{sidecar("", "busybox:1")}
			},
			want: field.ErrorList{field.Required(i0.Child("name"), "a sidecar needs a name")},
		},
		{
			name:   "a missing image is required",
			mutate: func(s *appsv1beta1.SidecarSet) { s.Spec.Containers[0].Image = "" },
			want:   field.ErrorList{field.Required(c0.Child("image"), "a sidecar needs an image: it is injected into pods as is")},
		},
		{
			name:   "an image with an uppercase repository is rejected",
			mutate: func(s *appsv1beta1.SidecarSet) { s.Spec.Containers[0].Image = "Centos:6.7" },
			want: field.ErrorList{field.Invalid(c0.Child("image"), "Centos:6.7",
				"must be a valid image reference, such as nginx:1.25 or registry.example.com/team/proxy@sha256:<digest>: "+
					"invalid reference format: repository name (library/Centos) must be lowercase")},
		},
		{
			name: "an invalid hotUpgradeEmptyImage is rejected",
			mutate: func(s *appsv1beta1.SidecarSet) {
				s.Spec.Containers[0] = hotSidecar("sidecar1", "centos:6.7")
				s.Spec.Containers[0].UpgradeStrategy.HotUpgradeEmptyImage = "empty image"
			},
			want: field.ErrorList{field.Invalid(c0.Child("upgradeStrategy", "hotUpgradeEmptyImage"), "empty image",
				"must be a valid image reference, such as nginx:1.25 or registry.example.com/team/proxy@sha256:<digest>: "+
					"invalid reference format")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			errs, _ := ValidateSidecarSet(newSidecarSet("s", "nginx", tc.mutate), nil, Options{})
			checkErrors(t, tc.want, errs)
		})
	}
}

func TestValidateSidecarSet_PortsEnvAndMounts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		mutate func(*appsv1beta1.SidecarContainer)
		want   field.ErrorList
	}{
		{
			name: "named ports, env from one source and distinct paths are accepted",
			mutate: func(c *appsv1beta1.SidecarContainer) {
				c.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 80}, {Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP},
					{Name: "dns-tcp", ContainerPort: 53}}
				c.Env = []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "my.var", ValueFrom: &corev1.EnvVarSource{
					FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}
				c.VolumeMounts = []corev1.VolumeMount{{Name: "v", MountPath: "/a"}, {Name: "v", MountPath: "/b"}}
				c.VolumeDevices = []corev1.VolumeDevice{{Name: "d", DevicePath: "/dev/x"}}
			},
		},
		{
			name: "out-of-range ports, a bad port name and an unknown protocol are rejected",
			mutate: func(c *appsv1beta1.SidecarContainer) {
				c.Ports = []corev1.ContainerPort{{Name: "http_port", ContainerPort: 0, HostPort: 70000, Protocol: "ICMP"}}
			},
			want: field.ErrorList{
				field.Invalid(c0.Child("ports").Index(0).Child("containerPort"), int32(0), "must be between 1 and 65535, inclusive"),
				field.Invalid(c0.Child("ports").Index(0).Child("hostPort"), int32(70000), "must be between 1 and 65535, inclusive"),
				field.Invalid(c0.Child("ports").Index(0).Child("name"), "http_port", "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"),
				field.NotSupported(c0.Child("ports").Index(0).Child("protocol"), corev1.Protocol("ICMP"),
					[]corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP}),
			},
		},
		{
			name: "the same containerPort and protocol twice, and a repeated port name, are duplicates",
			mutate: func(c *appsv1beta1.SidecarContainer) {
				c.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 80}, {Name: "http", ContainerPort: 80, Protocol: corev1.ProtocolTCP}}
			},
			want: field.ErrorList{
				withDetail(field.Duplicate(c0.Child("ports").Index(1), "80/TCP"),
					"ports[0] already declares this containerPort and protocol: remove one of them"),
				withDetail(field.Duplicate(c0.Child("ports").Index(1).Child("name"), "http"),
					"ports[0] already has this name: port names must be unique within a container"),
			},
		},
		{
			name: "env names must be non-empty without '=', and valueFrom needs exactly one source and no value",
			mutate: func(c *appsv1beta1.SidecarContainer) {
				c.Env = []corev1.EnvVar{
					{Name: ""},
					{Name: "A=B"},
					{Name: "C", Value: "x", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
					{Name: "D", ValueFrom: &corev1.EnvVarSource{}},
					{Name: "E", ValueFrom: &corev1.EnvVarSource{
						ConfigMapKeyRef: &corev1.ConfigMapKeySelector{Key: "k"}, SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}},
				}
				c.EnvFrom = []corev1.EnvFromSource{{Prefix: "P_"}}
			},
			want: field.ErrorList{
				field.Required(c0.Child("envFrom").Index(0), "exactly one of configMapRef, secretRef must be set"),
				field.Required(c0.Child("env").Index(0).Child("name"), "an environment variable needs a name"),
				field.Invalid(c0.Child("env").Index(1).Child("name"), "A=B",
					"a valid environment variable name must consist only of printable ASCII characters other than '='"),
				field.Forbidden(c0.Child("env").Index(2).Child("valueFrom"), "cannot be set together with value: keep one of them"),
				field.Required(c0.Child("env").Index(3).Child("valueFrom"),
					"exactly one of fieldRef, resourceFieldRef, configMapKeyRef, secretKeyRef, fileKeyRef must be set"),
				field.Invalid(c0.Child("env").Index(4).Child("valueFrom"), []string{"configMapKeyRef", "secretKeyRef"},
					"exactly one source must be set, not configMapKeyRef and secretKeyRef: keep one of them"),
			},
		},
		{
			name: "mounts need a name and a unique mountPath; devices a unique devicePath that is not a mountPath",
			mutate: func(c *appsv1beta1.SidecarContainer) {
				c.VolumeMounts = []corev1.VolumeMount{{Name: "v", MountPath: "/data"}, {Name: "", MountPath: "/data"}, {Name: "v"}}
				c.VolumeDevices = []corev1.VolumeDevice{{Name: "d", DevicePath: "/data"}, {Name: "d", DevicePath: "/dev/x"},
					{Name: "d", DevicePath: "/dev/x"}, {Name: ""}}
			},
			want: field.ErrorList{
				field.Invalid(c0.Child("volumeDevices").Index(0).Child("devicePath"), "/data",
					"is also the mountPath of volumeMounts[0]: a path holds either a mount or a device"),
				withDetail(field.Duplicate(c0.Child("volumeDevices").Index(2).Child("devicePath"), "/dev/x"),
					"volumeDevices[1] already uses this devicePath: devicePaths must be unique within a container"),
				field.Required(c0.Child("volumeDevices").Index(3).Child("devicePath"), "say where the device appears in the container"),
				field.Required(c0.Child("volumeDevices").Index(3).Child("name"), "name the volume of spec.volumes to attach"),
				withDetail(field.Duplicate(c0.Child("volumeMounts").Index(1).Child("mountPath"), "/data"),
					"volumeMounts[0] already mounts a volume there: mountPaths must be unique within a container"),
				field.Required(c0.Child("volumeMounts").Index(1).Child("name"), "name the volume of spec.volumes to mount"),
				field.Required(c0.Child("volumeMounts").Index(2).Child("mountPath"), "say where the volume is mounted in the container"),
			},
		},
		{
			name: "negative quantities and requests above limits are rejected",
			mutate: func(c *appsv1beta1.SidecarContainer) {
				c.Resources = corev1.ResourceRequirements{
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("-1Mi")},
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("1Mi")},
				}
			},
			want: field.ErrorList{
				field.Invalid(c0.Child("resources", "limits").Key("memory"), "-1Mi", "must not be negative"),
				field.Invalid(c0.Child("resources", "requests").Key("cpu"), "200m",
					"must be less than or equal to the cpu limit (100m): raise the limit or lower the request"),
				field.Invalid(c0.Child("resources", "requests").Key("memory"), "1Mi",
					"must be less than or equal to the memory limit (-1Mi): raise the limit or lower the request"),
			},
		},
		{
			name: "equal requests and limits in different units are accepted",
			mutate: func(c *appsv1beta1.SidecarContainer) {
				c.Resources = corev1.ResourceRequirements{
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000m")},
				}
			},
		},
		{
			name: "a transferEnv label key that is not a valid label key is rejected; metadata.name is accepted",
			mutate: func(c *appsv1beta1.SidecarContainer) {
				c.TransferEnv = []appsv1beta1.TransferEnvVar{
					{SourceContainerNameFrom: &appsv1beta1.SourceContainerNameSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}, EnvName: "A"},
					{SourceContainerNameFrom: &appsv1beta1.SourceContainerNameSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['Example.com/Main']"}}, EnvName: "A"},
					{SourceContainerNameFrom: &appsv1beta1.SourceContainerNameSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['bad key']"}}, EnvName: "A"},
				}
			},
			want: field.ErrorList{field.Invalid(c0.Child("transferEnv").Index(2).Child("sourceContainerNameFrom", "fieldRef", "fieldPath"),
				"metadata.labels['bad key']", "the key in brackets must be a valid label or annotation key: name part must consist of "+
					"alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  "+
					"or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")},
		},
		{
			name: "a resourcesPolicy name regex that does not compile is rejected",
			mutate: func(c *appsv1beta1.SidecarContainer) {
				c.ResourcesPolicy = &appsv1beta1.ResourcesPolicy{TargetContainerMode: appsv1beta1.TargetContainerModeSum,
					TargetContainersNameRegex: "app-(", ResourceExpr: appsv1beta1.ResourceExpr{
						Limits: &appsv1beta1.ResourceExprLimits{CPU: "cpu*50%"}}}
			},
			want: field.ErrorList{field.Invalid(c0.Child("resourcesPolicy", "targetContainersNameRegex"), "app-(",
				"must be a valid regular expression (RE2 syntax): error parsing regexp: missing closing ): `app-(`")},
		},
		{
			name: "a resourcesPolicy expression using the other resource's variable is rejected",
			mutate: func(c *appsv1beta1.SidecarContainer) {
				c.ResourcesPolicy = &appsv1beta1.ResourcesPolicy{TargetContainerMode: appsv1beta1.TargetContainerModeMax,
					ResourceExpr: appsv1beta1.ResourceExpr{Requests: &appsv1beta1.ResourceExprRequests{CPU: "memory*50%", Memory: "max(memory*20%, 100Mi)"}}}
			},
			want: field.ErrorList{field.Invalid(c0.Child("resourcesPolicy", "resourcesExpr", "requests", "cpu"), "memory*50%",
				`a cpu expression cannot use "memory" at column 1 (the only variable is cpu)`)},
		},
		{
			name: "a resourcesPolicy expression that does not parse is rejected",
			mutate: func(c *appsv1beta1.SidecarContainer) {
				c.ResourcesPolicy = &appsv1beta1.ResourcesPolicy{TargetContainerMode: appsv1beta1.TargetContainerModeSum,
					ResourceExpr: appsv1beta1.ResourceExpr{Limits: &appsv1beta1.ResourceExprLimits{Memory: "memory *"}}}
			},
			want: field.ErrorList{field.Invalid(c0.Child("resourcesPolicy", "resourcesExpr", "limits", "memory"), "memory *",
				`expected a number, a quantity, memory or "(" at column 9, found end of expression`)},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newSidecarSet("s", "nginx", func(s *appsv1beta1.SidecarSet) { tc.mutate(&s.Spec.Containers[0]) })
			errs, _ := ValidateSidecarSet(s, nil, Options{})
			checkErrors(t, tc.want, errs)
		})
	}
}

func TestValidateSidecarSet_ProbesAndLifecycle(t *testing.T) {
	t.Parallel()
	httpProbe := func() *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromString("http")}}}
	}
	const plainInitMsg = "may not be set on an init container without restartPolicy: Always, which runs to " +
		"completion before the pod starts: remove it, or make the init container a native sidecar"
	tests := []struct {
		name   string
		mutate func(*appsv1beta1.SidecarSet)
		want   field.ErrorList
	}{
		{
			name: "probes and hooks with one handler each are accepted on containers and native sidecars",
			mutate: func(s *appsv1beta1.SidecarSet) {
				s.Spec.Containers[0].ReadinessProbe = httpProbe()
				s.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 5}}}
				s.Spec.InitContainers = []appsv1beta1.SidecarContainer{nativeSidecar("native", "envoy:1")}
				s.Spec.InitContainers[0].StartupProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
					TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(15021)}}}
			},
		},
		{
			name: "a probe without a handler, or with two, is rejected",
			mutate: func(s *appsv1beta1.SidecarSet) {
				s.Spec.Containers[0].LivenessProbe = &corev1.Probe{}
				s.Spec.Containers[0].ReadinessProbe = httpProbe()
				s.Spec.Containers[0].ReadinessProbe.Exec = &corev1.ExecAction{Command: []string{"true"}}
			},
			want: field.ErrorList{
				field.Required(c0.Child("livenessProbe"), "exactly one of exec, httpGet, tcpSocket, grpc must be set"),
				field.Invalid(c0.Child("readinessProbe"), []string{"exec", "httpGet"},
					"exactly one source must be set, not exec and httpGet: keep one of them"),
			},
		},
		{
			name: "bad probe ports, negative timings and a liveness successThreshold above 1 are rejected",
			mutate: func(s *appsv1beta1.SidecarSet) {
				s.Spec.Containers[0].LivenessProbe = &corev1.Probe{
					ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(0)}},
					PeriodSeconds:    -1,
					SuccessThreshold: 2,
				}
				s.Spec.Containers[0].StartupProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 70000}}}
			},
			want: field.ErrorList{
				field.Invalid(c0.Child("livenessProbe", "httpGet", "port"), "0",
					"must be a port number or a port name: must be between 1 and 65535, inclusive"),
				field.Invalid(c0.Child("livenessProbe", "periodSeconds"), int64(-1), "must be greater than or equal to 0"),
				field.Invalid(c0.Child("livenessProbe", "successThreshold"), int32(2), "must be 1 for liveness and startup probes"),
				field.Invalid(c0.Child("startupProbe", "grpc", "port"), int32(70000), "must be between 1 and 65535, inclusive"),
			},
		},
		{
			name: "a lifecycle hook without a handler and with a bad port name is rejected",
			mutate: func(s *appsv1beta1.SidecarSet) {
				s.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{
					PostStart: &corev1.LifecycleHandler{},
					PreStop:   &corev1.LifecycleHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("Admin_Port")}},
				}
			},
			want: field.ErrorList{
				field.Required(c0.Child("lifecycle", "postStart"), "exactly one of exec, httpGet, tcpSocket, sleep must be set"),
				field.Invalid(c0.Child("lifecycle", "preStop", "tcpSocket", "port"), "Admin_Port",
					"must be a port number or a port name: must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"),
			},
		},
		{
			name: "probes and lifecycle on a plain init container are forbidden",
			mutate: func(s *appsv1beta1.SidecarSet) {
				s.Spec.InitContainers = []appsv1beta1.SidecarContainer{sidecar("init", "busybox:1")}
				s.Spec.InitContainers[0].ReadinessProbe = httpProbe()
				s.Spec.InitContainers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 1}}}
			},
			want: field.ErrorList{
				field.Forbidden(i0.Child("lifecycle"), plainInitMsg),
				field.Forbidden(i0.Child("readinessProbe"), plainInitMsg),
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			errs, _ := ValidateSidecarSet(newSidecarSet("s", "nginx", tc.mutate), nil, Options{})
			checkErrors(t, tc.want, errs)
		})
	}
}

func TestValidateSidecarSet_InitContainerUpgrades(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		mutate func(*appsv1beta1.SidecarSet)
		want   field.ErrorList
	}{
		{
			name: "a native sidecar is accepted with RollingUpdate",
			mutate: func(s *appsv1beta1.SidecarSet) {
				s.Spec.InitContainers = []appsv1beta1.SidecarContainer{nativeSidecar("native", "envoy:1")}
				s.Spec.UpdateStrategy.Type = appsv1beta1.RollingUpdateSidecarSetStrategyType
			},
		},
		{
			name: "a native sidecar is accepted with HotUpgrade",
			mutate: func(s *appsv1beta1.SidecarSet) {
				hot := hotSidecar("native", "envoy:1")
				hot.RestartPolicy = nativeSidecar("x", "y").RestartPolicy
				s.Spec.InitContainers = []appsv1beta1.SidecarContainer{hot}
			},
		},
		{
			name: "a plain init container with HotUpgrade is forbidden",
			mutate: func(s *appsv1beta1.SidecarSet) {
				s.Spec.InitContainers = []appsv1beta1.SidecarContainer{hotSidecar("init", "busybox:1")}
			},
			want: field.ErrorList{field.Forbidden(i0.Child("upgradeStrategy", "upgradeType"),
				"HotUpgrade needs a sidecar that keeps running, but a plain init container runs once, to completion, at pod "+
					"creation: use ColdUpgrade, or make it a native sidecar with restartPolicy: Always")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			errs, warnings := ValidateSidecarSet(newSidecarSet("s", "nginx", tc.mutate), nil, Options{})
			checkErrors(t, tc.want, errs)
			checkWarnings(t, nil, warnings)
		})
	}
}

func TestValidateSidecarSet_Volumes(t *testing.T) {
	t.Parallel()
	volumes := field.NewPath("spec", "volumes")
	tests := []struct {
		name    string
		volumes []corev1.Volume
		want    field.ErrorList
	}{
		{
			name: "named volumes with one source are accepted, and a volume without source defaults to emptyDir",
			volumes: []corev1.Volume{
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
				{Name: "scratch"},
			},
		},
		{
			name: "a volume with an invalid name or two sources is rejected",
			volumes: []corev1.Volume{
				{Name: "Config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
				{Name: "both", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}, Secret: &corev1.SecretVolumeSource{}}},
				{Name: "", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
			want: field.ErrorList{
				field.Invalid(volumes.Index(0).Child("name"), "Config",
					"a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "+
						"and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "+
						"'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"),
				field.Invalid(volumes.Index(1), []string{"emptyDir", "secret"},
					"exactly one source must be set, not emptyDir and secret: keep one of them"),
				field.Required(volumes.Index(2).Child("name"), "a volume needs a name"),
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newSidecarSet("s", "nginx", func(s *appsv1beta1.SidecarSet) { s.Spec.Volumes = tc.volumes })
			errs, _ := ValidateSidecarSet(s, nil, Options{})
			checkErrors(t, tc.want, errs)
		})
	}
}

func TestExactlyOne_UndefaultedVolumeNeedsASource(t *testing.T) {
	t.Parallel()
	got := validateVolumes([]corev1.Volume{{Name: "v"}}, field.NewPath("spec", "volumes"))
	want := field.ErrorList{field.Required(field.NewPath("spec", "volumes").Index(0), "exactly one of hostPath, emptyDir, "+
		"gcePersistentDisk, awsElasticBlockStore, gitRepo, secret, nfs, iscsi, glusterfs, persistentVolumeClaim, rbd, "+
		"flexVolume, cinder, cephfs, flocker, downwardAPI, fc, azureFile, configMap, vsphereVolume, quobyte, azureDisk, "+
		"photonPersistentDisk, projected, portworxVolume, scaleIO, storageos, csi, ephemeral, image must be set")}
	checkErrors(t, want, got)
}
