package e2e_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"

	"github.com/distribution/reference"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
)

// Every spec works in its own namespace. Its SidecarSets are named after
// the namespace and restricted to it (spec.namespace), so SidecarSets of
// different specs never overlap, conflict or touch each other's pods.

// createNamespace creates a namespace for one spec, deleted when it ends.
func createNamespace(ctx context.Context, prefix string) string {
	ns := builder.MakeNamespace(prefix).Obj()
	gomega.Expect(env.Client.Create(ctx, ns)).To(gomega.Succeed())
	ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
		gomega.Expect(client.IgnoreNotFound(env.Client.Delete(ctx, ns))).To(gomega.Succeed())
	})
	return ns.Name
}

// getPod reads a pod.
func getPod(ctx context.Context, g gomega.Gomega, pod *corev1.Pod) *corev1.Pod {
	got := &corev1.Pod{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(pod), got)).To(gomega.Succeed())
	return got
}

// listPods lists the pods of a namespace with the labels.
func listPods(ctx context.Context, g gomega.Gomega, ns string, labels map[string]string) []corev1.Pod {
	list := &corev1.PodList{}
	g.Expect(env.Client.List(ctx, list, client.InNamespace(ns), client.MatchingLabels(labels))).To(gomega.Succeed())
	return list.Items
}

// podReady reports the pod's Ready condition.
func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// appLabels are the labels of every spec's application pods.
var appLabels = map[string]string{"app": "web"}

// sidecarSet starts a SidecarSet of the spec's namespace, selecting its
// application pods (app=web), with one sleeping sidecar container.
func sidecarSet(ns, container, image string) *builder.SidecarSetWrapper {
	return builder.MakeSidecarSet(ns, "app", "web").Namespace(ns).
		Containers(builder.MakeContainer(container, image).Command("sleep", "999d"))
}

// app starts a Deployment of the spec's application pods (app=web), each
// running one container "main".
func app(ns, name string, replicas int32) *builder.DeploymentWrapper {
	return builder.MakeDeployment(name, ns, replicas).PodLabel("app", "web").
		Containers(builder.MakeContainer("main", "nginx:1.25"))
}

// createSidecarSet creates a SidecarSet, deletes it when the spec ends and
// waits until the controller has seen it.
func createSidecarSet(ctx context.Context, s *appsv1beta1.SidecarSet) *appsv1beta1.SidecarSet {
	gomega.Expect(env.Client.Create(ctx, s)).To(gomega.Succeed())
	ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
		gomega.Expect(client.IgnoreNotFound(env.Client.Delete(ctx, s))).To(gomega.Succeed())
	})
	expectObserved(ctx, s.Name)
	return s
}

// getSidecarSet reads a SidecarSet.
func getSidecarSet(ctx context.Context, g gomega.Gomega, name string) *appsv1beta1.SidecarSet {
	s := &appsv1beta1.SidecarSet{}
	g.Expect(env.Client.Get(ctx, types.NamespacedName{Name: name}, s)).To(gomega.Succeed())
	return s
}

// updateSidecarSet changes a SidecarSet (retrying on conflicts) and returns
// its new generation.
func updateSidecarSet(ctx context.Context, name string, mutate func(*appsv1beta1.SidecarSet)) int64 {
	var generation int64
	gomega.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s := &appsv1beta1.SidecarSet{}
		if err := env.Client.Get(ctx, types.NamespacedName{Name: name}, s); err != nil {
			return err
		}
		mutate(s)
		if err := env.Client.Update(ctx, s); err != nil {
			return err
		}
		generation = s.Generation
		return nil
	})).To(gomega.Succeed())
	return generation
}

// setImage changes the image of one of a SidecarSet's containers or init
// containers and returns the new generation.
func setImage(ctx context.Context, name, container, image string) int64 {
	return updateSidecarSet(ctx, name, func(s *appsv1beta1.SidecarSet) {
		c := sidecarContainer(s, container)
		gomega.Expect(c).NotTo(gomega.BeNil(), "SidecarSet %s has no container %s", name, container)
		c.Image = image
	})
}

// sidecarContainer returns a SidecarSet's container or init container.
func sidecarContainer(s *appsv1beta1.SidecarSet, name string) *appsv1beta1.SidecarContainer {
	for _, list := range [][]appsv1beta1.SidecarContainer{s.Spec.Containers, s.Spec.InitContainers} {
		if i := slices.IndexFunc(list, func(c appsv1beta1.SidecarContainer) bool { return c.Name == name }); i >= 0 {
			return &list[i]
		}
	}
	return nil
}

// counts are the status counts of a SidecarSet.
type counts struct {
	Matched, Updated, Ready, UpdatedReady int32
}

func countsOf(s *appsv1beta1.SidecarSet) counts {
	return counts{s.Status.MatchedPods, s.Status.UpdatedPods, s.Status.ReadyPods, s.Status.UpdatedReadyPods}
}

// expectObserved waits until the controller has written the status of the
// SidecarSet's current generation.
func expectObserved(ctx context.Context, name string) {
	gomega.EventuallyWithOffset(1, func(g gomega.Gomega) {
		s := getSidecarSet(ctx, g, name)
		g.Expect(s.Status.ObservedGeneration).To(gomega.Equal(s.Generation))
	}).WithContext(ctx).Should(gomega.Succeed())
}

// expectStatus waits until the status of the given generation shows the
// counts.
func expectStatus(ctx context.Context, name string, generation int64, want counts, timeout ...any) {
	gomega.EventuallyWithOffset(1, func(g gomega.Gomega) {
		s := getSidecarSet(ctx, g, name)
		g.Expect(s.Status.ObservedGeneration).To(gomega.Equal(generation))
		g.Expect(countsOf(s)).To(gomega.Equal(want))
	}, timeout...).WithContext(ctx).Should(gomega.Succeed())
}

// expectProgressing waits until the status of the given generation has the
// Progressing condition with the status and reason, and returns it. A
// finished rollout (False, RolloutComplete) has no Progressing condition
// but the Updated one, True with that reason: it is waited for, and
// returned, instead.
func expectProgressing(ctx context.Context, name string, generation int64, status metav1.ConditionStatus, reason string) metav1.Condition {
	var got metav1.Condition
	complete := status == metav1.ConditionFalse && reason == appsv1beta1.ReasonRolloutComplete
	condType := appsv1beta1.SidecarSetConditionProgressing
	if complete {
		condType, status = appsv1beta1.SidecarSetConditionUpdated, metav1.ConditionTrue
	}
	gomega.EventuallyWithOffset(1, func(g gomega.Gomega) {
		s := getSidecarSet(ctx, g, name)
		g.Expect(s.Status.ObservedGeneration).To(gomega.Equal(generation))
		if complete {
			g.Expect(meta.FindStatusCondition(s.Status.Conditions, appsv1beta1.SidecarSetConditionProgressing)).To(gomega.BeNil())
		}
		c := meta.FindStatusCondition(s.Status.Conditions, condType)
		g.Expect(c).NotTo(gomega.BeNil())
		g.Expect(c.Reason).To(gomega.Equal(reason), c.Message)
		g.Expect(c.Status).To(gomega.Equal(status))
		g.Expect(c.ObservedGeneration).To(gomega.Equal(generation))
		got = *c
	}).WithContext(ctx).Should(gomega.Succeed())
	return got
}

// expectInjects waits until the pod webhook injects the SidecarSet into a
// pod with these labels (a dry run shows it), so that pods created next are
// not admitted before the webhook's registry has caught up.
func expectInjects(ctx context.Context, ns string, labels map[string]string, sidecarSet string) {
	probe := builder.MakePod("probe", ns).Obj()
	probe.Labels = labels
	gomega.EventuallyWithOffset(1, func(g gomega.Gomega) {
		dry := probe.DeepCopy()
		g.Expect(env.Client.Create(ctx, dry, client.DryRunAll)).To(gomega.Succeed())
		g.Expect(podstate.DecodeInjectedList(dry.Annotations[appsv1beta1.SidecarSetListAnnotation])).To(gomega.ContainElement(sidecarSet))
	}).WithContext(ctx).Should(gomega.Succeed())
}

// runDeployment creates a Deployment once the webhook injects the
// SidecarSet into its pods, waits until all its pods run, ready and
// injected, and returns them.
func runDeployment(ctx context.Context, d *appsv1.Deployment, sidecarSet string) []corev1.Pod {
	expectInjects(ctx, d.Namespace, d.Spec.Template.Labels, sidecarSet)
	gomega.Expect(env.Client.Create(ctx, d)).To(gomega.Succeed())
	return expectReadyPods(ctx, d.Namespace, d.Spec.Selector.MatchLabels, int(*d.Spec.Replicas), sidecarSet)
}

// runPod creates a pod once the webhook injects the SidecarSet into it,
// waits until it runs (ready or not, as wantReady says) and returns it.
func runPod(ctx context.Context, p *corev1.Pod, sidecarSet string, wantReady bool) *corev1.Pod {
	expectInjects(ctx, p.Namespace, p.Labels, sidecarSet)
	gomega.Expect(env.Client.Create(ctx, p)).To(gomega.Succeed())
	var got *corev1.Pod
	gomega.EventuallyWithOffset(1, func(g gomega.Gomega) {
		got = getPod(ctx, g, p)
		g.Expect(got.Status.Phase).To(gomega.Equal(corev1.PodRunning))
		g.Expect(got.Status.ContainerStatuses).To(gomega.HaveLen(len(got.Spec.Containers)))
		g.Expect(podReady(got)).To(gomega.Equal(wantReady))
	}).WithContext(ctx).Should(gomega.Succeed())
	return got
}

// expectReadyPods waits until exactly n pods with the labels exist, all
// running, ready and injected with the SidecarSet, and returns them.
func expectReadyPods(ctx context.Context, ns string, labels map[string]string, n int, sidecarSet string) []corev1.Pod {
	var pods []corev1.Pod
	gomega.EventuallyWithOffset(1, func(g gomega.Gomega) {
		pods = listPods(ctx, g, ns, labels)
		g.Expect(pods).To(gomega.HaveLen(n))
		for i := range pods {
			p := &pods[i]
			g.Expect(p.DeletionTimestamp).To(gomega.BeNil())
			g.Expect(podstate.DecodeInjectedList(p.Annotations[appsv1beta1.SidecarSetListAnnotation])).To(gomega.ContainElement(sidecarSet))
			g.Expect(podReady(p)).To(gomega.BeTrue(), "pod %s is not ready", p.Name)
		}
	}, rolloutTimeout).WithContext(ctx).Should(gomega.Succeed())
	return pods
}

// rolledOut waits until every pod with the labels runs the image in the
// named container: in its spec and in its status (the kwok kubelet
// restarted it), and is ready.
func expectRolledOut(ctx context.Context, ns string, labels map[string]string, container, image string, timeout ...any) []corev1.Pod {
	var pods []corev1.Pod
	gomega.EventuallyWithOffset(1, func(g gomega.Gomega) {
		pods = listPods(ctx, g, ns, labels)
		g.Expect(pods).NotTo(gomega.BeEmpty())
		for i := range pods {
			p := &pods[i]
			g.Expect(specContainer(p, container).Image).To(gomega.Equal(image), "pod %s", p.Name)
			g.Expect(containerStatus(p, container).Image).To(gomega.Equal(qualified(image)), "pod %s", p.Name)
			g.Expect(podReady(p)).To(gomega.BeTrue(), "pod %s is not ready", p.Name)
		}
	}, timeout...).WithContext(ctx).Should(gomega.Succeed())
	return pods
}

// withImage counts the pods whose named container has the image in its
// spec.
func withImage(pods []corev1.Pod, container, image string) int {
	n := 0
	for i := range pods {
		if c := specContainer(&pods[i], container); c != nil && c.Image == image {
			n++
		}
	}
	return n
}

// specContainer returns a pod's container or init container by name (nil
// if absent).
func specContainer(p *corev1.Pod, name string) *corev1.Container {
	for _, list := range [][]corev1.Container{p.Spec.Containers, p.Spec.InitContainers} {
		if i := slices.IndexFunc(list, func(c corev1.Container) bool { return c.Name == name }); i >= 0 {
			return &list[i]
		}
	}
	return nil
}

// containerStatus returns the status of a pod's container or init
// container by name (an empty status if absent).
func containerStatus(p *corev1.Pod, name string) *corev1.ContainerStatus {
	for _, list := range [][]corev1.ContainerStatus{p.Status.ContainerStatuses, p.Status.InitContainerStatuses} {
		if i := slices.IndexFunc(list, func(c corev1.ContainerStatus) bool { return c.Name == name }); i >= 0 {
			return &list[i]
		}
	}
	return &corev1.ContainerStatus{}
}

// containerNames lists the names of containers, in order.
func containerNames(cs []corev1.Container) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

// qualified is the image as a container runtime (and our kwok kubelet)
// reports it: docker.io/library/centos:7 for centos:7. A reference that
// does not parse is returned as is.
func qualified(image string) string {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return image
	}
	return reference.TagNameOnly(named).String()
}

// upgradableCondition returns a pod's SidecarSetUpgradable condition (nil
// if absent).
func upgradableCondition(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == appsv1beta1.SidecarSetUpgradableCondition {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// seed is the path of a seed example of the user manual.
func seed(file string) string {
	return filepath.Join(env.RepoRoot, "test", "integration", "crd", "testdata", "seeds", "newest", file)
}

// applySeed applies a seed example of the user manual as written, and
// deletes it when the spec ends.
func applySeed(ctx context.Context, file string) {
	kubectl(ctx, "apply", "-f", seed(file))
	ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
		kubectl(ctx, "delete", "-f", seed(file), "--ignore-not-found")
	})
}

// kubectl runs kubectl against the e2e cluster and returns its output.
func kubectl(ctx context.Context, args ...string) string {
	out, err := env.Cluster.RunKubectl(ctx, args...)
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred())
	return string(out)
}

// tableRows splits kubectl's table output into rows of fields, without the
// header.
func tableRows(out string) [][]string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var rows [][]string
	for _, l := range lines[1:] {
		if f := strings.Fields(l); len(f) > 0 {
			rows = append(rows, f)
		}
	}
	return rows
}
