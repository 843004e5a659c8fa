package manifest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/internal/candidate"
	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/inject"
)

// coreInjector runs the pure injector with the registry's candidates, as
// the webhook does.
type coreInjector struct{ registry *candidate.Registry }

func (c coreInjector) Inject(_ context.Context, pod *corev1.Pod, namespace string) (Decision, error) {
	in := inject.Input{Pod: pod, Namespace: inject.Namespace{Name: namespace},
		Now: metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))}
	for _, e := range c.registry.Candidates(namespace, pod.Labels) {
		in.Candidates = append(in.Candidates, inject.Candidate{SidecarSet: e.SidecarSet, Hashes: e.Hashes})
	}
	out, err := inject.Inject(in)
	return Decision{Output: out, Denied: err}, nil
}

func newInjector(t *testing.T, sets ...*appsv1beta1.SidecarSet) coreInjector {
	t.Helper()
	r, err := candidate.New(sets...)
	if err != nil {
		t.Fatal(err)
	}
	return coreInjector{registry: r}
}

var proxy = builder.MakeSidecarSet("proxy", "app", "web").Containers(builder.MakeContainer("proxy", "envoy:1.30")).Obj()

const (
	service = `# the service, untouched
apiVersion: v1
kind: Service
metadata: {name: web}   # flow style kept
spec:
  ports: [{port: 80}]
`
	unselected = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: db
spec:
  template:
    metadata:
      labels: {app: db}
    spec:
      containers: [{name: main, image: postgres:16}]
`
	selected = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: team-a
spec:
  template:
    metadata:
      labels: {app: web}
    spec:
      futureField: kept
      containers: [{name: main, image: nginx:1.25}]
`
)

func TestInject_KeepsWhatItDoesNotChange(t *testing.T) {
	t.Parallel()
	in := service + "---\n" + unselected + "---\n" + selected + "---\n# only a comment\n"
	res, err := Inject(t.Context(), []byte(in), "default", newInjector(t, proxy))
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(string(res.Manifest), "---\n")
	if len(docs) != 4 {
		t.Fatalf("%d documents, want 4:\n%s", len(docs), res.Manifest)
	}
	if docs[0] != service || docs[1] != unselected || docs[3] != "# only a comment\n" {
		t.Errorf("unchanged documents are not written back as they were:\n%s", res.Manifest)
	}
	var web struct {
		Spec struct {
			Template struct {
				Metadata metav1.ObjectMeta `json:"metadata"`
				Spec     map[string]any    `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal([]byte(docs[2]), &web); err != nil {
		t.Fatal(err)
	}
	if web.Spec.Template.Spec["futureField"] != "kept" {
		t.Errorf("a field the Go types do not know was lost:\n%s", docs[2])
	}
	containers, _ := web.Spec.Template.Spec["containers"].([]any)
	if len(containers) != 2 || web.Spec.Template.Metadata.Annotations[appsv1beta1.SidecarSetListAnnotation] != "proxy" {
		t.Errorf("the selected template is not injected:\n%s", docs[2])
	}
	want := []Object{
		{Kind: "Deployment", Namespace: "default", Name: "db"},
		{Kind: "Deployment", Namespace: "team-a", Name: "web", Injected: []string{"proxy"}},
	}
	if diff := cmp.Diff(want, res.Objects); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
}

func TestInject_ListsTemplatesWithoutMetadataAndDenials(t *testing.T) {
	t.Parallel()
	pinned := builder.MakeSidecarSet("pinned", "app", "web").Containers(builder.MakeContainer("pinned", "x:1")).
		InjectRevision(appsv1beta1.SidecarSetInjectRevision{RevisionName: new("gone"), Policy: appsv1beta1.AlwaysSidecarSetInjectRevisionPolicy}).Obj()
	list := `apiVersion: v1
kind: List
items:
- apiVersion: batch/v1
  kind: Job
  metadata: {name: once}
  spec:
    template:
      spec:
        containers: [{name: main, image: busybox:1.36}]
- apiVersion: v1
  kind: Pod
  metadata: {name: web, labels: {app: web}}
  spec:
    containers: [{name: main, image: nginx:1.25}]
`
	tests := []struct {
		name       string
		sets       []*appsv1beta1.SidecarSet
		wantPod    string
		wantDenied string
	}{
		{"a List's pod is injected", []*appsv1beta1.SidecarSet{proxy}, "proxy", ""},
		{"a refused pod is reported and left alone", []*appsv1beta1.SidecarSet{pinned}, "",
			`Pod default/web: the webhook would deny its pods: SidecarSet "pinned": injectionStrategy.revision revisionName "gone"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := Inject(t.Context(), []byte(list), "default", newInjector(t, tc.sets...))
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Objects) != 2 || res.Objects[0].Kind != "Job" || res.Objects[1].Kind != "Pod" {
				t.Fatalf("objects %+v", res.Objects)
			}
			if got := strings.Join(res.Objects[1].Injected, ","); got != tc.wantPod {
				t.Errorf("pod injected with %q, want %q", got, tc.wantPod)
			}
			denied := res.Denied()
			if (denied != nil) != (tc.wantDenied != "") || (denied != nil && !strings.HasPrefix(denied.Error(), tc.wantDenied)) {
				t.Errorf("denied %v, want %q", denied, tc.wantDenied)
			}
			if tc.wantDenied != "" && string(res.Manifest) != list {
				t.Errorf("a refused pod's document changed:\n%s", res.Manifest)
			}
		})
	}
}

func TestInject_Errors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, manifest, want string
	}{
		{"a document that is not YAML", "a: [", "document 1: "},
		{"a Deployment without a template", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {}\n",
			"document 1: Deployment default/x: no object at .spec.template"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Inject(t.Context(), []byte(tc.manifest), "default", newInjector(t, proxy))
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error %v, want prefix %q", err, tc.want)
			}
		})
	}
}

func TestPods_FindsEveryPodAndTemplate(t *testing.T) {
	t.Parallel()
	pods, err := Pods(t.Context(), []byte(service+"---\n"+unselected+"---\n"+selected), "default")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range pods {
		got = append(got, p.Object.String()+" "+p.Pod.Namespace+" "+p.Pod.Labels["app"]+" "+p.Pod.Spec.Containers[0].Image)
	}
	want := []string{"Deployment default/db default db postgres:16", "Deployment team-a/web team-a web nginx:1.25"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pods (-want +got):\n%s", diff)
	}
}
