package webhook_test

import (
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
)

// fieldEnv is an env var read from a pod field through the downward API.
func fieldEnv(name, fieldPath string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: fieldPath}}}
}

var _ = ginkgo.Describe("Pod injection of volumes and environment", func() {
	var ns string
	ginkgo.BeforeEach(func(ctx ginkgo.SpecContext) {
		ns = newNamespace(ctx, nil)
	})

	ginkgo.It("should add only the volumes the sidecars mount, after the pod's, keeping the pod's definition", func(ctx ginkgo.SpecContext) {
		s, _ := createSidecarSet(ctx, sidecarSet(ns, "volumes").Containers(
			builder.MakeContainer("logger", "fluentbit:v1").Mount("logs", "/var/log").Mount("shared", "/shared"),
		).InitContainers(
			builder.MakeContainer("fetch", "busybox:1.36").Mount("config", "/config"),
		).Volumes(
			builder.EmptyDir("unused"), builder.EmptyDir("logs"), builder.HostPath("shared", "/data/shared"), builder.EmptyDir("config"),
		).Obj())

		p, warnings := createInjected(ctx, pod(ns).
			Volumes(builder.EmptyDir("pod-data"), builder.EmptyDir("shared")).Obj(), s.Name)
		gomega.Expect(volumeNames(p.Spec.Volumes)).To(gomega.Equal([]string{"pod-data", "shared", "config", "logs"}))
		gomega.Expect(p.Spec.Volumes[1].EmptyDir).NotTo(gomega.BeNil(), "the pod's definition of shared wins")
		gomega.Expect(warnings).To(gomega.Equal([]string{`SidecarSet "` + s.Name +
			`": volume "shared" is also defined, differently, by the pod; the sidecars use that definition`}))
	})

	ginkgo.It("should share the app containers' mounts, bringing the envs their subPathExpr reads", func(ctx ginkgo.SpecContext) {
		s, _ := createSidecarSet(ctx, sidecarSet(ns, "share").Containers(
			builder.MakeContainer("logger", "fluentbit:v1").ShareVolumes().Mount("own", "/data"),
			builder.MakeContainer("quiet", "busybox:1.36"),
		).Volumes(builder.EmptyDir("own")).Obj())

		app := builder.MakeContainer("app", "nginx:1.25").
			Mount("data", "/data").MountSubPathExpr("logs", "/var/log/app", "$(POD_NAME)/$(MISSING)").Mount("cache", "/cache")
		app.Container.Env = []corev1.EnvVar{fieldEnv("POD_NAME", "metadata.name"), {Name: "OTHER", Value: "o"}}
		worker := builder.MakeContainer("worker", "busybox:1.36").Mount("cache", "/cache").Mount("scratch", "/scratch")
		p, _ := createInjected(ctx, pod(ns).Containers(app, worker).Volumes(
			builder.EmptyDir("data"), builder.EmptyDir("logs"), builder.EmptyDir("cache"), builder.EmptyDir("scratch"),
		).Obj(), s.Name)

		logger := container(p.Spec.Containers, "logger")
		gomega.Expect(mountStrings(logger.VolumeMounts)).To(gomega.Equal([]string{
			"own:/data", "logs:/var/log/app:$(POD_NAME)/$(MISSING)", "cache:/cache", "scratch:/scratch"}))
		gomega.Expect(envStrings(logger.Env)).To(gomega.Equal([]string{"IS_INJECTED=true", "POD_NAME<-metadata.name"}))
		gomega.Expect(container(p.Spec.Containers, "quiet").VolumeMounts).To(gomega.BeEmpty())
		gomega.Expect(volumeNames(p.Spec.Volumes)).To(gomega.Equal([]string{"data", "logs", "cache", "scratch", "own"}))
	})

	ginkgo.It("should share the app containers' volume devices with shareVolumeDevicePolicy", func(ctx ginkgo.SpecContext) {
		s, _ := createSidecarSet(ctx, sidecarSet(ns, "devices").Containers(
			builder.MakeContainer("backup", "busybox:1.36").ShareDevices().Device("own-block", "/dev/own"),
		).Volumes(builder.PVC("own-block", "own-claim")).Obj())

		db := builder.MakeContainer("db", "postgres:16").Device("block", "/dev/xvda").Device("other", "/dev/own").Mount("conf", "/etc/db")
		p, _ := createInjected(ctx, pod(ns).Containers(db).Volumes(
			builder.PVC("block", "block-claim"), builder.PVC("other", "other-claim"), builder.EmptyDir("conf")).Obj(), s.Name)

		backup := container(p.Spec.Containers, "backup")
		gomega.Expect(backup.VolumeDevices).To(gomega.Equal([]corev1.VolumeDevice{
			{Name: "own-block", DevicePath: "/dev/own"}, {Name: "block", DevicePath: "/dev/xvda"}}))
		gomega.Expect(backup.VolumeMounts).To(gomega.BeEmpty(), "shareVolumeDevicePolicy shares devices, not mounts")
		gomega.Expect(volumeNames(p.Spec.Volumes)).To(gomega.Equal([]string{"block", "other", "conf", "own-block"}))
	})

	ginkgo.It("should transfer envName and envNames from a named container, sorted, never overriding the sidecar's own", func(ctx ginkgo.SpecContext) {
		s, _ := createSidecarSet(ctx, sidecarSet(ns, "transfer").Containers(
			builder.MakeContainer("proxy", "envoy:v1").Env("C", "sidecar-c").TransferEnvFrom("main", "PROXY_IP", "C", "A", "ABSENT"),
		).Obj())

		main := builder.MakeContainer("main", "busybox:1.36").Env("A", "1").Env("B", "2").Env("C", "3").Env("PROXY_IP", "10.0.0.1")
		p, _ := createInjected(ctx, pod(ns).Containers(main).Obj(), s.Name)
		gomega.Expect(envStrings(container(p.Spec.Containers, "proxy").Env)).To(gomega.Equal([]string{
			"C=sidecar-c", "IS_INJECTED=true", "A=1", "PROXY_IP=10.0.0.1"}))
	})

	ginkgo.It("should transfer envs from the container a pod label, annotation or its name designates", func(ctx ginkgo.SpecContext) {
		s, _ := createSidecarSet(ctx, sidecarSet(ns, "from-field").Containers(
			builder.MakeContainer("proxy", "envoy:v1").
				TransferEnvFromField("metadata.labels['cName']", "FROM_LABEL").
				TransferEnvFromField("metadata.annotations['cName']", "FROM_ANNOTATION").
				TransferEnvFromField("metadata.name", "FROM_NAME"),
		).Obj())

		p, warnings := createInjected(ctx, pod(ns).Name("worker").
			Label("cName", "labelled").Annotation("cName", "annotated").Containers(
			builder.MakeContainer("labelled", "busybox:1.36").Env("FROM_LABEL", "l").Env("FROM_NAME", "wrong"),
			builder.MakeContainer("annotated", "busybox:1.36").Env("FROM_ANNOTATION", "a"),
			builder.MakeContainer("worker", "busybox:1.36").Env("FROM_NAME", "n"),
		).Obj(), s.Name)
		gomega.Expect(warnings).To(gomega.BeEmpty())
		gomega.Expect(envStrings(container(p.Spec.Containers, "proxy").Env)).To(gomega.Equal([]string{
			"IS_INJECTED=true", "FROM_LABEL=l", "FROM_ANNOTATION=a", "FROM_NAME=n"}))
	})

	ginkgo.It("should transfer nothing when the designated container does not exist", func(ctx ginkgo.SpecContext) {
		s, _ := createSidecarSet(ctx, sidecarSet(ns, "no-source").Containers(
			builder.MakeContainer("proxy", "envoy:v1").TransferEnvFromField("metadata.labels['cName']", "X").TransferEnvFrom("ghost", "X"),
		).Obj())

		p, warnings := createInjected(ctx, pod(ns).Label("cName", "nobody").Containers(
			builder.MakeContainer("main", "busybox:1.36").Env("X", "x")).Obj(), s.Name)
		gomega.Expect(warnings).To(gomega.BeEmpty())
		gomega.Expect(envStrings(container(p.Spec.Containers, "proxy").Env)).To(gomega.Equal([]string{"IS_INJECTED=true"}))
	})
})
