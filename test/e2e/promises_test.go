package e2e_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
	"github.com/sidecarset-operator/sidecarset-operator/test/demo"
)

// What the user manual promises, taken literally: partition is the number
// of pods kept on the old version, counted over every matched pod; a full
// replace of the SidecarSet that moves an image to or from :latest still
// upgrades in place; and the status counts are near the top of
// `kubectl get -o yaml`'s status.
var _ = ginkgo.Describe("The manual's promises", ginkgo.Label("promises", "seed"), func() {
	var ns string
	ginkgo.BeforeEach(func(ctx ginkgo.SpecContext) {
		ns = createNamespace(ctx, "promise")
	})

	ginkgo.It("should keep partition pods on the old version counting the pods that cannot be upgraded in place", func(ctx ginkgo.SpecContext) {
		s := createSidecarSet(ctx, sidecarSet(ns, "sidecar", v1).MaxUnavailable(intstr.FromInt32(6)).Obj())
		setMode := func(s *appsv1beta1.SidecarSet, mode string) {
			s.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "MODE", Value: mode}}
		}
		updateSidecarSet(ctx, s.Name, func(s *appsv1beta1.SidecarSet) { setMode(s, "a") })
		old := runDeployment(ctx, app(ns, "old", 4).Obj(), s.Name)

		ginkgo.By("changing the sidecar's env, then creating 2 more pods: the 4 older ones can no longer be upgraded in place")
		gen := updateSidecarSet(ctx, s.Name, func(s *appsv1beta1.SidecarSet) { setMode(s, "b") })
		expectStatus(ctx, s.Name, gen, counts{Matched: 4, Updated: 0, Ready: 4, UpdatedReady: 0})
		runDeployment(ctx, app(ns, "new", 2).Obj(), s.Name)
		expectStatus(ctx, s.Name, gen, counts{Matched: 6, Updated: 2, Ready: 6, UpdatedReady: 2})

		ginkgo.By("setting partition 2 and a new image: 4 pods already stay on the old version, so both others are upgraded")
		gen = updateSidecarSet(ctx, s.Name, func(s *appsv1beta1.SidecarSet) {
			s.Spec.Containers[0].Image = v2
			s.Spec.UpdateStrategy.Partition = new(intstr.FromInt32(2))
		})
		expectRolledOut(ctx, ns, map[string]string{"deployment": "new"}, "sidecar", v2)
		expectStatus(ctx, s.Name, gen, counts{Matched: 6, Updated: 2, Ready: 6, UpdatedReady: 2})
		gomega.Consistently(func(g gomega.Gomega) {
			pods := listPods(ctx, g, ns, appLabels)
			g.Expect(withImage(pods, "sidecar", v2)).To(gomega.Equal(2))
			g.Expect(withImage(pods, "sidecar", v1)).To(gomega.Equal(4))
		}).WithContext(ctx).Should(gomega.Succeed())
		for _, p := range listPods(ctx, gomega.Default, ns, map[string]string{"deployment": "old"}) {
			gomega.Expect(containerStatus(&p, "sidecar").RestartCount).To(gomega.BeZero(), "pod %s", p.Name)
		}
		gomega.Expect(old).To(gomega.HaveLen(4))
	})

	ginkgo.DescribeTable("should upgrade in place when a full replace moves the image to or from :latest without imagePullPolicy",
		func(ctx ginkgo.SpecContext, from, to string) {
			name := ns
			manifest := func(image string) string {
				path := filepath.Join(ginkgo.GinkgoT().TempDir(), "sidecarset.yaml")
				gomega.Expect(os.WriteFile(path, []byte(replaceManifest(name, ns, image)), 0o600)).To(gomega.Succeed())
				return path
			}
			kubectl(ctx, "create", "-f", manifest(from))
			ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
				kubectl(ctx, "delete", "sidecarset", name, "--ignore-not-found")
			})
			expectObserved(ctx, name)
			before := runDeployment(ctx, app(ns, "web", 3).Obj(), name)
			gomega.Expect(specContainer(&before[0], "sidecar").ImagePullPolicy).To(gomega.Equal(appsv1beta1.DefaultPullPolicy(from)))

			ginkgo.By("replacing the SidecarSet (a PUT) with the manifest, only the image changed")
			kubectl(ctx, "replace", "-f", manifest(to))
			s := getSidecarSet(ctx, gomega.Default, name)
			gomega.Expect(s.Spec.Containers[0].ImagePullPolicy).To(gomega.Equal(appsv1beta1.DefaultPullPolicy(to)))
			gomega.Expect(s.Spec.Containers[0].ImagePullPolicy).NotTo(gomega.Equal(appsv1beta1.DefaultPullPolicy(from)))

			pods := expectRolledOut(ctx, ns, appLabels, "sidecar", to, rolloutTimeout)
			expectStatus(ctx, name, s.Generation, counts{Matched: 3, Updated: 3, Ready: 3, UpdatedReady: 3})
			uids := map[types.UID]bool{}
			for _, p := range before {
				uids[p.UID] = true
			}
			for _, p := range pods {
				gomega.Expect(uids).To(gomega.HaveKey(p.UID), "pod %s was recreated", p.Name)
				gomega.Expect(containerStatus(&p, "sidecar").RestartCount).To(gomega.Equal(int32(1)), "pod %s", p.Name)
				gomega.Expect(containerStatus(&p, "main").RestartCount).To(gomega.BeZero(), "pod %s", p.Name)
				if c := upgradableCondition(&p); c != nil {
					gomega.Expect(c.Status).To(gomega.Equal(corev1.ConditionTrue), "pod %s: %s", p.Name, c.Message)
				}
			}
		},
		ginkgo.Entry("from centos:6.7 (IfNotPresent) to centos:latest (Always)", "centos:6.7", "centos:latest"),
		ginkgo.Entry("from centos:latest (Always) to centos:7 (IfNotPresent)", "centos:latest", "centos:7"),
	)

	ginkgo.It("should show the four counts within the first 12 lines of the status in kubectl get -o yaml, before and after an upgrade", func(ctx ginkgo.SpecContext) {
		// The manual's SidecarSet and pod, with a label of their own: the
		// walkthrough's test-sidecarset selects app=nginx everywhere.
		name, labels := ns, map[string]string{"app": "promise-nginx"}
		s := createSidecarSet(ctx, builder.MakeSidecarSet(name, "app", labels["app"]).Namespace(ns).
			Containers(builder.MakeContainer("sidecar1", "centos:6.7").Command("sleep", "999d").Mount("log-volume", "/var/log")).
			Volumes(builder.EmptyDir("log-volume")).MaxUnavailable(intstr.FromInt32(1)).Obj())
		runPod(ctx, builder.MakePod("test-pod", ns).Label("app", labels["app"]).
			Containers(builder.MakeContainer("app", "nginx:1.15.1")).Obj(), s.Name, true)
		expectStatus(ctx, name, 1, counts{Matched: 1, Updated: 1, Ready: 1, UpdatedReady: 1})
		expectCountsNearTop(ctx, name, 1)

		ginkgo.By("changing the image, waiting for the upgrade, reading the status again")
		gen := setImage(ctx, name, "sidecar1", "centos:7")
		expectRolledOut(ctx, ns, labels, "sidecar1", "centos:7")
		expectStatus(ctx, name, gen, counts{Matched: 1, Updated: 1, Ready: 1, UpdatedReady: 1})
		expectCountsNearTop(ctx, name, gen)
	})
})

// replaceManifest is a SidecarSet manifest as a GitOps tool or a file kept
// for kubectl replace holds it: no imagePullPolicy and no other default.
func replaceManifest(name, ns, image string) string {
	return fmt.Sprintf(`apiVersion: apps.kruise.io/v1alpha1
kind: SidecarSet
metadata:
  name: %s
spec:
  namespace: %s
  selector:
    matchLabels:
      app: web
  updateStrategy:
    type: RollingUpdate
    maxUnavailable: 3
  containers:
  - name: sidecar
    image: %s
    command: ["sleep", "999d"]
`, name, ns, image)
}

// expectCountsNearTop waits until kubectl get -o yaml shows the status of
// the generation with matchedPods, observedGeneration, readyPods and
// updatedPods within the first demo.StatusHeadLines lines after `status:`.
func expectCountsNearTop(ctx context.Context, name string, generation int64) {
	gomega.EventuallyWithOffset(1, func(g gomega.Gomega) {
		out, err := env.Cluster.RunKubectl(ctx, "get", "sidecarset", name, "-o", "yaml")
		g.Expect(err).NotTo(gomega.HaveOccurred())
		head, err := demo.StatusHead(string(out), demo.StatusHeadLines)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		for _, want := range []string{"matchedPods: 1", fmt.Sprintf("observedGeneration: %d", generation), "readyPods: 1", "updatedPods: 1"} {
			g.Expect(head).To(gomega.ContainElement("  "+want), "the first %d lines of the status:\n%s\nthe object:\n%s",
				demo.StatusHeadLines, strings.Join(head, "\n"), out)
		}
	}).WithContext(ctx).Should(gomega.Succeed())
}
