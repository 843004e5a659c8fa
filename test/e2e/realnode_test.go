package e2e_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"

	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
	"github.com/sidecarset-operator/sidecarset-operator/test/e2e/framework"
	"github.com/sidecarset-operator/sidecarset-operator/test/node"
	"github.com/sidecarset-operator/sidecarset-operator/test/node/counter"
	"github.com/sidecarset-operator/sidecarset-operator/test/node/images"
)

// What a kubelet decides, on the real node: a kubelet v1.37 with containerd
// and runc joined to the e2e cluster (test/node), running the images the
// manual names (test/node/images; the servers among them answer a counter
// that says whether they restarted). Every pod of these specs runs there,
// its namespace sending it; each spec reports its real timings.
var _ = ginkgo.Describe("On a real node", ginkgo.Label(realNodeLabel), func() {
	ginkgo.It("should run the manual's walkthrough as written: the seed pod injected, its sidecar upgraded in place, the app serving on",
		ginkgo.Label("walkthrough", "seed"), func(ctx ginkgo.SpecContext) {
			const name = "test-sidecarset"
			ns := createRealNodeNamespace(ctx, "walkthrough")

			ginkgo.By("applying the manual's sidecarset.yaml and its pod")
			applySeed(ctx, "01-sidecarset.yaml")
			expectObserved(ctx, name)
			expectInjects(ctx, ns, map[string]string{"app": "nginx"}, name)
			created := time.Now()
			kubectl(ctx, "apply", "-n", ns, "-f", seed("20-test-pod.yaml"))
			// The manual's pod keeps the default grace period of 30 s, which
			// its sleeping sidecar uses up; end it at once with the spec.
			ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
				kubectl(ctx, "delete", "pod", "test-pod", "-n", ns, "--grace-period=1", "--ignore-not-found")
			})
			key := &corev1.Pod{}
			key.Namespace, key.Name = ns, "test-pod"
			var before *corev1.Pod
			gomega.Eventually(func(g gomega.Gomega) {
				before = getPod(ctx, g, key)
				onRealNode(g, before)
				g.Expect(containerNames(before.Spec.Containers)).To(gomega.Equal([]string{"sidecar1", "app"}))
				g.Expect(before.Status.Phase).To(gomega.Equal(corev1.PodRunning))
				g.Expect(podReady(before)).To(gomega.BeTrue())
				g.Expect(containerStatus(before, "sidecar1").Image).To(gomega.Equal("docker.io/library/centos:6.7"))
			}).WithContext(ctx).Should(gomega.Succeed())
			timing("the seed pod Running and Ready %s after kubectl apply", seconds(time.Since(created)))
			rows := tableRows(kubectl(ctx, "get", "pod", "test-pod", "-n", ns))
			gomega.Expect(rows).To(gomega.HaveLen(1))
			gomega.Expect(rows[0][:4]).To(gomega.Equal([]string{"test-pod", "2/2", "Running", "0"}))
			expectStatus(ctx, name, 1, counts{Matched: 1, Updated: 1, Ready: 1, UpdatedReady: 1})
			app := expectServing(ctx, gomega.Default, before, images.NginxPort)
			gomega.Expect(app.Image).To(gomega.Equal("nginx:1.15.1"))

			ginkgo.By("changing the sidecar image to centos:7 as kubectl edit would")
			changed := time.Now()
			kubectl(ctx, "patch", "sidecarset", name, "--type", "merge", "-p",
				`{"spec":{"containers":[{"name":"sidecar1","image":"centos:7","command":["sleep","999d"],`+
					`"volumeMounts":[{"name":"log-volume","mountPath":"/var/log"}]}]}}`)

			ginkgo.By("seeing the kubelet restart the sidecar alone, on centos:7, the app counting on")
			gomega.Eventually(func(g gomega.Gomega) {
				p := getPod(ctx, g, key)
				g.Expect(p.UID).To(gomega.Equal(before.UID), "the pod was recreated")
				sidecar := containerStatus(p, "sidecar1")
				g.Expect(sidecar.Image).To(gomega.Equal("docker.io/library/centos:7"))
				g.Expect(sidecar.ImageID).NotTo(gomega.Equal(containerStatus(before, "sidecar1").ImageID))
				g.Expect(sidecar.RestartCount).To(gomega.Equal(int32(1)))
				g.Expect(sidecar.State.Running).NotTo(gomega.BeNil())
				g.Expect(containerStatus(p, "app").RestartCount).To(gomega.BeZero())
				g.Expect(containerStatus(p, "app").ContainerID).To(gomega.Equal(containerStatus(before, "app").ContainerID))
				g.Expect(podReady(p)).To(gomega.BeTrue())
			}, rolloutTimeout).WithContext(ctx).Should(gomega.Succeed())
			timing("sidecar1 running centos:7 %s after the SidecarSet changed (the kubelet waits out the pod's 30 s grace period: "+
				"sleep, as PID 1, ignores SIGTERM)", seconds(time.Since(changed)))
			expectCountedOn(gomega.Default, app, expectServing(ctx, gomega.Default, before, images.NginxPort), "the app")
			expectStatus(ctx, name, 2, counts{Matched: 1, Updated: 1, Ready: 1, UpdatedReady: 1})
			rows = tableRows(kubectl(ctx, "get", "pods", "-n", ns))
			gomega.Expect(rows).To(gomega.HaveLen(1))
			gomega.Expect(rows[0][:4]).To(gomega.Equal([]string{"test-pod", "2/2", "Running", "1"}))
			gomega.Expect(kubectl(ctx, "describe", "pod", "test-pod", "-n", ns)).To(
				gomega.MatchRegexp(`Killing .* kubelet .*Container sidecar1 definition changed, will be restarted`))
		})

	ginkgo.It("should upgrade a sidecar and a native sidecar in place: only that container restarts, on a new image ID, the others serving on",
		ginkgo.Label("native"), func(ctx ginkgo.SpecContext) {
			const nativePort = 2020 // fluent/fluent-bit's
			ns := createRealNodeNamespace(ctx, "in-place")
			s := createSidecarSet(ctx, sidecarSet(ns, "sidecar", "busybox:1.36").MaxUnavailable(intstr.FromInt32(1)).
				InitContainers(builder.MakeContainer("native", "fluent/fluent-bit:3.1").RestartAlways()).Obj())
			pods := runDeployment(ctx, app(ns, "web", 2).TerminationGracePeriod(2).Obj(), s.Name)
			before := map[types.UID]*corev1.Pod{}
			apps, natives := map[types.UID]counter.Counter{}, map[types.UID]counter.Counter{}
			for i := range pods {
				p := &pods[i]
				onRealNode(gomega.Default, p)
				before[p.UID] = p
				apps[p.UID] = expectServing(ctx, gomega.Default, p, images.NginxPort)
				natives[p.UID] = expectServing(ctx, gomega.Default, p, nativePort)
				gomega.Expect(natives[p.UID].Image).To(gomega.Equal("fluent/fluent-bit:3.1"))
			}

			ginkgo.By("changing the sidecar's image: it alone restarts")
			changed := time.Now()
			gen := setImage(ctx, s.Name, "sidecar", "busybox:1.37")
			expectRestartedAlone(ctx, ns, before, "sidecar", "busybox:1.37", map[string]int32{"sidecar": 1, "native": 0, "main": 0})
			timing("2 pods' sidecar upgraded in place, one at a time, in %s", seconds(time.Since(changed)))
			expectStatus(ctx, s.Name, gen, counts{Matched: 2, Updated: 2, Ready: 2, UpdatedReady: 2})
			for _, p := range listPods(ctx, gomega.Default, ns, appLabels) {
				expectCountedOn(gomega.Default, apps[p.UID], expectServing(ctx, gomega.Default, &p, images.NginxPort), "the app of "+p.Name)
				expectCountedOn(gomega.Default, natives[p.UID], expectServing(ctx, gomega.Default, &p, nativePort), "the native sidecar of "+p.Name)
			}

			ginkgo.By("changing the native sidecar's image: it alone restarts, now serving the new image")
			for _, p := range listPods(ctx, gomega.Default, ns, appLabels) {
				before[p.UID] = &p
			}
			changed = time.Now()
			gen = setImage(ctx, s.Name, "native", "fluent/fluent-bit:3.2")
			expectRestartedAlone(ctx, ns, before, "native", "fluent/fluent-bit:3.2", map[string]int32{"sidecar": 1, "native": 1, "main": 0})
			timing("2 pods' native sidecar upgraded in place, one at a time, in %s", seconds(time.Since(changed)))
			expectStatus(ctx, s.Name, gen, counts{Matched: 2, Updated: 2, Ready: 2, UpdatedReady: 2})
			for _, p := range listPods(ctx, gomega.Default, ns, appLabels) {
				expectCountedOn(gomega.Default, apps[p.UID], expectServing(ctx, gomega.Default, &p, images.NginxPort), "the app of "+p.Name)
				native := expectServing(ctx, gomega.Default, &p, nativePort)
				gomega.Expect(native.Image).To(gomega.Equal("fluent/fluent-bit:3.2"))
				gomega.Expect(native.Started).To(gomega.BeTemporally(">", natives[p.UID].Started))
			}
		})

	ginkgo.It("should hot-upgrade the manual's sidecar: the new twin serves beside the old one before the old one is reset, the port never stops answering",
		ginkgo.Label("hotupgrade", "seed"), func(ctx ginkgo.SpecContext) {
			ns := createRealNodeNamespace(ctx, "hot")
			applySeed(ctx, "17-hot-upgrade.yaml")
			expectObserved(ctx, hotName)
			labels := map[string]string{"app": "hotupgrade"}
			pods := runDeployment(ctx, builder.MakeDeployment("hot", ns, 2).PodLabel("app", "hotupgrade").TerminationGracePeriod(2).
				Containers(builder.MakeContainer("main", "nginx:1.25")).Obj(), hotName)
			expectTwins(ctx, ns, labels, twins{hotV1, hotEmpty, "sidecar-1"})
			apps := map[types.UID]counter.Counter{}
			for i := range pods {
				apps[pods[i].UID] = expectServing(ctx, gomega.Default, &pods[i], images.NginxPort)
			}
			rec := recordTwins(ctx, ns)
			probe := probePort(ctx, pods, images.HotUpgradePort)

			for _, step := range []struct {
				image string
				want  twins
			}{
				{hotV2, twins{hotEmpty, hotV2, "sidecar-2"}},
				{hotV3, twins{hotV3, hotEmpty, "sidecar-1"}},
			} {
				ginkgo.By("hot-upgrading to " + step.image)
				changed := time.Now()
				gen := setImage(ctx, hotName, "sidecar", step.image)
				expectTwins(ctx, ns, labels, step.want)
				timing("2 pods hot-upgraded to %s, the old twin reset, in %s", step.image, seconds(time.Since(changed)))
				expectStatus(ctx, hotName, gen, counts{Matched: 2, Updated: 2, Ready: 2, UpdatedReady: 2})
			}
			served := probe.stop()
			gomega.Expect(rec.EarlyResets()).To(gomega.BeEmpty(), "a twin was reset before the new one ran")
			for pod, s := range served {
				ginkgo.AddReportEntry("port "+fmt.Sprint(images.HotUpgradePort)+" of "+pod, s.String())
				gomega.Expect(s.failures).To(gomega.BeEmpty(), "pod %s stopped answering on its sidecar's port", pod)
				gomega.Expect(s.images).To(gomega.Equal([]string{hotV1, hotV2, hotV3}), "pod %s served, in order", pod)
				gomega.Expect(s.answers).To(gomega.BeNumerically(">", 20), "pod %s: too few answers to tell", pod)
			}
			for _, p := range listPods(ctx, gomega.Default, ns, labels) {
				gomega.Expect(containerStatus(&p, "main").RestartCount).To(gomega.BeZero(), "the app container of %s restarted", p.Name)
				expectCountedOn(gomega.Default, apps[p.UID], expectServing(ctx, gomega.Default, &p, images.NginxPort), "the app of "+p.Name)
			}
		})

	ginkgo.It("should resize sidecars in place as their resizePolicy says, shrink memory, and apply a deferred resize once a blocker pod leaves",
		ginkgo.Label("resize"), func(ctx ginkgo.SpecContext) {
			ns := createRealNodeNamespace(ctx, "resize")
			s := createSidecarSet(ctx, sidecarSet(ns, "agent", "busybox:1.36").MaxUnavailable(intstr.FromInt32(2)).Containers(
				builder.MakeContainer("agent", "busybox:1.36").Command("sleep", "999d").Requests("100m", "32Mi").Limits("200m", "64Mi").
					ResizePolicy(corev1.NotRequired, corev1.RestartContainer),
				builder.MakeContainer("proxy", "busybox:1.36").Command("sleep", "999d").Requests("50m", "64Mi").Limits("100m", "128Mi"),
			).Obj())
			pods := runDeployment(ctx, app(ns, "web", 2).TerminationGracePeriod(2).Obj(), s.Name)
			uids := map[types.UID]bool{}
			for _, p := range pods {
				uids[p.UID] = true
				gomega.Expect(cgroupFile(&p, "agent", "cpu", "cpu.cfs_quota_us")).To(gomega.Equal("20000"))
			}

			for _, step := range []struct {
				what      string
				container int // of the SidecarSet
				resources corev1.ResourceRequirements
				restarts  map[string]int32 // of each container, since the pod started
				check     func(gomega.Gomega, *corev1.Pod)
			}{
				{"the agent's CPU raised: resized in place, no restart (cpu: NotRequired), the cgroup changed",
					0, requirementsOf("150m", "32Mi", "300m", "64Mi"), map[string]int32{"agent": 0, "proxy": 0, "main": 0},
					func(g gomega.Gomega, p *corev1.Pod) {
						g.Expect(containerStatus(p, "agent").Resources.Limits.Cpu().String()).To(gomega.Equal("300m"))
						g.Expect(cgroupFile(p, "agent", "cpu", "cpu.cfs_quota_us")).To(gomega.Equal("30000"))
					}},
				{"the agent's memory raised: resized with a restart, as its memory policy (RestartContainer) asks",
					0, requirementsOf("150m", "48Mi", "300m", "96Mi"), map[string]int32{"agent": 1, "proxy": 0, "main": 0},
					func(g gomega.Gomega, p *corev1.Pod) {
						g.Expect(containerStatus(p, "agent").Resources.Limits.Memory().String()).To(gomega.Equal("96Mi"))
						g.Expect(cgroupFile(p, "agent", "memory", "memory.limit_in_bytes")).To(gomega.Equal("100663296"))
					}},
				{"the proxy's memory limit lowered: applied in place, no restart",
					1, requirementsOf("50m", "64Mi", "100m", "96Mi"), map[string]int32{"agent": 1, "proxy": 0, "main": 0},
					func(g gomega.Gomega, p *corev1.Pod) {
						g.Expect(containerStatus(p, "proxy").Resources.Limits.Memory().String()).To(gomega.Equal("96Mi"))
						g.Expect(cgroupFile(p, "proxy", "memory", "memory.limit_in_bytes")).To(gomega.Equal("100663296"))
					}},
			} {
				ginkgo.By(step.what)
				changed := time.Now()
				gen := updateSidecarSet(ctx, s.Name, func(s *appsv1beta1.SidecarSet) { s.Spec.Containers[step.container].Resources = step.resources })
				expectResized(ctx, ns, uids, step.restarts, step.check)
				timing("%s, on 2 pods in %s", step.what, seconds(time.Since(changed)))
				expectStatus(ctx, s.Name, gen, counts{Matched: 2, Updated: 2, Ready: 2, UpdatedReady: 2})
			}

			ginkgo.By("filling the node's CPU with a blocker pod, then raising the agent's CPU request past what is left")
			blocker := fillRealNode(ctx, ns)
			changed := time.Now()
			gen := updateSidecarSet(ctx, s.Name, func(s *appsv1beta1.SidecarSet) {
				s.Spec.Containers[0].Resources = requirementsOf("250m", "48Mi", "300m", "96Mi")
			})
			gomega.Eventually(func(g gomega.Gomega) {
				for _, p := range listPods(ctx, g, ns, appLabels) {
					c := podCondition(&p, corev1.PodResizePending)
					g.Expect(c).NotTo(gomega.BeNil(), "pod %s", p.Name)
					g.Expect(c.Reason).To(gomega.Equal(corev1.PodReasonDeferred))
					g.Expect(c.Message).To(gomega.HavePrefix("Node didn't have enough resource: cpu"))
				}
				st := getSidecarSet(ctx, g, s.Name)
				g.Expect(st.Status.ObservedGeneration).To(gomega.Equal(gen))
				g.Expect(st.Status.ResizePendingPods).To(gomega.Equal(int32(2)))
				c := meta.FindStatusCondition(st.Status.Conditions, appsv1beta1.SidecarSetConditionResized)
				g.Expect(c).NotTo(gomega.BeNil())
				g.Expect(c.Message).To(gomega.ContainSubstring("(deferred: Node didn't have enough resource: cpu"))
			}).WithContext(ctx).Should(gomega.Succeed())
			timing("the kubelet deferred the resize that does not fit (%dm free), reported by the SidecarSet, in %s", 50, seconds(time.Since(changed)))

			ginkgo.By("deleting the blocker: the kubelet applies the deferred resize")
			deleted := time.Now()
			gomega.Expect(env.Client.Delete(ctx, blocker)).To(gomega.Succeed())
			expectResized(ctx, ns, uids, map[string]int32{"agent": 1, "proxy": 0, "main": 0}, func(g gomega.Gomega, p *corev1.Pod) {
				g.Expect(containerStatus(p, "agent").Resources.Requests.Cpu().String()).To(gomega.Equal("250m"))
				g.Expect(podCondition(p, corev1.PodResizePending)).To(gomega.BeNil())
			})
			timing("the deferred resize applied %s after the blocker was deleted", seconds(time.Since(deleted)))
			expectStatus(ctx, s.Name, gen, counts{Matched: 2, Updated: 2, Ready: 2, UpdatedReady: 2})
			gomega.Eventually(func(g gomega.Gomega) {
				g.Expect(getSidecarSet(ctx, g, s.Name).Status.ResizePendingPods).To(gomega.BeZero())
			}).WithContext(ctx).Should(gomega.Succeed())
		})

	ginkgo.It("should recreate pods created before their SidecarSet by evictions the PodDisruptionBudget allows, the replacements injected",
		ginkgo.Label("recreate"), func(ctx ginkgo.SpecContext) {
			const replicas = 4
			ns := createRealNodeNamespace(ctx, "recreate")
			gomega.Expect(env.Client.Create(ctx, app(ns, "web", replicas).TerminationGracePeriod(2).Obj())).To(gomega.Succeed())
			var before []corev1.Pod
			gomega.Eventually(func(g gomega.Gomega) {
				before = listPods(ctx, g, ns, appLabels)
				g.Expect(before).To(gomega.HaveLen(replicas))
				for _, p := range before {
					g.Expect(podReady(&p)).To(gomega.BeTrue())
				}
			}).WithContext(ctx).Should(gomega.Succeed())
			pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}, Spec: policyv1.PodDisruptionBudgetSpec{
				MaxUnavailable: new(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: appLabels}}}
			gomega.Expect(env.Client.Create(ctx, pdb)).To(gomega.Succeed())
			gomega.Eventually(func(g gomega.Gomega) {
				got := &policyv1.PodDisruptionBudget{}
				g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(pdb), got)).To(gomega.Succeed())
				g.Expect(got.Status.DisruptionsAllowed).To(gomega.Equal(int32(1)))
			}).WithContext(ctx).Should(gomega.Succeed())
			sampler := sampleUnavailable(ctx, ns, appLabels, replicas)
			evictions := evictionResponses(ctx)

			created := time.Now()
			s := createSidecarSet(ctx, sidecarSet(ns, "agent", "busybox:1.36").MaxUnavailable(intstr.FromInt32(2)).
				Annotation(appsv1beta1.RecreatePodsAnnotation, "true").Obj())
			pods := expectReadyPods(ctx, ns, appLabels, replicas, s.Name)
			timing("%d pods recreated by eviction, one at a time as the PodDisruptionBudget allows, in %s", replicas, seconds(time.Since(created)))
			old := map[types.UID]bool{}
			for _, p := range before {
				old[p.UID] = true
			}
			for _, p := range pods {
				onRealNode(gomega.Default, &p)
				gomega.Expect(old).NotTo(gomega.HaveKey(p.UID), "pod %s was not recreated", p.Name)
				gomega.Expect(containerNames(p.Spec.Containers)).To(gomega.Equal([]string{"agent", "main"}))
				gomega.Expect(containerStatus(&p, "agent").State.Running).NotTo(gomega.BeNil())
			}
			expectStatus(ctx, s.Name, s.Generation, counts{replicas, replicas, replicas, replicas})
			most, events := sampler.stop()
			ginkgo.AddReportEntry("recreation", fmt.Sprintf("at most %d unavailable over %d pod events", most, events))
			gomega.Expect(most).To(gomega.Equal(1), "unavailable at once: the PodDisruptionBudget allows 1 (and 0 would mean nothing was sampled)")
			after := evictionResponses(ctx)
			gomega.Expect(after["201"]-evictions["201"]).To(gomega.BeNumerically(">=", replicas), "evictions accepted")
			gomega.Expect(after["429"]-evictions["429"]).To(gomega.BeNumerically(">", 0),
				"no eviction refused: the PodDisruptionBudget never held back maxUnavailable 2")
		})

	ginkgo.It("should pause itself on a sidecar that really crash-loops and on an image that cannot be pulled, and roll back in place with rollout undo",
		ginkgo.Label("guards", "plugin"), func(ctx ginkgo.SpecContext) {
			const budget, maxUnavailable = 1, 2
			buildPlugin(ctx)
			ns := createRealNodeNamespace(ctx, "guards")
			s := createSidecarSet(ctx, sidecarSet(ns, "sidecar", "busybox:1.36").MaxUnavailable(intstr.FromInt32(maxUnavailable)).
				Annotation(appsv1beta1.FailureBudgetAnnotation, fmt.Sprint(budget)).
				Annotation(appsv1beta1.FailureWindowAnnotation, "15").Obj())
			runDeployment(ctx, app(ns, "web", 6).TerminationGracePeriod(2).Obj(), s.Name)
			uids := podUIDs(ctx, ns)

			for _, bad := range []struct {
				image, reason string
				// within: the pause comes at the crash, before the window
				within time.Duration
			}{
				{images.CrashLoopImage, `sidecar sidecar (exited with code 1 \(Error\) since the upgrade|restarts repeatedly \(CrashLoopBackOff\))`, 15 * time.Second},
				// A kubelet reports a start that failed on its image in
				// ErrImagePull, ImagePullBackOff and, once its restarts back
				// off, CrashLoopBackOff: none of them a crash of the image.
				{"busybox:1.36-invalid", `sidecar sidecar \((ErrImagePull|ImagePullBackOff|CrashLoopBackOff)\) not ready within 15s of the upgrade`, rolloutTimeout},
			} {
				ginkgo.By("rolling out " + bad.image)
				rec := recordRollout(ctx, ns, "sidecar", bad.image)
				changed := time.Now()
				setImage(ctx, s.Name, "sidecar", bad.image)
				r := execPlugin(ctx, "rollout", "status", s.Name, "--timeout", rolloutTimeout.String())
				ginkgo.AddReportEntry("kubectl sidecarset rollout status ("+bad.image+")", r.Stdout+r.Stderr)
				gomega.Expect(r.ExitCode).To(gomega.Equal(1), r.Stdout)
				gomega.Expect(r.Stderr).To(gomega.Equal(fmt.Sprintf(
					"Error: sidecarset %q paused itself: more upgraded pods fail than its failure budget allows\n", s.Name)))
				took := time.Since(changed)
				timing("paused itself on %s %s after the change", bad.image, seconds(took))
				gomega.Expect(took).To(gomega.BeNumerically("<", bad.within), "paused too late")
				paused := getSidecarSet(ctx, gomega.Default, s.Name)
				gomega.Expect(paused.Spec.UpdateStrategy.Paused).To(gomega.BeTrue())
				c := meta.FindStatusCondition(paused.Status.Conditions, appsv1beta1.SidecarSetConditionProgressing)
				gomega.Expect(c).NotTo(gomega.BeNil())
				gomega.Expect(c.Reason).To(gomega.Equal(appsv1beta1.ReasonFailureBudgetExceeded))
				gomega.Expect(c.Message).To(gomega.MatchRegexp(bad.reason))
				gomega.Consistently(func(g gomega.Gomega) {
					g.Expect(len(rec.Order())).To(gomega.BeNumerically("<=", budget+maxUnavailable), "pods that took the bad image")
				}).WithContext(ctx).Should(gomega.Succeed())

				ginkgo.By("undoing: every pod back on busybox:1.36, in place")
				undone := time.Now()
				_, err := runPlugin(ctx, "rollout", "undo", s.Name)
				gomega.Expect(err).NotTo(gomega.HaveOccurred())
				r = execPlugin(ctx, "rollout", "status", s.Name, "--timeout", rolloutTimeout.String())
				gomega.Expect(r.ExitCode).To(gomega.Equal(0), r.Stdout+r.Stderr)
				for _, p := range expectRolledOut(ctx, ns, appLabels, "sidecar", "busybox:1.36", rolloutTimeout) {
					gomega.Expect(p.UID).To(gomega.Equal(uids[p.Name]), "pod %s was recreated", p.Name)
					gomega.Expect(containerStatus(&p, "sidecar").State.Running).NotTo(gomega.BeNil())
					gomega.Expect(containerStatus(&p, "main").RestartCount).To(gomega.BeZero())
				}
				timing("rollout undo brought the pods back in place in %s", seconds(time.Since(undone)))
			}
		})
})

// expectRestartedAlone waits until every pod (the same ones as before) runs
// the image in the changed container, restarted with a new image ID, while
// every other container kept its container: restarts are the restart
// counts each container should have.
func expectRestartedAlone(ctx ginkgo.SpecContext, ns string, before map[types.UID]*corev1.Pod, changed, image string, restarts map[string]int32) {
	gomega.EventuallyWithOffset(1, func(g gomega.Gomega) {
		pods := listPods(ctx, g, ns, appLabels)
		g.Expect(pods).To(gomega.HaveLen(len(before)))
		for i := range pods {
			p := &pods[i]
			was, ok := before[p.UID]
			g.Expect(ok).To(gomega.BeTrue(), "pod %s was recreated", p.Name)
			for name, n := range restarts {
				st, old := containerStatus(p, name), containerStatus(was, name)
				g.Expect(st.RestartCount).To(gomega.Equal(n), "pod %s container %s", p.Name, name)
				g.Expect(st.Ready).To(gomega.BeTrue(), "pod %s container %s", p.Name, name)
				if name == changed {
					g.Expect(st.Image).To(gomega.Equal(qualified(image)), "pod %s", p.Name)
					g.Expect(st.ImageID).NotTo(gomega.Equal(old.ImageID), "pod %s container %s", p.Name, name)
				} else {
					g.Expect(st.ContainerID).To(gomega.Equal(old.ContainerID), "pod %s container %s restarted", p.Name, name)
				}
			}
			g.Expect(podReady(p)).To(gomega.BeTrue())
		}
	}, rolloutTimeout).WithContext(ctx).Should(gomega.Succeed())
}

// requirementsOf are CPU and memory requests and limits.
func requirementsOf(cpu, memory, cpuLimit, memoryLimit string) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpuLimit), corev1.ResourceMemory: resource.MustParse(memoryLimit)},
	}
}

// expectResized waits until every pod (the same ones) passes check, ready,
// its containers restarted as often as restarts says.
func expectResized(ctx ginkgo.SpecContext, ns string, uids map[types.UID]bool, restarts map[string]int32, check func(gomega.Gomega, *corev1.Pod)) {
	gomega.EventuallyWithOffset(1, func(g gomega.Gomega) {
		pods := listPods(ctx, g, ns, appLabels)
		g.Expect(pods).To(gomega.HaveLen(len(uids)))
		for i := range pods {
			p := &pods[i]
			g.Expect(uids).To(gomega.HaveKey(p.UID), "pod %s was recreated", p.Name)
			for name, n := range restarts {
				g.Expect(containerStatus(p, name).RestartCount).To(gomega.Equal(n), "pod %s container %s", p.Name, name)
			}
			g.Expect(podCondition(p, corev1.PodResizeInProgress)).To(gomega.BeNil())
			check(g, p)
			g.Expect(podReady(p)).To(gomega.BeTrue())
		}
	}, rolloutTimeout).WithContext(ctx).Should(gomega.Succeed())
}

// cgroupFile reads a file of a container's cgroup on the real node (cgroup
// v1: one hierarchy per controller), or "" if it cannot.
func cgroupFile(p *corev1.Pod, container, controller, file string) string {
	id := containerStatus(p, container).ContainerID
	_, id, _ = strings.Cut(id, "://")
	qos := ""
	switch p.Status.QOSClass {
	case corev1.PodQOSBurstable:
		qos = "burstable"
	case corev1.PodQOSBestEffort:
		qos = "besteffort"
	}
	data, err := os.ReadFile(filepath.Join("/sys/fs/cgroup", controller, node.CgroupRoot, "kubepods", qos, "pod"+string(p.UID), id, file))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// freeCPU is the real node's allocatable CPU, in millicores, less what its
// pods request.
func freeCPU(ctx context.Context, g gomega.Gomega) int64 {
	n := &corev1.Node{}
	g.Expect(env.Client.Get(ctx, types.NamespacedName{Name: framework.RealNodeName}, n)).To(gomega.Succeed())
	free := n.Status.Allocatable.Cpu().MilliValue()
	list := &corev1.PodList{}
	g.Expect(env.Client.List(ctx, list)).To(gomega.Succeed())
	for _, p := range list.Items {
		if p.Spec.NodeName != framework.RealNodeName || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		for _, c := range p.Spec.Containers {
			free -= c.Resources.Requests.Cpu().MilliValue()
		}
		for _, c := range p.Spec.InitContainers {
			if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
				free -= c.Resources.Requests.Cpu().MilliValue()
			}
		}
	}
	return free
}

// portProbe asks each pod's server on a port for its counter, every 50 ms,
// and records what answered.
type portProbe struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	served map[string]*served
}

// served is what one pod's port answered: the images in the order they
// first answered, the answers, and the failed requests.
type served struct {
	images   []string
	answers  int
	failures []string
}

func (s *served) String() string {
	return fmt.Sprintf("%d answers from %v, %d failures %v", s.answers, s.images, len(s.failures), s.failures)
}

func probePort(ctx context.Context, pods []corev1.Pod, port int) *portProbe {
	ctx, cancel := context.WithCancel(ctx)
	pp := &portProbe{cancel: cancel, served: map[string]*served{}}
	for i := range pods {
		p := pods[i].DeepCopy()
		rec := &served{}
		pp.served[p.Name] = rec
		pp.wg.Go(func() {
			defer ginkgo.GinkgoRecover()
			for ctx.Err() == nil {
				c, err := serverCounter(ctx, p, port)
				pp.mu.Lock()
				switch {
				case ctx.Err() != nil:
				case err != nil:
					rec.failures = append(rec.failures, time.Now().Format("15:04:05.000")+" "+err.Error())
				default:
					rec.answers++
					if !slices.Contains(rec.images, c.Image) {
						rec.images = append(rec.images, c.Image)
					}
				}
				pp.mu.Unlock()
				select {
				case <-ctx.Done():
				case <-time.After(50 * time.Millisecond):
				}
			}
		})
	}
	return pp
}

// stop ends the probe and returns what each pod served.
func (pp *portProbe) stop() map[string]*served {
	pp.cancel()
	pp.wg.Wait()
	return pp.served
}
