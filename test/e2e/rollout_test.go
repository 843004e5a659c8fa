package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sidecarset-operator/sidecarset-operator/api/revision"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/e2e/framework"
)

// badImage never becomes ready on the kwok kubelet (its tag ends in
// "invalid": the container waits in ErrImagePull).
const badImage = "centos:invalid"

// historyEntry is an entry of `rollout history -o json`.
type historyEntry struct {
	Revision      int64       `json:"revision"`
	Name          string      `json:"name"`
	CustomVersion string      `json:"customVersion"`
	Images        []string    `json:"images"`
	Created       metav1.Time `json:"created"`
	Current       bool        `json:"current"`
	Pods          int         `json:"pods"`
}

// controllerRevisions lists a SidecarSet's ControllerRevisions, by number.
func controllerRevisions(ctx context.Context, set string) []appsv1.ControllerRevision {
	list := &appsv1.ControllerRevisionList{}
	gomega.ExpectWithOffset(1, env.Client.List(ctx, list, client.InNamespace(framework.OperatorNamespace),
		client.MatchingLabels{appsv1beta1.SidecarSetNameLabel: set})).To(gomega.Succeed())
	slices.SortFunc(list.Items, func(a, b appsv1.ControllerRevision) int { return int(a.Revision - b.Revision) })
	return list.Items
}

// expectHistory checks `rollout history -o json` against the
// ControllerRevisions and the pods: one entry per revision, with its name,
// number, creation, custom version and images, the current one marked, and
// the pods running each counted.
func expectHistory(ctx context.Context, set string, pods map[string]int) []historyEntry {
	out, err := runPlugin(ctx, "rollout", "history", set, "-o", "json")
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred())
	var got []historyEntry
	gomega.ExpectWithOffset(1, json.Unmarshal([]byte(out), &got)).To(gomega.Succeed(), out)
	latest := getSidecarSet(ctx, gomega.Default, set).Status.LatestRevision
	var want []historyEntry
	for _, r := range controllerRevisions(ctx, set) {
		data, err := revision.Decode(r.Data.Raw)
		gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred())
		var images []string
		for _, c := range append(slices.Clone(data.InitContainers), data.Containers...) {
			images = append(images, c.Name+"="+c.Image)
		}
		want = append(want, historyEntry{
			Revision: r.Revision, Name: r.Name, CustomVersion: r.Labels[appsv1beta1.SidecarSetCustomVersionLabel], Images: images,
			Created: r.CreationTimestamp, Current: r.Name == latest, Pods: pods[r.Name],
		})
	}
	gomega.ExpectWithOffset(1, got).To(gomega.Equal(want), out)
	return got
}

// podUIDs maps a namespace's application pods to their UIDs.
func podUIDs(ctx context.Context, ns string) map[string]types.UID {
	uids := map[string]types.UID{}
	for _, p := range listPods(ctx, gomega.Default, ns, appLabels) {
		uids[p.Name] = p.UID
	}
	return uids
}

// The rollout commands of the kubectl plugin, and the rollout guards they
// report on, on the kwok cluster.
var _ = ginkgo.Describe("Rollouts you can watch, stop and undo", ginkgo.Label("plugin", "rollout"), ginkgo.Ordered, func() {
	ginkgo.BeforeAll(buildPlugin)

	ginkgo.It("should follow a rollout of 50 pods with rollout status until it exits 0, and list it in rollout history", func(ctx ginkgo.SpecContext) {
		ns := createNamespace(ctx, "rollout-status")
		s := createSidecarSet(ctx, sidecarSet(ns, "sidecar", v1).MaxUnavailable(intstr.FromInt32(10)).Obj())
		runDeployment(ctx, app(ns, "web", 50).Obj(), s.Name)
		expectStatus(ctx, s.Name, 1, counts{Matched: 50, Updated: 50, Ready: 50, UpdatedReady: 50})
		first := getSidecarSet(ctx, gomega.Default, s.Name).Status.LatestRevision

		setImage(ctx, s.Name, "sidecar", v2)
		r := execPlugin(ctx, "rollout", "status", s.Name, "--timeout", rolloutTimeout.String())
		ginkgo.AddReportEntry("kubectl sidecarset rollout status", r.Stdout+r.Stderr)
		gomega.Expect(r.ExitCode).To(gomega.Equal(0), r.Stderr)
		gomega.Expect(r.Stdout).To(gomega.ContainSubstring(fmt.Sprintf("Waiting for sidecarset %q rollout to finish: ", s.Name)))
		gomega.Expect(r.Stdout).To(gomega.MatchRegexp(`\n  upgrading: sidecar sidecar not ready yet on ` + ns + `/web-\S+`))
		latest := getSidecarSet(ctx, gomega.Default, s.Name).Status.LatestRevision
		gomega.Expect(r.Stdout).To(gomega.HaveSuffix(fmt.Sprintf(
			"sidecarset %q successfully rolled out: all 50 matched pods run the latest sidecars (revision %s)\n", s.Name, latest)))
		expectRolledOut(ctx, ns, appLabels, "sidecar", v2)

		ginkgo.By("listing the history: both revisions, the new one current with every pod")
		history := expectHistory(ctx, s.Name, map[string]int{latest: 50})
		gomega.Expect(history).To(gomega.HaveLen(2))
		gomega.Expect(history[0].Name).To(gomega.Equal(first))
		gomega.Expect(history[1].Images).To(gomega.Equal([]string{"sidecar=" + v2}))

		ginkgo.By("showing one revision")
		out, err := runPlugin(ctx, "rollout", "history", s.Name, "--revision", "1")
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(out).To(gomega.HavePrefix(fmt.Sprintf("sidecarset %q revision 1\n  name:            %s\n", s.Name, first)))
		gomega.Expect(out).To(gomega.ContainSubstring("    image: " + v1 + "\n"))
	})

	ginkgo.It("should pause a canary rollout onto an image that never becomes ready after no more than the failure budget plus maxUnavailable pods, "+
		"fail rollout status, and bring every pod back in place with rollout undo", ginkgo.Label("guards"), func(ctx ginkgo.SpecContext) {
		const budget, maxUnavailable = 3, 4
		ns := createNamespace(ctx, "rollout-undo")
		s := createSidecarSet(ctx, sidecarSet(ns, "sidecar", v1).
			Partition(intstr.FromInt32(4)).MaxUnavailable(intstr.FromInt32(maxUnavailable)).
			Annotation(appsv1beta1.FailureBudgetAnnotation, fmt.Sprint(budget)).
			Annotation(appsv1beta1.FailureWindowAnnotation, "5").Obj())
		runDeployment(ctx, app(ns, "web", 12).Obj(), s.Name)
		expectStatus(ctx, s.Name, 1, counts{Matched: 12, Updated: 12, Ready: 12, UpdatedReady: 12})
		first := getSidecarSet(ctx, gomega.Default, s.Name).Status.LatestRevision
		uids := podUIDs(ctx, ns)

		ginkgo.By("rolling an image that never becomes ready out to a canary of 8 pods, 4 at a time")
		rec := recordRollout(ctx, ns, "sidecar", badImage)
		setImage(ctx, s.Name, "sidecar", badImage)
		r := execPlugin(ctx, "rollout", "status", s.Name, "--timeout", rolloutTimeout.String())
		ginkgo.AddReportEntry("kubectl sidecarset rollout status (bad image)", r.Stdout+r.Stderr)
		gomega.Expect(r.ExitCode).To(gomega.Equal(1), r.Stdout)
		gomega.Expect(r.Stderr).To(gomega.Equal(fmt.Sprintf(
			"Error: sidecarset %q paused itself: more upgraded pods fail than its failure budget allows\n", s.Name)))
		gomega.Expect(r.Stdout).To(gomega.ContainSubstring(fmt.Sprintf("sidecarset %q rollout failed: 4 of 12 pods updated, 0 of them ready\n"+
			"  failed: sidecar sidecar (ErrImagePull) not ready within 5s of the upgrade on %s/web-", s.Name, ns)))
		gomega.Expect(r.Stdout).To(gomega.ContainSubstring("\n  " + appsv1beta1.ReasonFailureBudgetExceeded + ": 4 pods upgraded to revision "))

		paused := getSidecarSet(ctx, gomega.Default, s.Name)
		bad := paused.Status.LatestRevision
		gomega.Expect(paused.Spec.UpdateStrategy.Paused).To(gomega.BeTrue())
		c := meta.FindStatusCondition(paused.Status.Conditions, appsv1beta1.SidecarSetConditionProgressing)
		gomega.Expect(c).NotTo(gomega.BeNil())
		gomega.Expect(c.Message).To(gomega.HavePrefix(fmt.Sprintf("4 pods upgraded to revision %s fail, more than the failure budget of 3: "+
			"sidecar sidecar (ErrImagePull) not ready within 5s of the upgrade on %s/web-", bad, ns)))
		gomega.Eventually(func(g gomega.Gomega) {
			list := &corev1.EventList{}
			g.Expect(env.Client.List(ctx, list)).To(gomega.Succeed())
			var notes []string
			for _, e := range list.Items {
				if e.Reason == "RolloutPaused" && e.InvolvedObject.Name == s.Name {
					notes = append(notes, e.Message)
				}
			}
			g.Expect(notes).To(gomega.ContainElement(gomega.ContainSubstring("upgraded to revision " + bad + " fail, more than the failure budget of 3")))
		}).WithContext(ctx).Should(gomega.Succeed())
		gomega.Consistently(func(g gomega.Gomega) {
			g.Expect(rec.Order()).To(gomega.HaveLen(maxUnavailable), "pods that took the bad image")
		}).WithContext(ctx).Should(gomega.Succeed())
		gomega.Expect(len(rec.Order())).To(gomega.BeNumerically("<=", budget+maxUnavailable))

		ginkgo.By("undoing: one command restores the first revision, resumes and lifts the partition")
		out, err := runPlugin(ctx, "rollout", "undo", s.Name)
		ginkgo.AddReportEntry("kubectl sidecarset rollout undo", out)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(out).To(gomega.Equal(fmt.Sprintf("sidecarset.apps.kruise.io/%s rolled back to revision 1 (%s)\n"+
			"  updateStrategy.paused: true -> false, or the rollback would not start\n"+
			"  updateStrategy.partition: 4 -> 0, or it would keep pods on the undone revision\n", s.Name, first)))
		r = execPlugin(ctx, "rollout", "status", s.Name, "--timeout", rolloutTimeout.String())
		gomega.Expect(r.ExitCode).To(gomega.Equal(0), r.Stdout+r.Stderr)
		pods := expectRolledOut(ctx, ns, appLabels, "sidecar", v1)
		gomega.Expect(pods).To(gomega.HaveLen(12))
		for _, p := range pods {
			gomega.Expect(p.UID).To(gomega.Equal(uids[p.Name]), "pod %s was recreated", p.Name)
		}

		ginkgo.By("checking that the first revision was reused, as the newest")
		rolledBack := getSidecarSet(ctx, gomega.Default, s.Name)
		gomega.Expect(rolledBack.Status.LatestRevision).To(gomega.Equal(first))
		gomega.Expect(rolledBack.Spec.UpdateStrategy.Paused).To(gomega.BeFalse())
		gomega.Expect(rolledBack.Spec.UpdateStrategy.MaxUnavailable).To(gomega.Equal(new(intstr.FromInt32(maxUnavailable))))
		history := expectHistory(ctx, s.Name, map[string]int{first: 12})
		gomega.Expect(history).To(gomega.HaveLen(2))
		gomega.Expect(history[1]).To(gomega.HaveField("Name", first))
		gomega.Expect(history[1]).To(gomega.HaveField("Revision", int64(3)))
	})

	ginkgo.It("should fail rollout status past the progress deadline, and pause and resume with the plugin", ginkgo.Label("guards"), func(ctx ginkgo.SpecContext) {
		ns := createNamespace(ctx, "rollout-deadline")
		s := createSidecarSet(ctx, sidecarSet(ns, "sidecar", v1).MaxUnavailable(intstr.FromInt32(1)).
			Annotation(appsv1beta1.ProgressDeadlineAnnotation, "10").Obj())
		runDeployment(ctx, app(ns, "web", 3).Obj(), s.Name)
		expectStatus(ctx, s.Name, 1, counts{Matched: 3, Updated: 3, Ready: 3, UpdatedReady: 3})

		setImage(ctx, s.Name, "sidecar", badImage)
		r := execPlugin(ctx, "rollout", "status", s.Name, "--timeout", rolloutTimeout.String())
		ginkgo.AddReportEntry("kubectl sidecarset rollout status (deadline)", r.Stdout+r.Stderr)
		gomega.Expect(r.ExitCode).To(gomega.Equal(1), r.Stdout)
		gomega.Expect(r.Stderr).To(gomega.Equal(fmt.Sprintf("Error: sidecarset %q exceeded its progress deadline\n", s.Name)))
		gomega.Expect(r.Stdout).To(gomega.ContainSubstring("\n  " + appsv1beta1.ReasonProgressDeadlineExceeded +
			": no pod was newly updated and ready since "))
		gomega.Expect(getSidecarSet(ctx, gomega.Default, s.Name).Spec.UpdateStrategy.Paused).To(gomega.BeFalse(), "a deadline only reports")
		gomega.Expect(withImage(listPods(ctx, gomega.Default, ns, appLabels), "sidecar", badImage)).To(gomega.Equal(1))

		ginkgo.By("pausing and resuming")
		out, err := runPlugin(ctx, "rollout", "pause", s.Name)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(out).To(gomega.Equal("sidecarset.apps.kruise.io/" + s.Name + " paused\n"))
		gomega.Expect(getSidecarSet(ctx, gomega.Default, s.Name).Spec.UpdateStrategy.Paused).To(gomega.BeTrue())
		again := execPlugin(ctx, "rollout", "pause", s.Name)
		gomega.Expect(again.ExitCode).To(gomega.Equal(1))
		gomega.Expect(again.Stderr).To(gomega.ContainSubstring(fmt.Sprintf("sidecarsets.apps.kruise.io %q is already paused", s.Name)))
		gomega.Eventually(func(g gomega.Gomega) {
			s := getSidecarSet(ctx, g, s.Name)
			g.Expect(s.Status.ObservedGeneration).To(gomega.Equal(s.Generation))
			g.Expect(meta.FindStatusCondition(s.Status.Conditions, appsv1beta1.SidecarSetConditionProgressing).Reason).
				To(gomega.Equal(appsv1beta1.ReasonPaused))
		}).WithContext(ctx).Should(gomega.Succeed())
		r = execPlugin(ctx, "rollout", "status", s.Name, "--watch=false", "-o", "json")
		var st struct{ State, Reason string }
		gomega.Expect(json.Unmarshal([]byte(strings.TrimSpace(r.Stdout)), &st)).To(gomega.Succeed(), r.Stdout)
		gomega.Expect(r.ExitCode).To(gomega.Equal(0), "a paused rollout is waited for, not failed")
		gomega.Expect(st).To(gomega.Equal(struct{ State, Reason string }{"Progressing", appsv1beta1.ReasonPaused}))

		out, err = runPlugin(ctx, "rollout", "resume", s.Name)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(out).To(gomega.Equal("sidecarset.apps.kruise.io/" + s.Name + " resumed\n"))
		gomega.Expect(getSidecarSet(ctx, gomega.Default, s.Name).Spec.UpdateStrategy.Paused).To(gomega.BeFalse())
	})
})
