package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	"github.com/sidecarset-operator/sidecarset-operator/api/revision"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// The cluster of the plan tests: a SidecarSet log-agent (revision r1, CPU
// 100m), changed to CPU 200m (revision r2), with the recreate path on; a
// Deployment's pod on r1 (a resize), one on r2 (nothing), a bare pod on r1
// with a QoS that the resize would change (blocked), and a Deployment's pod
// created before the SidecarSet (a recreation).
func planCluster(t *testing.T) (*options, *appsv1beta1.SidecarSet) {
	t.Helper()
	r1 := logAgent("100m")
	r2 := logAgent("200m")
	r2.Annotations = map[string]string{appsv1beta1.RecreatePodsAnnotation: "true"}
	r2.Spec.UpdateStrategy.MaxUnavailable = new(intstr.FromInt32(1))
	var objs []client.Object
	for i, s := range []*appsv1beta1.SidecarSet{r1, r2} {
		d := s.DeepCopy()
		appsv1beta1.SetDefaults(d)
		rev, err := revision.New(d, "kruise-system", int64(i+1), new(int32))
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, rev)
	}
	live := r2.DeepCopy()
	live.CreationTimestamp = metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	live.Status.LatestRevision = objs[1].GetName()
	objs = append(objs, live,
		injectedPod(t, "web-old", r1, "100m", true),
		injectedPod(t, "web-new", r2, "200m", true),
		injectedPod(t, "bare", r1, "100m", false),
		beforePod("web-before"),
	)
	o := &options{sidecarSetsFrom: fromCluster, operatorNamespace: "kruise-system", kubeconfig: "testdata/no-kubeconfig"}
	o.cl = fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	return o, live
}

func logAgent(cpu string) *appsv1beta1.SidecarSet {
	s := &appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "log-agent"}, Spec: appsv1beta1.SidecarSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		Containers: []appsv1beta1.SidecarContainer{{Container: corev1.Container{Name: "agent", Image: "agent:1",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}},
	}}
	return s
}

// injectedPod is a running pod injected with a version of log-agent.
func injectedPod(t *testing.T, name string, s *appsv1beta1.SidecarSet, cpu string, deployed bool) *corev1.Pod {
	t.Helper()
	d := s.DeepCopy()
	appsv1beta1.SetDefaults(d)
	h, err := appsv1beta1.ComputeHashes(&d.Spec)
	if err != nil {
		t.Fatal(err)
	}
	entry, without := podstate.Version{SidecarSet: s.Name, Hashes: h, SidecarList: []string{"agent"}}.Entries(time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC))
	p := runningPodObj(name, time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC))
	p.Annotations = map[string]string{
		appsv1beta1.SidecarSetListAnnotation:             s.Name,
		appsv1beta1.SidecarSetHashAnnotation:             podstate.Hashes{s.Name: entry}.Encode(),
		appsv1beta1.SidecarSetHashWithoutImageAnnotation: podstate.Hashes{s.Name: without}.Encode(),
	}
	res := corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}
	p.Spec.Containers = append([]corev1.Container{{Name: "agent", Image: "agent:1", Resources: res}}, p.Spec.Containers...)
	p.Status.ContainerStatuses = append([]corev1.ContainerStatus{{Name: "agent", Image: "docker.io/library/agent:1", ImageID: "id",
		Ready: true, Resources: res.DeepCopy(), State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}, p.Status.ContainerStatuses...)
	if deployed {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1", UID: "rs-1", Controller: new(true)}}
	} else {
		// Guaranteed: the resize would make it Burstable.
		limits := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}
		for i := range p.Spec.Containers {
			p.Spec.Containers[i].Resources = corev1.ResourceRequirements{Requests: limits, Limits: limits}
		}
		p.Status.QOSClass = corev1.PodQOSGuaranteed
	}
	return p
}

// beforePod is a Deployment's pod created before log-agent.
func beforePod(name string) *corev1.Pod {
	p := runningPodObj(name, time.Date(2025, 12, 1, 0, 0, 0, 0, time.UTC))
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1", UID: "rs-1", Controller: new(true)}}
	return p
}

func runningPodObj(name string, created time.Time) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Labels: map[string]string{"app": "web"},
			CreationTimestamp: metav1.NewTime(created), UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "app", Image: "app:1"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Image: "docker.io/library/app:1", ImageID: "id", Ready: true}}},
	}
}

func runPlanCommand(t *testing.T, o *options, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	cmd := newPlanCommand(o)
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(t.Context())
	return out.String(), err
}

// planJSON runs plan log-agent -o json and decodes the report.
func planJSON(t *testing.T, o *options) planReport {
	t.Helper()
	out, err := runPlanCommand(t, o, "log-agent", "-o", "json")
	if err != nil {
		t.Fatalf("plan: %v\n%s", err, out)
	}
	var r planReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestPlan_Pods(t *testing.T) {
	t.Parallel()
	o, _ := planCluster(t)
	r := planJSON(t, o)
	want := []planPod{
		{Namespace: "shop", Name: "web-old", Action: "resize", Detail: "agent cpu request 100m→200m", Batch: 1},
		{Namespace: "shop", Name: "web-before", Action: "recreate", Detail: "it runs without the SidecarSet's sidecars", Batch: 2},
		{Namespace: "shop", Name: "bare", Action: "blocked", Blocker: "NotRecreatable", Detail: "its resize cannot be made: sidecar " +
			"agent: a resize cannot remove the memory request; not recreatable: a bare pod: no controller would recreate it"},
		{Namespace: "shop", Name: "web-new", Action: "nothing", Detail: "runs the current revision"},
	}
	if diff := cmp.Diff(want, r.Pods); diff != "" {
		t.Errorf("pods (-want +got):\n%s", diff)
	}
	if r.MaxUnavailable != "1" || r.Partition != "0" || !r.Recreate {
		t.Errorf("report %+v", r)
	}
}

// With -f, the rollout is planned for the file's version: the pods on the
// first revision get the new image in place, the pod on the second is
// resized back, one at a time.
func TestPlan_File(t *testing.T) {
	t.Parallel()
	o, live := planCluster(t)
	next := live.DeepCopy()
	next.Spec.Containers[0].Image = "agent:2"
	next.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("100m")
	next.APIVersion, next.Kind = appsv1beta1.GroupVersion.String(), "SidecarSet"
	next.Annotations = nil
	data, err := json.Marshal(next)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "next.yaml")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := runPlanCommand(t, o, "log-agent", "-f", file)
	if err != nil {
		t.Fatalf("plan: %v\n%s", err, out)
	}
	for _, want := range []string{
		"SidecarSet log-agent (latest revision log-agent-",
		": maxUnavailable 1, partition 0, recreate pods: false\n",
		"Pods: 2 image in place, 1 resize\n",
		"BATCH  POD           ACTION          DETAIL\n",
		"1      shop/bare     image in place  agent agent:1→agent:2\n",
		"2      shop/web-new  resize          agent cpu request 200m→100m\n",
		"3      shop/web-old  image in place  agent agent:1→agent:2\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "web-before") {
		t.Errorf("a pod created before the SidecarSet is planned without the recreate path:\n%s", out)
	}
}

// The pods plan would recreate are those the controller's detector reports
// as not injected: a pod whose base SidecarSet is replaced by a canary that
// applies to it, and the operator's own pods in its namespace, are not.
func TestPlan_RecreatesWhatTheDetectorReports(t *testing.T) {
	t.Parallel()
	canary := logAgent("100m")
	canary.Name = "log-agent-canary"
	canary.Spec.Selector.MatchLabels["track"] = "canary"
	canary.Annotations = map[string]string{appsv1beta1.SidecarSetCanaryAnnotation: "true", appsv1beta1.SidecarSetBaseAnnotation: "log-agent"}
	canaryPod := beforePod("web-canary-before")
	canaryPod.Labels["track"] = "canary"
	operatorPod := beforePod("operator")
	operatorPod.Namespace = "kruise-system"
	operatorPod.Labels[appsv1beta1.OperatorPodLabel] = appsv1beta1.OperatorPodName
	tests := []struct {
		name string
		objs []client.Object
		want []string
	}{
		{name: "a pod created before the SidecarSet is recreated", want: []string{"shop/web-before"}},
		{name: "a pod whose canary replaces the SidecarSet is not", objs: []client.Object{canary, canaryPod}, want: []string{"shop/web-before"}},
		{name: "the operator's own pod in its namespace is not", objs: []client.Object{operatorPod}, want: []string{"shop/web-before"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o, _ := planCluster(t)
			for _, obj := range tc.objs {
				if err := o.cl.Create(t.Context(), obj.DeepCopyObject().(client.Object)); err != nil {
					t.Fatal(err)
				}
			}
			r := planJSON(t, o)
			var got []string
			for _, p := range r.Pods {
				if p.Action == "recreate" {
					got = append(got, p.Namespace+"/"+p.Name)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("recreated pods (-want +got):\n%s", diff)
			}
		})
	}
}

// plan decides as the controller does, rollout guards included: a rollout
// that made no progress for longer than its progress deadline is reported
// as such, as the controller's next round would.
func TestPlan_RolloutGuards(t *testing.T) {
	t.Parallel()
	o, live := planCluster(t)
	live.Annotations[appsv1beta1.ProgressDeadlineAnnotation] = "60"
	live.Generation = 1
	live.Status.ObservedGeneration = 1
	live.Status.Conditions = []metav1.Condition{{Type: appsv1beta1.SidecarSetConditionProgressing, Status: metav1.ConditionTrue,
		Reason: "Updating", Message: "upgrading", ObservedGeneration: 1, LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Hour))}}
	if err := o.cl.Update(t.Context(), live); err != nil {
		t.Fatal(err)
	}
	r := planJSON(t, o)
	if !strings.HasPrefix(r.Status, appsv1beta1.ReasonProgressDeadlineExceeded+": ") {
		t.Errorf("status %q, want the progress deadline exceeded", r.Status)
	}
}

// plan reads the revisions the controller reads: those the SidecarSet owns.
// A revision left by an earlier SidecarSet of the same name is not its
// history: the pod that runs it is recreated ("the revision it runs is no
// longer recorded"), not resized from it.
func TestPlan_OwnedRevisionsOnly(t *testing.T) {
	t.Parallel()
	o, live := planCluster(t)
	live.UID = "live-uid"
	if err := o.cl.Update(t.Context(), live); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ owner, want string }{{"live-uid", "resize"}, {"earlier-uid", "recreate"}} {
		revs := &appsv1.ControllerRevisionList{}
		if err := o.cl.List(t.Context(), revs); err != nil {
			t.Fatal(err)
		}
		for i := range revs.Items {
			rev := &revs.Items[i]
			rev.OwnerReferences[0].UID = "live-uid"
			if rev.Revision == 1 {
				rev.OwnerReferences[0].UID = types.UID(tc.owner)
			}
			if err := o.cl.Update(t.Context(), rev); err != nil {
				t.Fatal(err)
			}
		}
		r := planJSON(t, o)
		for _, p := range r.Pods {
			if p.Name == "web-old" && p.Action != tc.want {
				t.Errorf("revision 1 owned by %s: web-old planned %+v, want %s", tc.owner, p, tc.want)
			}
		}
	}
}
