package webhook_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	appsv1alpha1 "github.com/sidecarset-operator/sidecarset-operator/api/v1alpha1"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
	"github.com/sidecarset-operator/sidecarset-operator/test/integration/framework"
)

// seed reads a SidecarSet of the seed documents (shared with the CRD
// suite, which proves they apply as written).
func seed(file string) *appsv1beta1.SidecarSet {
	data, err := os.ReadFile(filepath.Join(seedDir, file))
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	// The seeds are v1alpha1, converted to the hub as the API server does.
	written := &appsv1alpha1.SidecarSet{}
	gomega.Expect(yaml.UnmarshalStrict(data, written)).To(gomega.Succeed())
	s := &appsv1beta1.SidecarSet{}
	gomega.Expect(written.ConvertTo(s)).To(gomega.Succeed())
	return s
}

// applySeed creates a seed SidecarSet as written; it is deleted when the
// spec ends.
func applySeed(ctx context.Context, file string) *appsv1beta1.SidecarSet {
	s, _ := createSidecarSet(ctx, seed(file))
	return s
}

// samplePod is a pod labelled app=sample, as the seeds' SidecarSets select.
func samplePod(ns string) *builder.PodWrapper {
	return builder.MakePod("sample", ns).Label("app", "sample")
}

// pinSeedToOlderImage records a first version of a seed SidecarSet with an
// older image (and custom version), so that the seed, applied next, can pin it.
func pinSeedToOlderImage(ctx context.Context, file, customVersion string) (*appsv1beta1.SidecarSet, string) {
	older := seed(file)
	older.Spec.InjectionStrategy = appsv1beta1.SidecarSetInjectionStrategy{}
	older.Spec.Containers[0].Image = "nginx:1.24"
	older.Spec.CustomVersion = customVersion
	older, _ = createSidecarSet(ctx, older)
	rev := recordedRevision(ctx, older, "")
	if customVersion != "" {
		gomega.Eventually(func(g gomega.Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(rev), rev)).To(gomega.Succeed())
			g.Expect(rev.Labels).To(gomega.HaveKeyWithValue(appsv1beta1.SidecarSetCustomVersionLabel, customVersion))
		}).WithContext(ctx).Should(gomega.Succeed())
	}
	return older, rev.Name
}

// updateToSeed replaces the spec and labels of a SidecarSet by the seed's.
func updateToSeed(ctx context.Context, s *appsv1beta1.SidecarSet, want *appsv1beta1.SidecarSet) {
	_, err := patchSidecarSet(ctx, s, func(s *appsv1beta1.SidecarSet) {
		s.Labels = want.Labels
		s.Spec = want.Spec
	})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
}

var _ = ginkgo.Describe("The seed documents' injection examples", func() {
	var ns string
	ginkgo.BeforeEach(func(ctx ginkgo.SpecContext) {
		ns = newNamespace(ctx, nil)
	})

	ginkgo.It("should inject 01-sidecarset.yaml into 20-test-pod.yaml", func(ctx ginkgo.SpecContext) {
		s := applySeed(ctx, "01-sidecarset.yaml")
		data, err := os.ReadFile(filepath.Join(seedDir, "20-test-pod.yaml"))
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		p := &corev1.Pod{}
		gomega.Expect(yaml.UnmarshalStrict(data, p)).To(gomega.Succeed())
		p.Namespace = ns

		injected, _ := createInjected(ctx, p, s.Name)
		gomega.Expect(containerNames(injected.Spec.Containers)).To(gomega.Equal([]string{"sidecar1", "app"}))
		sidecar := container(injected.Spec.Containers, "sidecar1")
		gomega.Expect(sidecar.Image).To(gomega.Equal("centos:6.7"))
		gomega.Expect(sidecar.Command).To(gomega.Equal([]string{"sleep", "999d"}))
		gomega.Expect(mountStrings(sidecar.VolumeMounts)).To(gomega.Equal([]string{"log-volume:/var/log"}))
		gomega.Expect(volumeNames(injected.Spec.Volumes)).To(gomega.Equal([]string{"log-volume"}))
		gomega.Expect(injected.Spec.Volumes[0].EmptyDir).NotTo(gomega.BeNil())
	})

	ginkgo.It("should inject 02-functions.yaml's container and init container into pods of namespace ns-1 only", func(ctx ginkgo.SpecContext) {
		nsOne := &corev1.Namespace{}
		nsOne.Name = "ns-1"
		gomega.Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, nsOne))).To(gomega.Succeed())
		s := applySeed(ctx, "02-functions.yaml")

		p, _ := createInjected(ctx, samplePod("ns-1").Obj(), s.Name)
		gomega.Expect(containerNames(p.Spec.Containers)).To(gomega.Equal([]string{"nginx", "main"}))
		gomega.Expect(containerNames(p.Spec.InitContainers)).To(gomega.Equal([]string{"init-container"}))
		gomega.Expect(container(p.Spec.InitContainers, "init-container").Command).To(gomega.Equal(
			[]string{"/bin/sh", "-c", "sleep 5 && echo 'init container success'"}))

		elsewhere, _, err := createPod(ctx, samplePod(ns).Obj())
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(containerNames(elsewhere.Spec.Containers)).To(gomega.Equal([]string{"main"}))
	})

	ginkgo.It("should inject 03-namespace-selector.yaml into pods of namespaces labelled environment=production", func(ctx ginkgo.SpecContext) {
		production := newNamespace(ctx, map[string]string{"environment": "production"})
		s := applySeed(ctx, "03-namespace-selector.yaml")
		p, _ := createInjected(ctx, samplePod(production).Obj(), s.Name)
		gomega.Expect(containerNames(p.Spec.Containers)).To(gomega.Equal([]string{"nginx", "main"}))
		other, _, err := createPod(ctx, samplePod(ns).Obj())
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(containerNames(other.Spec.Containers)).To(gomega.Equal([]string{"main"}))
	})

	ginkgo.DescribeTable("should reject 04's volume name nginx.conf, and inject the sidecar with its transferred envs once renamed",
		func(ctx ginkgo.SpecContext, file string, wantMounts []string) {
			// A pod volume name is a DNS label: a pod with the seed's volume
			// would be rejected by the API server, so the SidecarSet is.
			asWritten := seed(file)
			gomega.Expect(causes(k8s.Create(ctx, asWritten.DeepCopy()))).To(gomega.Equal([]string{
				`spec.volumes[0].name: Invalid value: "nginx.conf": must not contain dots`}))
			renamed := asWritten.DeepCopy()
			renamed.Spec.Volumes[0].Name = "nginx-conf"
			renamed.Spec.Containers[0].VolumeMounts[0].Name = "nginx-conf"
			s, _ := createSidecarSet(ctx, renamed)

			main := builder.MakeContainer("main", "busybox:1.36").Env("PROXY_IP", "10.0.0.7").Mount("data", "/data")
			tc := builder.MakeContainer("tc", "busybox:1.36").Env("TC", "tc-value")
			p, _ := createInjected(ctx, samplePod(ns).Label("cName", "tc").Containers(main, tc).
				Volumes(builder.EmptyDir("data")).Obj(), s.Name)
			nginx := container(p.Spec.Containers, "nginx")
			gomega.Expect(containerNames(p.Spec.Containers)).To(gomega.Equal([]string{"nginx", "main", "tc"}))
			gomega.Expect(mountStrings(nginx.VolumeMounts)).To(gomega.Equal(wantMounts))
			gomega.Expect(envStrings(nginx.Env)).To(gomega.Equal([]string{"IS_INJECTED=true", "PROXY_IP=10.0.0.7", "TC=tc-value"}))
			gomega.Expect(volumeNames(p.Spec.Volumes)).To(gomega.Equal([]string{"data", "nginx-conf"}))
			gomega.Expect(p.Spec.Volumes[1].HostPath.Path).To(gomega.Equal("/data/nginx/conf"))
		},
		ginkgo.Entry("disabled", "04-injection-disabled.yaml", []string{"nginx-conf:/nginx/conf"}),
		ginkgo.Entry("enabled", "04-injection-enabled.yaml", []string{"nginx-conf:/nginx/conf", "data:/data"}),
	)

	ginkgo.It("should inject nothing with 05-injection-paused.yaml", func(ctx ginkgo.SpecContext) {
		applySeed(ctx, "05-injection-paused.yaml")
		syncRegistry(ctx, ns)
		p, _, err := createPod(ctx, samplePod(ns).Obj())
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(containerNames(p.Spec.Containers)).To(gomega.Equal([]string{"main"}))
		gomega.Expect(p.Annotations).To(gomega.BeEmpty())
	})

	ginkgo.It("should add 06-image-pull-secrets.yaml's secret to the pod", func(ctx ginkgo.SpecContext) {
		s := applySeed(ctx, "06-image-pull-secrets.yaml")
		p, _ := createInjected(ctx, samplePod(ns).Obj(), s.Name)
		gomega.Expect(p.Spec.ImagePullSecrets).To(gomega.Equal([]corev1.LocalObjectReference{{Name: "my-secret"}}))
	})

	ginkgo.It("should reject 07-revision-name.yaml's placeholder, and inject the revision it names once real", func(ctx ginkgo.SpecContext) {
		asWritten := seed("07-revision-name.yaml")
		const placeholder = "<specific-controllerRevision-name>"
		gomega.Expect(causes(k8s.Create(ctx, asWritten.DeepCopy()))).To(gomega.Equal([]string{fmt.Sprintf(
			`spec.injectionStrategy.revision.revisionName: Invalid value: %q: ControllerRevision %q cannot be resolved `+
				`(ControllerRevision %s/%s: ControllerRevision.apps %q not found): pods matching this SidecarSet would be rejected `+
				`at creation while it is missing; pin an existing revision (kubectl get controllerrevisions -n %s -l kruise.io/sidecarset-name=sidecarset) `+
				`or remove injectionStrategy.revision`,
			placeholder, placeholder, framework.OperatorNamespace, placeholder, placeholder, framework.OperatorNamespace)}))

		older, revision := pinSeedToOlderImage(ctx, "07-revision-name.yaml", "")
		asWritten.Spec.InjectionStrategy.Revision.RevisionName = new(revision)
		updateToSeed(ctx, older, asWritten)
		p, _ := createOnceDryRun(ctx, samplePod(ns).Obj(), withImage("nginx", "nginx:1.24"))
		gomega.Expect(readState(p).Hashes[older.Name].ControllerRevision).To(gomega.Equal(revision))
	})

	ginkgo.It("should reject 08-custom-version.yaml until version-1 is recorded, then inject it", func(ctx ginkgo.SpecContext) {
		asWritten := seed("08-custom-version.yaml")
		err := k8s.Create(ctx, asWritten.DeepCopy())
		gomega.Expect(causes(err)).To(gomega.HaveLen(1))
		gomega.Expect(causes(err)[0]).To(gomega.HavePrefix(`spec.injectionStrategy.revision.customVersion: Invalid value: "version-1": ` +
			`no ControllerRevision with custom version "version-1" can be resolved`))

		older, revision := pinSeedToOlderImage(ctx, "08-custom-version.yaml",
			"version-1")
		updateToSeed(ctx, older, asWritten)
		p, _ := createOnceDryRun(ctx, samplePod(ns).Obj(), withImage("nginx", "nginx:1.24"))
		gomega.Expect(readState(p).Hashes[older.Name].ControllerRevision).To(gomega.Equal(revision))
	})

	ginkgo.It("should inject 09-native-sidecar.yaml's native sidecar as an init container", func(ctx ginkgo.SpecContext) {
		s := applySeed(ctx, "09-native-sidecar.yaml")
		p, _ := createInjected(ctx, samplePod(ns).Obj(), s.Name)
		gomega.Expect(containerNames(p.Spec.InitContainers)).To(gomega.Equal([]string{"sidecar"}))
		sidecar := container(p.Spec.InitContainers, "sidecar")
		gomega.Expect(sidecar.RestartPolicy).To(gomega.HaveValue(gomega.Equal(corev1.ContainerRestartPolicyAlways)))
		gomega.Expect(sidecar.Lifecycle.PostStart.Exec.Command).To(gomega.Equal([]string{"/bin/sh", "-c", "sleep 10"}))
		gomega.Expect(readState(p).Hashes[s.Name].SidecarList).To(gomega.Equal([]string{"sidecar"}))
	})

	ginkgo.DescribeTable("should inject the nginx sidecar of the update strategy examples",
		func(ctx ginkgo.SpecContext, file string) {
			s := applySeed(ctx, file)
			p, _ := createInjected(ctx, samplePod(ns).Obj(), s.Name)
			gomega.Expect(containerNames(p.Spec.Containers)).To(gomega.Equal([]string{"nginx", "main"}))
			gomega.Expect(container(p.Spec.Containers, "nginx").Image).To(gomega.Equal("nginx:alpine"))
			gomega.Expect(readState(p).Hashes[s.Name].Hash).To(gomega.Equal(s.Annotations[appsv1beta1.SidecarSetHashAnnotation]))
		},
		ginkgo.Entry(nil, "10-partition.yaml"),
		ginkgo.Entry(nil, "11-max-unavailable.yaml"),
		ginkgo.Entry(nil, "12-paused.yaml"),
		ginkgo.Entry(nil, "13-canary.yaml"),
		ginkgo.Entry(nil, "14-weight-priority.yaml"),
		ginkgo.Entry(nil, "15-order-priority.yaml"),
		ginkgo.Entry(nil, "16-scatter.yaml"),
	)

	ginkgo.It("should inject 17-hot-upgrade.yaml's twins", func(ctx ginkgo.SpecContext) {
		s := applySeed(ctx, "17-hot-upgrade.yaml")
		p, _ := createInjected(ctx, builder.MakePod("hot", ns).Label("app", "hotupgrade").Obj(), s.Name)
		gomega.Expect(containerNames(p.Spec.Containers)).To(gomega.Equal([]string{"sidecar-1", "sidecar-2", "main"}))
		gomega.Expect(container(p.Spec.Containers, "sidecar-1").Image).To(gomega.Equal("openkruise/hotupgrade-sample:sidecarv1"))
		gomega.Expect(container(p.Spec.Containers, "sidecar-2").Image).To(gomega.Equal("openkruise/hotupgrade-sample:empty"))
		for _, twin := range []string{"sidecar-1", "sidecar-2"} {
			c := container(p.Spec.Containers, twin)
			gomega.Expect(c.ImagePullPolicy).To(gomega.Equal(corev1.PullAlways))
			gomega.Expect(c.Lifecycle.PostStart.Exec.Command).To(gomega.Equal([]string{"/bin/sh", "/migrate.sh"}))
		}
		gomega.Expect(p.Annotations).To(gomega.HaveKeyWithValue(appsv1beta1.WorkingHotUpgradeContainerAnnotation, `{"sidecar":"sidecar-1"}`))
	})

	ginkgo.DescribeTable("should patch 18's pod metadata, allowed by 19-whitelist-configmap.yaml",
		func(ctx ginkgo.SpecContext, file, wantPriority string) {
			s := applySeed(ctx, file)
			fresh, _ := createInjected(ctx, samplePod(ns).Obj(), s.Name)
			gomega.Expect(fresh.Annotations).To(gomega.HaveKeyWithValue("oom-score", `{"log-agent": 1}`))
			gomega.Expect(fresh.Annotations).To(gomega.HaveKeyWithValue("custom.example.com/sidecar-configuration",
				`{"command": "/home/admin/bin/start.sh", "log-level": "3"}`))
			gomega.Expect(fresh.Annotations).To(gomega.HaveKeyWithValue("apps.kruise.io/container-launch-priority", "Ordered"))

			annotated, _ := createInjected(ctx, samplePod(ns).Annotation("oom-score", `{"app": 5}`).
				Annotation("apps.kruise.io/container-launch-priority", "Manual").Obj(), s.Name)
			gomega.Expect(annotated.Annotations).To(gomega.HaveKeyWithValue("oom-score", `{"app":5,"log-agent":1}`))
			gomega.Expect(annotated.Annotations).To(gomega.HaveKeyWithValue("apps.kruise.io/container-launch-priority", wantPriority))
		},
		ginkgo.Entry("Overwrite", "18-patch-pod-metadata.yaml", "Ordered"),
		ginkgo.Entry("Retain", "18-patch-pod-metadata-retain.yaml", "Manual"),
	)
})
