package incluster_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
	"github.com/sidecarset-operator/sidecarset-operator/test/e2e/framework"
	"github.com/sidecarset-operator/sidecarset-operator/test/node"
)

// upgradeFromEnv names the git ref the upgrade specs start from.
const upgradeFromEnv = "SIDECARSET_UPGRADE_FROM"

// reapplyEnv set to "install" runs the spec that re-applies the install as
// docs/install.md installs it (kubectl apply, client-side, of
// config/default), which fails: to see what the upgrade procedure avoids.
const reapplyEnv = "SIDECARSET_UPGRADE_REAPPLY"

// managerPaths are what the manager's image and install are built from:
// the default previous release is the parent of the last commit that
// changed one.
var managerPaths = []string{"api", "cmd/manager", "config", "controllers", "internal", "policy", "version", "webhooks", "go.mod", "hack/image"}

// The SidecarSets of the upgrade specs: steady's pods keep their sidecar,
// rolling's are upgraded in place across the operator's upgrade, created
// selects the pods the creators create (on the kwok nodes).
const (
	steadySet  = "upgrade-steady"
	rollingSet = "upgrade-rolling"
	createdSet = "upgrade-created"
)

var _ = ginkgo.Describe("Upgrading the operator itself", ginkgo.Ordered, ginkgo.ContinueOnFailure, ginkgo.Label(realNodeLabel), func() {
	var (
		previous, this *framework.Release
		ns, createdNS  string
	)

	ginkgo.BeforeAll(func(ctx ginkgo.SpecContext) {
		ginkgo.By("waiting for the suite's install, which these specs replace and put back")
		waitManagers(ctx, imageDigest)
		recordInstallReady()
		ref, why := upgradeFrom(ctx)
		ginkgo.By("building the previous release from " + ref + " (" + why + ") and this commit's")
		started := time.Now()
		dir, remove, err := env.Worktree(ctx, ref)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) { gomega.Expect(remove(ctx)).To(gomega.Succeed()) })
		previous, err = env.BuildRelease(ctx, dir, "previous")
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		this, err = env.BuildRelease(ctx, env.RepoRoot, "this")
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		suite, err := env.SuiteRelease(ctx)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		ginkgo.AddReportEntry("upgrade from", fmt.Sprintf("%s = %s (%s); manager image %s, this commit's %s",
			ref, previous.Commit, why, previous.Digest, this.Digest), ginkgo.ReportEntryVisibilityAlways)
		timing("both releases built in %.1f s", time.Since(started).Seconds())
		ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
			ginkgo.By("returning to the suite's install")
			gomega.Expect(env.ApplyRelease(ctx, suite.CRD, suite.Upgrade)).To(gomega.Succeed())
			waitManagers(ctx, imageDigest)
		}, ginkgo.NodeTimeout(5*time.Minute))

		ginkgo.By("installing the previous release")
		gomega.Expect(env.ApplyRelease(ctx, previous.CRD, previous.Upgrade)).To(gomega.Succeed())
		waitManagers(ctx, previous.Digest)

		ginkgo.By("creating SidecarSets and their pods on the real node, and a namespace for the creators' pods")
		n := builder.MakeNamespace("upgrade").Obj()
		n.Annotations = node.NamespaceAnnotations()
		gomega.Expect(env.Client.Create(ctx, n)).To(gomega.Succeed())
		ns = n.Name
		created := builder.MakeNamespace("upgrade-created").Obj()
		gomega.Expect(env.Client.Create(ctx, created)).To(gomega.Succeed())
		createdNS = created.Name
		ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
			for _, name := range []string{ns, createdNS} {
				gomega.Expect(client.IgnoreNotFound(env.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}))).To(gomega.Succeed())
			}
			for _, name := range []string{steadySet, rollingSet, createdSet} {
				gomega.Expect(client.IgnoreNotFound(env.Client.Delete(ctx, &appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: name}}))).To(gomega.Succeed())
			}
		})
		sidecar := builder.MakeContainer("sidecar", "busybox:1.36").Command("sleep", "999d")
		for _, s := range []*appsv1beta1.SidecarSet{
			builder.MakeSidecarSet(steadySet, "app", "steady").Namespace(ns).Containers(sidecar.Clone()).Obj(),
			builder.MakeSidecarSet(rollingSet, "app", "rolling").Namespace(ns).MaxUnavailable(intstr.FromInt32(1)).Containers(sidecar.Clone()).Obj(),
			builder.MakeSidecarSet(createdSet, "app", "created").Namespace(createdNS).Containers(sidecar.Clone()).Obj(),
		} {
			gomega.Expect(env.Client.Create(ctx, s)).To(gomega.Succeed())
		}
		waitInjected(ctx, createdNS, "created")
		for app, replicas := range map[string]int32{"steady": 2, "rolling": 3} {
			d := builder.MakeDeployment(app, ns, replicas).PodLabel("app", app).TerminationGracePeriod(2).
				Containers(builder.MakeContainer("main", "nginx:1.25")).Obj()
			gomega.Expect(env.Client.Create(ctx, d)).To(gomega.Succeed())
		}
		gomega.Eventually(func(g gomega.Gomega) {
			for app, replicas := range map[string]int{"steady": 2, "rolling": 3} {
				pods := appPods(ctx, g, ns, app)
				g.Expect(pods).To(gomega.HaveLen(replicas))
				for _, p := range pods {
					g.Expect(containerNames(p)).To(gomega.Equal([]string{"sidecar", "main"}))
					g.Expect(ready(p)).To(gomega.BeTrue())
				}
			}
		}).WithContext(ctx).Should(gomega.Succeed())
	}, ginkgo.NodeTimeout(20*time.Minute))

	ginkgo.It("should upgrade to this commit's release, the CRD first, while pods are created, losing no injection and restarting no container",
		func(ctx ginkgo.SpecContext) {
			switchRelease(ctx, ns, createdNS, this, "busybox:1.37")
		}, ginkgo.NodeTimeout(10*time.Minute))

	ginkgo.It("should roll back to the previous commit's release, the CRD first, while pods are created, losing no injection and restarting no container",
		func(ctx ginkgo.SpecContext) {
			switchRelease(ctx, ns, createdNS, previous, "busybox:1.36")
		}, ginkgo.NodeTimeout(10*time.Minute))

	ginkgo.It("should keep the pod webhooks' scope when the install is applied again, so that no pod created meanwhile skips the webhook",
		func(ctx ginkgo.SpecContext) {
			reapply(ctx, createdNS, this, this.Upgrade, "as docs/upgrade.md says: server-side, through config/upgrade", "--server-side")
		}, ginkgo.NodeTimeout(10*time.Minute))

	ginkgo.It("should show pods admitted without their sidecars when config/default is applied again as it installs (client-side)",
		func(ctx ginkgo.SpecContext) {
			if os.Getenv(reapplyEnv) != "install" {
				ginkgo.Skip("set " + reapplyEnv + "=install to see what the upgrade procedure avoids")
			}
			reapply(ctx, createdNS, this, this.Install, "as docs/install.md installs: kubectl apply (client-side) of config/default")
		}, ginkgo.NodeTimeout(10*time.Minute))
})

// reapply upgrades to this commit's release, then applies manifests three
// times with kubectl apply and args while six creators create pods back to
// back (dry run), and checks that every pod was injected and the required
// pod webhook kept the manager's condition.
func reapply(ctx context.Context, createdNS string, this *framework.Release, manifests []byte, how string, args ...string) {
	ginkgo.By("upgrading to this commit's release")
	gomega.Expect(env.ApplyRelease(ctx, this.CRD, this.Upgrade)).To(gomega.Succeed())
	waitManagers(ctx, this.Digest)
	waitScoped(ctx)

	ginkgo.By("applying the install again, " + how + ", three times, while 6 creators create pods back to back (dry run)")
	smp := startSampler(ctx, 20*time.Millisecond, createdSet)
	c := startCreators(ctx, createdNS, "created", "sidecar", 6, 0, true)
	started := time.Now()
	for range 3 {
		time.Sleep(2 * time.Second)
		_, err := env.Cluster.RunKubectlStdin(ctx, manifests, append(append([]string{"apply"}, args...), "-f", "-")...)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
	}
	time.Sleep(5 * time.Second)
	c.stop()
	samples := smp.stop()
	placeholder, missing, longest := conditionGaps(samples)
	timing("re-applied 3 times (%s) in %.1f s: %d pods admitted, %d refused, %d without the sidecar; "+
		"%d of %d samples saw the shipped condition, %d none, for at most %d ms",
		how, time.Since(started).Seconds(), c.created.Load(), c.refused.Load(), c.uninjected.Load(),
		placeholder, len(samples), missing, longest.Milliseconds())
	gomega.Expect(c.refused.Load()).To(gomega.BeZero(), "refused: %v", c.failures)
	gomega.Expect(c.uninjected.Load()).To(gomega.BeZero(), "pods created without the sidecar: %v", c.failures)
	gomega.Expect(placeholder+missing).To(gomega.BeZero(), "the required pod webhook lost the manager's scope for %s", longest)
}

// upgradeFrom returns the ref the upgrade starts from, and why.
func upgradeFrom(ctx context.Context) (string, string) {
	if ref := os.Getenv(upgradeFromEnv); ref != "" {
		return ref, upgradeFromEnv
	}
	out, err := exec.CommandContext(ctx, "git", append([]string{"-C", env.RepoRoot, "log", "-1", "--format=%h", "--"}, managerPaths...)...).Output()
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	last := strings.TrimSpace(string(out))
	gomega.Expect(last).NotTo(gomega.BeEmpty(), "no commit changed the manager: set %s", upgradeFromEnv)
	return last + "~1", "the parent of " + last + ", the last commit that changed the manager or its install; " + upgradeFromEnv + " overrides"
}

// containerState is what shows a container restarted.
type containerState struct {
	ID       string
	Restarts int32
}

// podStates returns each pod's containers' states, by pod UID and
// container name.
func podStates(pods []corev1.Pod) map[types.UID]map[string]containerState {
	out := map[types.UID]map[string]containerState{}
	for _, p := range pods {
		out[p.UID] = map[string]containerState{}
		for _, st := range p.Status.ContainerStatuses {
			out[p.UID][st.Name] = containerState{ID: st.ContainerID, Restarts: st.RestartCount}
		}
	}
	return out
}

// switchRelease upgrades or rolls the operator back to a release as
// docs/upgrade.md says, with an in-place rollout of rollingSet to image in
// flight and creators creating pods createdSet selects, and checks that
// nothing was lost.
func switchRelease(ctx context.Context, ns, createdNS string, to *framework.Release, image string) {
	ginkgo.By("recording the pods, SidecarSets and revisions")
	gomega.Expect(env.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(createdNS))).To(gomega.Succeed())
	steadyBefore := podStates(appPods(ctx, gomega.Default, ns, "steady"))
	rollingBefore := podStates(appPods(ctx, gomega.Default, ns, "rolling"))
	setsBefore := map[string]*appsv1beta1.SidecarSet{}
	revisionsBefore := map[string][]string{}
	for _, name := range []string{steadySet, rollingSet, createdSet} {
		setsBefore[name] = getSidecarSet(ctx, gomega.Default, name)
		revisionsBefore[name] = revisionNames(ctx, gomega.Default, name)
	}
	oldManagers := managerNames(ctx, gomega.Default)

	ginkgo.By("starting an in-place rollout of " + image + ", held at one pod of three by its partition, the creators and the sampler")
	gomega.Eventually(func(g gomega.Gomega) {
		got := getSidecarSet(ctx, g, rollingSet)
		got.Spec.Containers[0].Image = image
		partition := intstr.FromInt32(2)
		got.Spec.UpdateStrategy.Partition = &partition
		g.Expect(env.Client.Update(ctx, got)).To(gomega.Succeed())
	}).WithContext(ctx).Should(gomega.Succeed())
	gomega.Eventually(func(g gomega.Gomega) {
		got := getSidecarSet(ctx, g, rollingSet)
		g.Expect(got.Status.ObservedGeneration).To(gomega.Equal(got.Generation))
		g.Expect([]int32{got.Status.MatchedPods, got.Status.UpdatedPods, got.Status.UpdatedReadyPods}).To(gomega.Equal([]int32{3, 1, 1}))
	}).WithContext(ctx).Should(gomega.Succeed())
	smp := startSampler(ctx, 100*time.Millisecond, steadySet, rollingSet, createdSet)
	c := startCreators(ctx, createdNS, "created", "sidecar", 3, 200*time.Millisecond, false)

	ginkgo.By("applying the release: the CRD, then the install through config/upgrade")
	started := time.Now()
	gomega.Expect(env.ApplyRelease(ctx, to.CRD, to.Upgrade)).To(gomega.Succeed())
	managers := waitManagers(ctx, to.Digest)
	replaced := time.Since(started)
	leaderPod(ctx, managers)
	leader := time.Since(started)

	ginkgo.By("releasing the partition: the new leader finishes the rollout")
	gomega.Eventually(func(g gomega.Gomega) {
		got := getSidecarSet(ctx, g, rollingSet)
		got.Spec.UpdateStrategy.Partition = nil
		g.Expect(env.Client.Update(ctx, got)).To(gomega.Succeed())
	}).WithContext(ctx).Should(gomega.Succeed())
	gomega.Eventually(func(g gomega.Gomega) {
		pods := appPods(ctx, g, ns, "rolling")
		g.Expect(pods).To(gomega.HaveLen(3))
		for _, p := range pods {
			g.Expect(rollingBefore).To(gomega.HaveKey(p.UID), "pod %s was recreated", p.Name)
			g.Expect(containerStatus(p, "sidecar").Image).To(gomega.Equal("docker.io/library/" + image))
			g.Expect(ready(p)).To(gomega.BeTrue())
		}
		got := getSidecarSet(ctx, g, rollingSet)
		g.Expect(got.Status.ObservedGeneration).To(gomega.Equal(got.Generation))
		g.Expect([]int32{got.Status.MatchedPods, got.Status.UpdatedPods, got.Status.UpdatedReadyPods}).To(gomega.Equal([]int32{3, 3, 3}))
	}).WithContext(ctx).Should(gomega.Succeed())
	rolled := time.Since(started)
	// The new leader has written the scope and counted the pods: a few
	// more seconds of creations under it.
	time.Sleep(5 * time.Second)
	c.stop()
	samples := smp.stop()
	placeholder, missing, longest := conditionGaps(samples)
	timing("release applied; both replicas replaced in %.1f s, the new leader elected by %.1f s, the in-flight rollout done by %.1f s; "+
		"%d pods created meanwhile, %d refused, %d without the sidecar; the pod webhooks without the manager's scope in %d of %d samples (shipped condition %d, none %d), at most %d ms",
		replaced.Seconds(), leader.Seconds(), rolled.Seconds(), c.created.Load(), c.refused.Load(), c.uninjected.Load(),
		placeholder+missing, len(samples), placeholder, missing, longest.Milliseconds())

	ginkgo.By("checking that no pod creation was refused or left uninjected")
	gomega.Expect(c.created.Load()).To(gomega.BeNumerically(">", 0))
	gomega.Expect(c.refused.Load()).To(gomega.BeZero(), "refused: %v", c.failures)
	gomega.Expect(c.uninjected.Load()).To(gomega.BeZero(), "pods created without the sidecar: %v", c.failures)
	gomega.Expect(placeholder).To(gomega.BeZero(), "the pod webhooks had the shipped condition again")

	ginkgo.By("checking that the upgrade restarted no container")
	for _, p := range appPods(ctx, gomega.Default, ns, "steady") {
		gomega.Expect(steadyBefore).To(gomega.HaveKeyWithValue(p.UID, podStates([]corev1.Pod{p})[p.UID]), "pod %s", p.Name)
	}
	for _, p := range appPods(ctx, gomega.Default, ns, "rolling") {
		before, now := rollingBefore[p.UID], podStates([]corev1.Pod{p})[p.UID]
		gomega.Expect(now["main"]).To(gomega.Equal(before["main"]), "pod %s: the app container", p.Name)
		gomega.Expect(now["sidecar"].Restarts).To(gomega.Equal(before["sidecar"].Restarts+1), "pod %s: the sidecar restarted other than by its in-place upgrade", p.Name)
	}
	for _, name := range oldManagers {
		gomega.Expect(slices.ContainsFunc(managers, func(p corev1.Pod) bool { return p.Name == name })).To(gomega.BeFalse(), "manager %s was not replaced", name)
	}

	ginkgo.By("checking the SidecarSets, their revisions and their status")
	for name, before := range setsBefore {
		got := getSidecarSet(ctx, gomega.Default, name)
		revisions := revisionNames(ctx, gomega.Default, name)
		gomega.Expect(revisions).To(gomega.ContainElements(revisionsBefore[name]), "SidecarSet %s lost revisions", name)
		if name == rollingSet {
			gomega.Expect(got.Generation).To(gomega.Equal(before.Generation + 2))
			continue
		}
		gomega.Expect(got.Generation).To(gomega.Equal(before.Generation), "SidecarSet %s", name)
		gomega.Expect(equality.Semantic.DeepEqual(got.Spec, before.Spec)).To(gomega.BeTrue(), "SidecarSet %s's spec changed", name)
		gomega.Expect(got.Annotations).To(gomega.Equal(before.Annotations), "SidecarSet %s", name)
		gomega.Expect(revisions).To(gomega.Equal(revisionsBefore[name]), "SidecarSet %s's revisions changed", name)
	}
	for _, smp := range samples {
		st := smp.status[steadySet]
		gomega.Expect(st.ObservedGeneration).To(gomega.Equal(smp.generation[steadySet]), "at %s", smp.at)
		gomega.Expect([]int32{st.MatchedPods, st.UpdatedPods, st.ReadyPods}).To(gomega.Equal([]int32{2, 2, 2}),
			"%s's status at %s", steadySet, smp.at.Format(time.StampMilli))
		gomega.Expect(smp.status[rollingSet].MatchedPods).To(gomega.Equal(int32(3)), "%s's status at %s", rollingSet, smp.at.Format(time.StampMilli))
	}
}

// waitManagers waits for the operator's Deployment to run two ready
// replicas of the image digest, and no other pod, and returns them.
func waitManagers(ctx context.Context, digest string) []corev1.Pod {
	var managers []corev1.Pod
	gomega.Eventually(func(g gomega.Gomega) {
		d := &appsv1.Deployment{}
		g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: operatorNamespace, Name: "sidecarset-operator"}, d)).To(gomega.Succeed())
		g.Expect(d.Status.ObservedGeneration).To(gomega.Equal(d.Generation))
		g.Expect([]int32{d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.ReadyReplicas}).To(gomega.Equal([]int32{2, 2, 2}))
		list := &corev1.PodList{}
		g.Expect(env.Client.List(ctx, list, client.InNamespace(operatorNamespace),
			client.MatchingLabels{"app.kubernetes.io/name": "sidecarset-operator"})).To(gomega.Succeed())
		g.Expect(list.Items).To(gomega.HaveLen(2))
		for _, p := range list.Items {
			g.Expect(p.Status.ContainerStatuses).NotTo(gomega.BeEmpty())
			g.Expect(p.Status.ContainerStatuses[0].ImageID).To(gomega.HaveSuffix("@"+digest), "manager %s", p.Name)
			g.Expect(ready(p)).To(gomega.BeTrue())
		}
		managers = list.Items
	}).WithContext(ctx).Should(gomega.Succeed())
	return managers
}

// waitScoped waits for the manager to have written the scope into both
// pod webhooks.
func waitScoped(ctx context.Context) {
	gomega.Eventually(func(g gomega.Gomega) {
		smp := startSampler(ctx, time.Hour)
		time.Sleep(200 * time.Millisecond)
		samples := smp.stop()
		g.Expect(samples).NotTo(gomega.BeEmpty())
		placeholder, missing, _ := conditionGaps(samples)
		g.Expect(placeholder + missing).To(gomega.BeZero())
	}).WithContext(ctx).Should(gomega.Succeed())
}

func managerNames(ctx context.Context, g gomega.Gomega) []string {
	list := &corev1.PodList{}
	g.Expect(env.Client.List(ctx, list, client.InNamespace(operatorNamespace),
		client.MatchingLabels{"app.kubernetes.io/name": "sidecarset-operator"})).To(gomega.Succeed())
	var names []string
	for _, p := range list.Items {
		names = append(names, p.Name)
	}
	return names
}

func appPods(ctx context.Context, g gomega.Gomega, ns, app string) []corev1.Pod {
	list := &corev1.PodList{}
	g.Expect(env.Client.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{"app": app})).To(gomega.Succeed())
	return slices.DeleteFunc(list.Items, func(p corev1.Pod) bool { return p.DeletionTimestamp != nil })
}

func getSidecarSet(ctx context.Context, g gomega.Gomega, name string) *appsv1beta1.SidecarSet {
	got := &appsv1beta1.SidecarSet{}
	g.Expect(env.Client.Get(ctx, types.NamespacedName{Name: name}, got)).To(gomega.Succeed())
	return got
}

func revisionNames(ctx context.Context, g gomega.Gomega, set string) []string {
	list := &appsv1.ControllerRevisionList{}
	g.Expect(env.Client.List(ctx, list, client.InNamespace(operatorNamespace),
		client.MatchingLabels{appsv1beta1.SidecarSetNameLabel: set})).To(gomega.Succeed())
	var names []string
	for _, r := range list.Items {
		names = append(names, r.Name)
	}
	slices.Sort(names)
	return names
}
