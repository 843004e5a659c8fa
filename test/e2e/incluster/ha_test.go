package incluster_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/cmd/manager/app"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
	"github.com/sidecarset-operator/sidecarset-operator/test/promtext"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/names"
)

// The high-availability guarantees of docs/install.md, each shown here with
// the operator's two replicas from its image on the real node: pod
// admission through the webhooks' Service while the operator is updated,
// while a replica or the leader is killed, and the controller's handover
// in the middle of a rollout.
var _ = ginkgo.Describe("Two replicas", ginkgo.Ordered, ginkgo.Label(realNodeLabel), func() {
	const (
		haSet      = "ha-created"
		rolloutSet = "ha-rollout"
		creators   = 20
	)
	var createdNS string

	ginkgo.BeforeAll(func(ctx ginkgo.SpecContext) {
		waitManagers(ctx, imageDigest)
		recordInstallReady()
		created := builder.MakeNamespace("ha-created").Obj()
		gomega.Expect(env.Client.Create(ctx, created)).To(gomega.Succeed())
		createdNS = created.Name
		s := builder.MakeSidecarSet(haSet, "app", "ha").Namespace(createdNS).
			Containers(builder.MakeContainer("sidecar", "busybox:1.36").Command("sleep", "999d")).Obj()
		gomega.Expect(env.Client.Create(ctx, s)).To(gomega.Succeed())
		ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
			gomega.Expect(client.IgnoreNotFound(env.Client.Delete(ctx, created))).To(gomega.Succeed())
			gomega.Expect(client.IgnoreNotFound(env.Client.Delete(ctx, s))).To(gomega.Succeed())
		})
		waitInjected(ctx, createdNS, "ha")
		waitScoped(ctx)
	}, ginkgo.NodeTimeout(5*time.Minute))

	ginkgo.It("should update the operator to a new image while 20 creators create pods: no pod refused or uninjected, no webhook call failed",
		func(ctx ginkgo.SpecContext) {
			ginkgo.By("building a release of this commit under another digest, as an operator upgrade brings")
			next, err := env.BuildRelease(ctx, env.RepoRoot, "ha")
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			suite, err := env.SuiteRelease(ctx)
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
				ginkgo.By("returning to the suite's install")
				gomega.Expect(env.ApplyRelease(ctx, suite.CRD, suite.Upgrade)).To(gomega.Succeed())
				waitManagers(ctx, imageDigest)
			}, ginkgo.NodeTimeout(5*time.Minute))
			old := managerNames(ctx, gomega.Default)

			ginkgo.By(fmt.Sprintf("applying it while %d creators create pods back to back (dry run)", creators))
			errorsBefore := webhookErrors(ctx)
			c := startCreators(ctx, createdNS, "ha", "sidecar", creators, 0, true)
			time.Sleep(2 * time.Second)
			started := time.Now()
			gomega.Expect(env.ApplyRelease(ctx, next.CRD, next.Upgrade)).To(gomega.Succeed())
			managers := waitManagers(ctx, next.Digest)
			replaced := time.Since(started)
			// The old replicas' pods are gone once they stopped serving.
			gomega.Eventually(func(g gomega.Gomega) {
				g.Expect(managerNames(ctx, g)).To(gomega.ConsistOf(podNames(managers)))
			}).WithContext(ctx).Should(gomega.Succeed())
			gone := time.Since(started)
			time.Sleep(3 * time.Second)
			c.stop()
			failed := webhookErrors(ctx).since(errorsBefore)
			timing("operator updated to a new image: both replicas replaced in %.1f s, the old ones gone by %.1f s; "+
				"%d pods admitted by %d creators, %d refused, %d without the sidecar; webhook calls that failed, seen by the API server: %.0f",
				replaced.Seconds(), gone.Seconds(), c.created.Load(), creators, c.refused.Load(), c.uninjected.Load(), failed.total())

			for _, name := range old {
				gomega.Expect(podNames(managers)).NotTo(gomega.ContainElement(name), "manager %s was not replaced", name)
			}
			gomega.Expect(c.created.Load()).To(gomega.BeNumerically(">", 0))
			gomega.Expect(c.refused.Load()).To(gomega.BeZero(), "refused: %v", c.failures)
			gomega.Expect(c.uninjected.Load()).To(gomega.BeZero(), "pods created without the sidecar: %v", c.failures)
			gomega.Expect(failed).To(gomega.BeEmpty(), "the API server's webhook errors")
		}, ginkgo.NodeTimeout(10*time.Minute))

	ginkgo.It("should inject every pod admitted while a replica's container is killed (SIGKILL), then the leader's, refuse only those sent to it before the Service dropped it, and hand the lease over",
		func(ctx ginkgo.SpecContext) {
			managers := waitManagers(ctx, imageDigest)
			leader, identity := leaderPod(ctx, managers)
			follower := managers[0]
			if follower.Name == leader.Name {
				follower = managers[1]
			}
			errorsBefore := webhookErrors(ctx)
			c := startCreators(ctx, createdNS, "ha", "sidecar", creators, 0, true)
			time.Sleep(2 * time.Second)

			ginkgo.By("killing the follower " + follower.Name)
			followerKill := killManager(ctx, follower)
			waitRestarted(ctx, follower)
			followerBack := time.Since(followerKill.at)
			time.Sleep(2 * time.Second)

			ginkgo.By("killing the leader " + leader.Name)
			leaderKill := killManager(ctx, leader)
			handover := waitHandover(ctx, identity, leaderKill.at)
			waitRestarted(ctx, leader)
			leaderBack := time.Since(leaderKill.at)
			time.Sleep(2 * time.Second)
			c.stop()
			failed := webhookErrors(ctx).since(errorsBefore)
			lease := getLease(ctx, gomega.Default)
			kills := []kill{followerKill, leaderKill}
			outside := 0
			for _, at := range c.refusedAt {
				if !slices.ContainsFunc(kills, func(k kill) bool { return k.covers(at) }) {
					outside++
				}
			}
			timing("follower killed: the Service dropped it after %d ms, %d creations refused meanwhile, back and ready in %.1f s; "+
				"leader killed: the Service dropped it after %d ms, %d creations refused meanwhile, the lease taken over in %.1f s "+
				"(lease duration %d s), back in %.1f s; %d pods admitted by %d creators, %d refused (%d outside those windows), "+
				"%d without the sidecar; webhook calls that failed, seen by the API server: %.0f",
				followerKill.dropped.Milliseconds(), followerKill.refusals(c.refusedAt), followerBack.Seconds(),
				leaderKill.dropped.Milliseconds(), leaderKill.refusals(c.refusedAt), handover.Seconds(), *lease.Spec.LeaseDurationSeconds,
				leaderBack.Seconds(), c.created.Load(), creators, c.refused.Load(), outside, c.uninjected.Load(), failed.total())

			gomega.Expect(c.created.Load()).To(gomega.BeNumerically(">", 0))
			gomega.Expect(c.uninjected.Load()).To(gomega.BeZero(), "pods created without the sidecar: %v", c.failures)
			gomega.Expect(outside).To(gomega.BeZero(), "creations refused outside the windows in which the Service listed a killed replica: %v", c.failures)
			gomega.Expect(handover).To(gomega.BeNumerically("<=", handoverBound(lease)),
				"the other replica took the lease later than its duration allows")
		}, ginkgo.NodeTimeout(10*time.Minute))

	ginkgo.It("should finish a 200-pod rollout at maxUnavailable 10 when the leader is killed in its middle: no sidecar restarted twice, maxUnavailable held, status continuous",
		func(ctx ginkgo.SpecContext) {
			const pods, maxUnavailable = 200, 10
			managers := waitManagers(ctx, imageDigest)
			ns := builder.MakeNamespace("ha-rollout").Obj()
			gomega.Expect(env.Client.Create(ctx, ns)).To(gomega.Succeed())
			s := builder.MakeSidecarSet(rolloutSet, "app", "rollout").Namespace(ns.Name).MaxUnavailable(intstr.FromInt32(maxUnavailable)).
				Containers(builder.MakeContainer("sidecar", "busybox:1.36").Command("sleep", "999d")).Obj()
			gomega.Expect(env.Client.Create(ctx, s)).To(gomega.Succeed())
			ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
				gomega.Expect(client.IgnoreNotFound(env.Client.Delete(ctx, ns))).To(gomega.Succeed())
				gomega.Expect(client.IgnoreNotFound(env.Client.Delete(ctx, s))).To(gomega.Succeed())
			})
			waitInjected(ctx, ns.Name, "rollout")
			ginkgo.By(fmt.Sprintf("creating %d pods on the kwok nodes", pods))
			d := builder.MakeDeployment("rollout", ns.Name, pods).PodLabel("app", "rollout").
				Containers(builder.MakeContainer("main", "nginx:1.25")).Obj()
			gomega.Expect(env.Client.Create(ctx, d)).To(gomega.Succeed())
			gomega.Eventually(func(g gomega.Gomega) {
				got := getSidecarSet(ctx, g, rolloutSet)
				g.Expect([]int32{got.Status.MatchedPods, got.Status.UpdatedPods, got.Status.ReadyPods}).To(gomega.Equal([]int32{pods, pods, pods}))
			}).WithContext(ctx).Should(gomega.Succeed())
			leader, identity := leaderPod(ctx, managers)

			ginkgo.By("changing the sidecar's image, and sampling the pods and the status")
			smp := startRolloutSampler(ctx, ns.Name, "rollout", rolloutSet, "docker.io/library/busybox:1.37")
			changed := time.Now()
			gomega.Eventually(func(g gomega.Gomega) {
				got := getSidecarSet(ctx, g, rolloutSet)
				got.Spec.Containers[0].Image = "busybox:1.37"
				g.Expect(env.Client.Update(ctx, got)).To(gomega.Succeed())
			}).WithContext(ctx).Should(gomega.Succeed())
			gomega.Eventually(func(g gomega.Gomega) {
				got := getSidecarSet(ctx, g, rolloutSet)
				g.Expect(got.Status.ObservedGeneration).To(gomega.Equal(got.Generation))
				g.Expect(got.Status.UpdatedPods).To(gomega.BeNumerically(">=", pods/4))
			}).WithContext(ctx).WithPolling(50 * time.Millisecond).Should(gomega.Succeed())
			atKill := getSidecarSet(ctx, gomega.Default, rolloutSet).Status.UpdatedPods

			ginkgo.By(fmt.Sprintf("killing the leader %s with %d pods updated", leader.Name, atKill))
			handover := waitHandover(ctx, identity, killManager(ctx, leader).at)
			gomega.Eventually(func(g gomega.Gomega) {
				got := getSidecarSet(ctx, g, rolloutSet)
				g.Expect(got.Status.ObservedGeneration).To(gomega.Equal(got.Generation))
				g.Expect([]int32{got.Status.MatchedPods, got.Status.UpdatedPods, got.Status.ReadyPods, got.Status.UpdatedReadyPods}).
					To(gomega.Equal([]int32{pods, pods, pods, pods}))
				for _, p := range appPods(ctx, g, ns.Name, "rollout") {
					g.Expect(containerStatus(p, "sidecar").Image).To(gomega.Equal("docker.io/library/busybox:1.37"), "pod %s", p.Name)
				}
			}).WithContext(ctx).Should(gomega.Succeed())
			done := time.Since(changed)
			waitRestarted(ctx, leader)
			samples := smp.stop()
			lease := getLease(ctx, gomega.Default)
			timing("%d-pod rollout at maxUnavailable %d, leader killed with %d updated: lease taken over in %.1f s (lease duration %d s), "+
				"rollout done in %.1f s; at most %d pods unavailable in %d samples",
				pods, maxUnavailable, atKill, handover.Seconds(), *lease.Spec.LeaseDurationSeconds, done.Seconds(), smp.maxUnavailable, len(samples))

			gomega.Expect(handover).To(gomega.BeNumerically("<=", handoverBound(lease)))
			gomega.Expect(smp.maxUnavailable).To(gomega.BeNumerically("<=", maxUnavailable), "pods unavailable at once")
			for _, p := range appPods(ctx, gomega.Default, ns.Name, "rollout") {
				gomega.Expect(containerStatus(p, "sidecar").RestartCount).To(gomega.Equal(int32(1)), "pod %s's sidecar restarts", p.Name)
				gomega.Expect(containerStatus(p, "main").RestartCount).To(gomega.BeZero(), "pod %s's app restarts", p.Name)
			}
			// Once the status describes the new image's generation, its count of
			// updated pods only grows: the new leader starts from the pods'
			// state, not from zero.
			generation := getSidecarSet(ctx, gomega.Default, rolloutSet).Generation
			var previous *rolloutSample
			for i := range samples {
				smp := &samples[i]
				gomega.Expect(smp.matched).To(gomega.Equal(int32(pods)), "matched pods at %s", smp.at.Format(time.StampMilli))
				if smp.observedGeneration != generation {
					continue
				}
				if previous != nil {
					gomega.Expect(smp.updated).To(gomega.BeNumerically(">=", previous.updated),
						"updated pods went back from %d to %d at %s", previous.updated, smp.updated, smp.at.Format(time.StampMilli))
				}
				previous = smp
			}
		}, ginkgo.NodeTimeout(15*time.Minute))

	ginkgo.It("should let a drain evict one replica at a time, drain it, and add its successor to the webhooks' Service only once it injects",
		func(ctx ginkgo.SpecContext) {
			managers := waitManagers(ctx, imageDigest)
			errorsBefore := webhookErrors(ctx)
			c := startCreators(ctx, createdNS, "ha", "sidecar", creators, 0, true)
			gone, kept := managers[0], managers[1]
			ginkgo.By("evicting the replica " + gone.Name + " as a drain does, then the other, and calling the first one's successor the moment the Service lists it")
			before := map[string]bool{}
			gomega.Eventually(func(g gomega.Gomega) {
				addresses := readyWebhookAddresses(ctx, g)
				g.Expect(addresses).To(gomega.HaveLen(2))
				for _, a := range addresses {
					before[a] = true
				}
			}).WithContext(ctx).Should(gomega.Succeed())
			deleted := time.Now()
			gomega.Expect(env.Client.SubResource("eviction").Create(ctx, &gone, &policyv1.Eviction{})).To(gomega.Succeed())
			// The PodDisruptionBudget keeps one replica available: the other
			// cannot be evicted until the first one's successor is ready.
			err := env.Client.SubResource("eviction").Create(ctx, &kept, &policyv1.Eviction{})
			gomega.Expect(apierrors.IsTooManyRequests(err)).To(gomega.BeTrue(), "evicting the second replica: %v", err)
			var joined string
			gomega.Eventually(func(g gomega.Gomega) {
				for _, a := range readyWebhookAddresses(ctx, g) {
					if !before[a] {
						joined = a
					}
				}
				g.Expect(joined).NotTo(gomega.BeEmpty())
			}).WithContext(ctx).WithPolling(20 * time.Millisecond).Should(gomega.Succeed())
			listed := time.Since(deleted)
			review := admitDirectly(ctx, joined, builder.MakePod("joined", createdNS).Label("app", "ha").Obj())
			answered := time.Since(deleted)
			waitManagers(ctx, imageDigest)
			ginkgo.By("evicting the other replica, which the budget now allows")
			gomega.Eventually(func(g gomega.Gomega) {
				g.Expect(env.Client.SubResource("eviction").Create(ctx, &kept, &policyv1.Eviction{})).To(gomega.Succeed())
			}).WithContext(ctx).Should(gomega.Succeed())
			gomega.Eventually(func(g gomega.Gomega) {
				names := managerNames(ctx, g)
				g.Expect(names).NotTo(gomega.ContainElement(gone.Name))
				g.Expect(names).NotTo(gomega.ContainElement(kept.Name))
			}).WithContext(ctx).Should(gomega.Succeed())
			waitManagers(ctx, imageDigest)
			drained := time.Since(deleted)
			time.Sleep(2 * time.Second)
			c.stop()
			failed := webhookErrors(ctx).since(errorsBefore)
			timing("replica evicted, the other's eviction refused by the budget: its successor listed by the Service %.1f s after the eviction "+
				"and injecting when called directly at %.1f s; both replicas evicted and replaced by %.1f s; "+
				"%d pods admitted by %d creators meanwhile, %d refused, %d without the sidecar; webhook calls that failed, seen by the API server: %.0f",
				listed.Seconds(), answered.Seconds(), drained.Seconds(), c.created.Load(), creators, c.refused.Load(), c.uninjected.Load(), failed.total())

			gomega.Expect(review.Allowed).To(gomega.BeTrue(), "the new replica's answer: %+v", review.Result)
			gomega.Expect(string(review.Patch)).To(gomega.ContainSubstring(`"name":"sidecar"`), "the new replica did not inject")
			gomega.Expect(c.refused.Load()).To(gomega.BeZero(), "refused: %v", c.failures)
			gomega.Expect(c.uninjected.Load()).To(gomega.BeZero(), "pods created without the sidecar: %v", c.failures)
			gomega.Expect(failed).To(gomega.BeEmpty(), "the API server's webhook errors")
		}, ginkgo.NodeTimeout(10*time.Minute))
})

// kill is a manager's container killed: when, and how long the webhooks'
// Service went on listing its address as ready.
type kill struct {
	at      time.Time
	dropped time.Duration
}

// killSlack is how long after the Service dropped a killed replica a
// refusal is still its: the API server reads the Service's endpoints from
// its own informer, and a call it sent just before returns after.
const killSlack = time.Second

// covers tells whether a refusal at t fell in the window in which the
// Service listed the killed replica.
func (k kill) covers(t time.Time) bool {
	return !t.Before(k.at) && !t.After(k.at.Add(k.dropped+killSlack))
}

// refusals counts the refusals the kill's window covers.
func (k kill) refusals(at []time.Time) int {
	n := 0
	for _, t := range at {
		if k.covers(t) {
			n++
		}
	}
	return n
}

// killManager kills a manager's container with SIGKILL and waits for the
// webhooks' Service to stop listing its address as ready.
func killManager(ctx context.Context, p corev1.Pod) kill {
	address := webhookAddress(p)
	gomega.Eventually(func(g gomega.Gomega) {
		g.Expect(readyWebhookAddresses(ctx, g)).To(gomega.ContainElement(address))
	}).WithContext(ctx).Should(gomega.Succeed())
	k := kill{at: time.Now()}
	gomega.Expect(env.Node.KillContainer(ctx, p.Status.ContainerStatuses[0].ContainerID)).To(gomega.Succeed())
	gomega.Eventually(func(g gomega.Gomega) {
		g.Expect(readyWebhookAddresses(ctx, g)).NotTo(gomega.ContainElement(address))
	}).WithContext(ctx).WithPolling(20 * time.Millisecond).Should(gomega.Succeed())
	k.dropped = time.Since(k.at)
	return k
}

// waitInjected waits until a pod labelled app=<app> created in ns gets
// the sidecar (a dry run): the webhook serves the SidecarSet.
func waitInjected(ctx context.Context, ns, app string) {
	gomega.Eventually(func(g gomega.Gomega) {
		probe := builder.MakePod("probe", ns).Label("app", app).Obj()
		g.Expect(env.Client.Create(ctx, probe, client.DryRunAll)).To(gomega.Succeed())
		g.Expect(containerNames(*probe)).To(gomega.ContainElement("sidecar"))
	}).WithContext(ctx).Should(gomega.Succeed())
}

func podNames(pods []corev1.Pod) []string {
	var names []string
	for _, p := range pods {
		names = append(names, p.Name)
	}
	return names
}

func getLease(ctx context.Context, g gomega.Gomega) *coordinationv1.Lease {
	lease := &coordinationv1.Lease{}
	g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: operatorNamespace, Name: app.LeaderElectionID}, lease)).To(gomega.Succeed())
	g.Expect(lease.Spec.HolderIdentity).NotTo(gomega.BeNil())
	return lease
}

// leaderPod returns the manager that holds the lease, and its identity
// there.
func leaderPod(ctx context.Context, managers []corev1.Pod) (corev1.Pod, string) {
	var leader corev1.Pod
	var holder string
	gomega.Eventually(func(g gomega.Gomega) {
		holder = *getLease(ctx, g).Spec.HolderIdentity
		i := slices.IndexFunc(managers, func(p corev1.Pod) bool { return strings.HasPrefix(holder, p.Name+"_") })
		g.Expect(i).To(gomega.BeNumerically(">=", 0), "the lease is held by %s", holder)
		leader = managers[i]
	}).WithContext(ctx).Should(gomega.Succeed())
	return leader, holder
}

// handoverBound is the latest another replica takes the lease of a killed
// leader. A candidate polls the Lease every retry period (2 s,
// controller-runtime's default) stretched by client-go's jitter (up to 2.2
// times: 4.4 s), and counts the lease's duration from the poll at which it
// last saw the record change: up to one poll after the killed leader's last
// renewal. The lease's duration later, the next poll takes it: at most its
// duration and two polls after the kill; 2 s more for the API server's
// answers on a loaded machine.
func handoverBound(lease *coordinationv1.Lease) time.Duration {
	const poll, slack = 2 * time.Second * 22 / 10, 2 * time.Second
	return time.Duration(*lease.Spec.LeaseDurationSeconds)*time.Second + 2*poll + slack
}

// waitHandover waits for another manager process than identity (a
// killed leader's) to hold the lease, and returns how long after since it
// did.
func waitHandover(ctx context.Context, identity string, since time.Time) time.Duration {
	gomega.Eventually(func(g gomega.Gomega) {
		g.Expect(*getLease(ctx, g).Spec.HolderIdentity).NotTo(gomega.Equal(identity))
	}).WithContext(ctx).WithPolling(100 * time.Millisecond).Should(gomega.Succeed())
	return time.Since(since)
}

// waitRestarted waits for a manager whose container was killed to run
// again, ready.
func waitRestarted(ctx context.Context, p corev1.Pod) {
	restarts := p.Status.ContainerStatuses[0].RestartCount
	gomega.Eventually(func(g gomega.Gomega) {
		got := &corev1.Pod{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(&p), got)).To(gomega.Succeed())
		g.Expect(got.Status.ContainerStatuses[0].RestartCount).To(gomega.BeNumerically(">", restarts))
		g.Expect(ready(*got)).To(gomega.BeTrue())
	}).WithContext(ctx).WithPolling(100 * time.Millisecond).Should(gomega.Succeed())
}

// webhookAddress is where a manager's pod serves the webhooks (host:port):
// its IP and its webhook containerPort (config/manager).
func webhookAddress(p corev1.Pod) string {
	return net.JoinHostPort(p.Status.PodIP, "9443")
}

// readyWebhookAddresses returns the addresses the webhooks' Service lists
// as ready, each with the port it serves on (host:port).
func readyWebhookAddresses(ctx context.Context, g gomega.Gomega) []string {
	endpoints := &discoveryv1.EndpointSliceList{}
	g.Expect(env.Client.List(ctx, endpoints, client.InNamespace(operatorNamespace),
		client.MatchingLabels{discoveryv1.LabelServiceName: "sidecarset-operator-webhook"})).To(gomega.Succeed())
	var ready []string
	for _, s := range endpoints.Items {
		g.Expect(s.Ports).To(gomega.HaveLen(1))
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready != nil && *ep.Conditions.Ready {
				for _, a := range ep.Addresses {
					ready = append(ready, net.JoinHostPort(a, fmt.Sprint(*s.Ports[0].Port)))
				}
			}
		}
	}
	return ready
}

// admitDirectly sends the creation of pod to the pod webhook of the replica
// at address (host:port), as the API server would (its client certificate, the Service's
// name), and returns the answer.
func admitDirectly(ctx context.Context, address string, pod *corev1.Pod) *admissionv1.AdmissionResponse {
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{}
	gomega.Expect(env.Client.Get(ctx, types.NamespacedName{Name: "sidecarset-operator-mutating"}, mwc)).To(gomega.Succeed())
	i := slices.IndexFunc(mwc.Webhooks, func(w admissionregistrationv1.MutatingWebhook) bool { return w.Name == names.PodWebhookName })
	gomega.Expect(i).To(gomega.BeNumerically(">=", 0))
	w := mwc.Webhooks[i]
	roots := x509.NewCertPool()
	gomega.Expect(roots.AppendCertsFromPEM(w.ClientConfig.CABundle)).To(gomega.BeTrue())
	cert, err := tls.LoadX509KeyPair(env.Cluster.WebhookClientCertPath(), env.Cluster.WebhookClientKeyPath())
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	httpClient := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: roots, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12,
		ServerName: w.ClientConfig.Service.Name + "." + w.ClientConfig.Service.Namespace + ".svc",
	}}}
	raw, err := json.Marshal(pod)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	review := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       types.UID("direct-" + pod.Name),
			Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
			Namespace: pod.Namespace,
			Operation: admissionv1.Create,
			Object:    runtime.RawExtension{Raw: raw},
		},
	}
	body, err := json.Marshal(review)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+address+*w.ClientConfig.Service.Path, bytes.NewReader(body))
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpClient.Do(req)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	out, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	gomega.Expect(resp.StatusCode).To(gomega.Equal(http.StatusOK), "%s", out)
	answer := admissionv1.AdmissionReview{}
	gomega.Expect(json.Unmarshal(out, &answer)).To(gomega.Succeed())
	gomega.Expect(answer.Response).NotTo(gomega.BeNil())
	return answer.Response
}

// webhookCalls are the API server's counts of failed calls to the
// operator's webhooks, by series.
type webhookCalls map[string]float64

// webhookErrors reads, from the API server's metrics, the calls to the
// operator's webhooks that failed: rejected for an error calling them, or
// answered with another code than 200, or failed open.
func webhookErrors(ctx context.Context) webhookCalls {
	raw, err := env.Clientset.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	scrape, err := promtext.Parse(raw)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	out := webhookCalls{}
	ours := func(labels map[string]string) bool {
		return strings.HasSuffix(labels["name"], ".sidecarset-operator.dev")
	}
	for _, metric := range []string{"apiserver_admission_webhook_rejection_count", "apiserver_admission_webhook_fail_open_count"} {
		for _, s := range scrape[metric] {
			// A rejection without error is the webhook denying: not a failure.
			denied := metric == "apiserver_admission_webhook_rejection_count" && s.Labels["error_type"] == "no_error"
			if ours(s.Labels) && !denied {
				out[fmt.Sprintf("%s%v", metric, s.Labels)] += s.Value
			}
		}
	}
	for _, s := range scrape["apiserver_admission_webhook_request_total"] {
		if ours(s.Labels) && s.Labels["code"] != "200" {
			out[fmt.Sprintf("apiserver_admission_webhook_request_total%v", s.Labels)] += s.Value
		}
	}
	return out
}

// since returns the series that grew since before, by how much.
func (w webhookCalls) since(before webhookCalls) webhookCalls {
	out := webhookCalls{}
	for k, v := range w {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

func (w webhookCalls) total() float64 {
	var n float64
	for _, v := range w {
		n += v
	}
	return n
}

// rolloutSample is what the rollout sampler saw at one time.
type rolloutSample struct {
	at                 time.Time
	matched, updated   int32
	observedGeneration int64
}

// rolloutSampler lists a rollout's pods and reads its SidecarSet's status
// every 100 ms, and keeps the most pods it saw unavailable at once: not
// ready, or with the sidecar's new image in the spec and not yet running.
type rolloutSampler struct {
	mu             sync.Mutex
	samples        []rolloutSample
	maxUnavailable int
	cancel         context.CancelFunc
	wg             sync.WaitGroup
}

func startRolloutSampler(ctx context.Context, ns, app, set, image string) *rolloutSampler {
	ctx, cancel := context.WithCancel(ctx)
	s := &rolloutSampler{cancel: cancel}
	s.wg.Go(func() {
		defer ginkgo.GinkgoRecover()
		for ctx.Err() == nil {
			list := &corev1.PodList{}
			got := &appsv1beta1.SidecarSet{}
			if env.Client.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{"app": app}) == nil &&
				env.Client.Get(ctx, types.NamespacedName{Name: set}, got) == nil {
				unavailable := 0
				for _, p := range list.Items {
					if p.DeletionTimestamp != nil {
						continue
					}
					i := slices.IndexFunc(p.Spec.Containers, func(c corev1.Container) bool { return c.Name == "sidecar" })
					upgrading := i >= 0 && "docker.io/library/"+p.Spec.Containers[i].Image == image && containerStatus(p, "sidecar").Image != image
					if !ready(p) || upgrading {
						unavailable++
					}
				}
				s.mu.Lock()
				s.maxUnavailable = max(s.maxUnavailable, unavailable)
				s.samples = append(s.samples, rolloutSample{at: time.Now(), matched: got.Status.MatchedPods, updated: got.Status.UpdatedPods,
					observedGeneration: got.Status.ObservedGeneration})
				s.mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	})
	return s
}

func (s *rolloutSampler) stop() []rolloutSample {
	s.cancel()
	s.wg.Wait()
	return s.samples
}
