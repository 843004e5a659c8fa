package controllers

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/internal/fieldindex"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
)

func TestRelevantPodChange(t *testing.T) {
	t.Parallel()
	now := metav1.Now()
	tests := []struct {
		name   string
		change func(p *corev1.Pod)
		same   bool // keep the resourceVersion
		want   bool
	}{
		{name: "a resync (same resourceVersion) is not relevant", change: func(*corev1.Pod) {}, same: true},
		{name: "a change the rollout does not read is not relevant", change: func(p *corev1.Pod) { p.Status.PodIP = "10.0.0.1" }},
		{name: "another condition is not relevant", change: func(p *corev1.Pod) {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue})
		}},
		{name: "the Ready flip is relevant", change: func(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }, want: true},
		{name: "a new deletionTimestamp is relevant", change: func(p *corev1.Pod) { p.DeletionTimestamp = &now }, want: true},
		{name: "the phase is relevant", change: func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }, want: true},
		{name: "a changed status imageID is relevant (an in-place update completing)",
			change: func(p *corev1.Pod) { p.Status.ContainerStatuses[1].ImageID = "id-envoy-2" }, want: true},
		{name: "a container's readiness is relevant", change: func(p *corev1.Pod) { p.Status.ContainerStatuses[1].Ready = false }, want: true},
		{name: "a container image is relevant", change: func(p *corev1.Pod) { p.Spec.Containers[1].Image = "envoy:2" }, want: true},
		{name: "an init container image is relevant", change: func(p *corev1.Pod) { p.Spec.InitContainers[0].Image = "busybox:2" }, want: true},
		{name: "labels are relevant (selectors)", change: func(p *corev1.Pod) { p.Labels["tier"] = "front" }, want: true},
		{name: "a new controller is relevant (a replacement's)", change: func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{UID: "rs", Controller: new(true)}}
		}, want: true},
		{name: "a resize alone (the generation) is not relevant: the kubelet's answer is", change: func(p *corev1.Pod) { p.Generation++ }},
		{name: "the kubelet observing a generation is not relevant", change: func(p *corev1.Pod) { p.Status.ObservedGeneration++ }},
		{name: "the kubelet taking a resize up is not relevant", change: func(p *corev1.Pod) {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue})
		}},
		{name: "a resize in progress failing is relevant", change: func(p *corev1.Pod) {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodResizeInProgress, Reason: corev1.PodReasonError})
		}, want: true},
		{name: "a pending resize is relevant", change: func(p *corev1.Pod) {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodResizePending, Reason: "Deferred"})
		}, want: true},
		{name: "resources a container reports are relevant (a resize applied)", change: func(p *corev1.Pod) {
			p.Status.ContainerStatuses[1].Resources = &corev1.ResourceRequirements{}
		}, want: true},
		{name: "annotations are relevant (recorded hashes)", change: func(p *corev1.Pod) { p.Annotations["kruise.io/sidecarset-hash"] = "{}" }, want: true},
		// A sidecar that crashes at once stays not ready while it crashes,
		// restarts and waits in CrashLoopBackOff: the failure budget reads
		// those, and a real kubelet reports nothing else that changes.
		{name: "a container waiting in CrashLoopBackOff is relevant", change: func(p *corev1.Pod) {
			p.Status.ContainerStatuses[1].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
		}, want: true},
		{name: "a container restarting is relevant", change: func(p *corev1.Pod) { p.Status.ContainerStatuses[1].RestartCount++ }, want: true},
		{name: "a container's last termination is relevant", change: func(p *corev1.Pod) {
			p.Status.ContainerStatuses[1].LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, StartedAt: now}}
		}, want: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			oldPod, newPod := builder.RunningPod(), builder.RunningPod()
			tc.change(newPod)
			if !tc.same {
				newPod.ResourceVersion = "2"
			}
			if got := relevantPodChange(oldPod, newPod); got != tc.want {
				t.Errorf("relevantPodChange = %v, want %v", got, tc.want)
			}
		})
	}
}

// Only a namespace's label changes requeue the SidecarSets: not the
// namespaces of a starting controller's initial list, nor a namespace
// created or deleted later.
func TestNamespaceRelabeled(t *testing.T) {
	t.Parallel()
	ns := func(labels map[string]string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: labels}}
	}
	for _, tc := range []struct {
		what string
		got  bool
		want bool
	}{
		{"a namespace of the initial list", namespaceRelabeled.Create(event.CreateEvent{Object: ns(map[string]string{"env": "prod"}), IsInInitialList: true}), false},
		{"a namespace created", namespaceRelabeled.Create(event.CreateEvent{Object: ns(map[string]string{"env": "prod"})}), false},
		{"a namespace deleted", namespaceRelabeled.Delete(event.DeleteEvent{Object: ns(map[string]string{"env": "prod"})}), false},
		{"a label changed", namespaceRelabeled.Update(event.UpdateEvent{ObjectOld: ns(map[string]string{"env": "prod"}), ObjectNew: ns(map[string]string{"env": "dev"})}), true},
		{"a label added", namespaceRelabeled.Update(event.UpdateEvent{ObjectOld: ns(nil), ObjectNew: ns(map[string]string{"env": "dev"})}), true},
		{"an update that left the labels alone", namespaceRelabeled.Update(event.UpdateEvent{ObjectOld: ns(map[string]string{"env": "prod"}), ObjectNew: ns(map[string]string{"env": "prod"})}), false},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: requeues %v, want %v", tc.what, tc.got, tc.want)
		}
	}
}

// The rollout upgrades only the pods of the namespaces the SidecarSet was
// written for: not those of a namespace of the same name created again
// since (the pod webhook does not inject them either, match.SameNamespace).
func TestMatchedPods_NamespaceIdentity(t *testing.T) {
	t.Parallel()
	podIn := func(ns string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, Labels: map[string]string{"app": "web"},
			Annotations: map[string]string{appsv1beta1.SidecarSetListAnnotation: "agent"}}}
	}
	tests := []struct {
		name   string
		record string
		want   []string
	}{
		{name: "no record (OpenKruise's): pods matched by namespace name", record: "", want: []string{"team-a/web", "team-b/web"}},
		{name: "the namespaces written for: their pods", record: `{"team-a":"a-1","team-b":"b-1"}`, want: []string{"team-a/web", "team-b/web"}},
		{name: "a namespace created again since: its pods are not the SidecarSet's", record: `{"team-a":"a-0","team-b":"b-1"}`, want: []string{"team-b/web"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := &appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "agent"}, Spec: appsv1beta1.SidecarSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
					Key: appsv1beta1.NamespaceNameLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{"team-a", "team-b"}}}},
			}}
			if tc.record != "" {
				s.Annotations = map[string]string{appsv1beta1.NamespaceUIDsAnnotation: tc.record}
			}
			scheme := runtime.NewScheme()
			utilruntime.Must(clientgoscheme.AddToScheme(scheme))
			c := fake.NewClientBuilder().WithScheme(scheme).
				WithIndex(&corev1.Pod{}, fieldindex.PodBySidecarSet, fieldindex.PodSidecarSets).
				WithObjects(podIn("team-a"), podIn("team-b"),
					&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a", UID: "a-1"}},
					&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-b", UID: "b-1"}}).Build()
			r := &SidecarSetReconciler{Client: c}
			pods, err := r.matchedPods(t.Context(), s)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range pods {
				got = append(got, p.Namespace+"/"+p.Name)
			}
			slices.Sort(got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("matched pods (-want +got):\n%s", diff)
			}
		})
	}
}
