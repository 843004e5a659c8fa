package authoring

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	apiadmission "k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
)

// namespaceList is a v1alpha1 spec fragment naming namespaces ns-0 ..
// ns-<n-1> one by one.
func namespaceList(n int) (spec string, names []string) {
	for i := range n {
		names = append(names, fmt.Sprintf("ns-%d", i))
	}
	return "namespaceSelector: {matchExpressions: [{key: kubernetes.io/metadata.name, operator: In, values: [" +
		strings.Join(names, ", ") + "]}]}\n", names
}

func podsIn(names ...string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "create /pods " + n + "/"
	}
	return out
}

// A SidecarSet naming many namespaces one by one is judged within the API
// server's CEL cost limits: the policy asks the authorizer a fixed number of
// times whatever the length of the list (a check per namespace, at 350 000
// cost units each, would pass the limit from three namespaces on).
func TestEvaluate_ANamespaceListStaysWithinTheCostLimit(t *testing.T) {
	t.Parallel()
	p := load(t)
	for _, n := range []int{3, 100, 1000} {
		spec, _ := namespaceList(n)
		for _, op := range []apiadmission.Operation{apiadmission.Create, apiadmission.Update, apiadmission.Delete} {
			r := Request{Operation: op, User: &user.DefaultInfo{Name: "admin"}}
			if op != apiadmission.Create {
				r.OldObject = sidecarSet(t, plain+spec)
			}
			if op != apiadmission.Delete {
				r.Object = sidecarSet(t, strings.Replace(plain, "agent:1", "agent:2", 1)+spec)
			}
			authz := &grants{all: true}
			denial, err := p.Evaluate(t.Context(), r, authz)
			if err != nil || denial != nil {
				t.Errorf("%d namespaces, %s by an administrator: denial %v, error %v", n, op, denial, err)
			}
			if len(authz.asked) > 4 {
				t.Errorf("%d namespaces, %s: the policy asked the authorizer %d times: %v", n, op, len(authz.asked), authz.asked)
			}
		}
	}
}

func TestJudge_ANamespaceList(t *testing.T) {
	t.Parallel()
	p := load(t)
	spec, names := namespaceList(100)
	allBut := func(skip ...string) []string {
		return podsIn(slices.DeleteFunc(slices.Clone(names), func(n string) bool { return slices.Contains(skip, n) })...)
	}
	tests := []struct {
		name      string
		operation apiadmission.Operation
		allowed   []string
		all       bool
		want      string
		maxAsked  int
	}{{
		name: "an administrator creates it with one check", operation: apiadmission.Create, all: true, maxAsked: 1,
	}, {
		name: "an author allowed in each namespace creates it", operation: apiadmission.Create, allowed: podsIn(names...), maxAsked: 101,
	}, {
		name: "an author allowed in each namespace updates it", operation: apiadmission.Update, allowed: podsIn(names...), maxAsked: 101,
	}, {
		name: "an author allowed in each namespace deletes it", operation: apiadmission.Delete, allowed: podsIn(names...), maxAsked: 101,
	}, {
		name: "an author missing three namespaces is refused, naming them in order", operation: apiadmission.Create,
		allowed: allBut("ns-7", "ns-42", "ns-99"), maxAsked: 101,
		want: `spec.namespaceSelector: creating a SidecarSet that injects into the pods of namespaces "ns-0", "ns-1", "ns-2", "ns-3", ` +
			`"ns-4", "ns-5", "ns-6", "ns-7", "ns-8", "ns-9" and 90 more requires permission to create pods in each of them, ` +
			`which user "bob" does not have in namespaces "ns-7", "ns-42", "ns-99"`,
	}, {
		name: "a delete by an author missing one namespace is refused", operation: apiadmission.Delete,
		allowed: allBut("ns-50"), maxAsked: 101,
		want: `metadata.name: deleting a SidecarSet that injects into the pods of namespaces "ns-0", "ns-1", "ns-2", "ns-3", ` +
			`"ns-4", "ns-5", "ns-6", "ns-7", "ns-8", "ns-9" and 90 more requires permission to create pods in each of them, ` +
			`which user "bob" does not have in namespace "ns-50"`,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := Request{Operation: tc.operation, User: &user.DefaultInfo{Name: "bob"}}
			if tc.operation != apiadmission.Create {
				r.OldObject = sidecarSet(t, plain+spec)
			}
			if tc.operation != apiadmission.Delete {
				r.Object = sidecarSet(t, plain+spec)
			}
			// The content is plain and confined: no inject verb is needed.
			authz := &grants{allowed: tc.allowed, all: tc.all}
			got, err := p.Judge(t.Context(), r, authz)
			if err != nil {
				t.Fatalf("Judge: %v", err)
			}
			checkDenial(t, tc.want, got)
			if len(authz.asked) > tc.maxAsked {
				t.Errorf("asked the authorizer %d times, want at most %d", len(authz.asked), tc.maxAsked)
			}
		})
	}
}

// The rollout acts for the author of a write: with recreate-pods it evicts
// pods, and a resources change resizes running pods. A write that has it do
// so needs the author to hold the right where it happens.
func TestNamespaceChecks_EvictionAndResize(t *testing.T) {
	t.Parallel()
	p := load(t)
	const ns = "namespace: team-a\n"
	recreate := map[string]string{"sidecarset-operator.dev/recreate-pods": "true"}
	recreateJobs := map[string]string{"sidecarset-operator.dev/recreate-pods": "true", "sidecarset-operator.dev/recreate-job-pods": "true"}
	paused := strings.Replace(plain, "containers:", "updateStrategy: {paused: true}\ncontainers:", 1)
	resized := plain + "  resources: {limits: {memory: 64Mi}}\n"
	resizedMore := plain + "  resources: {limits: {memory: 32Mi}}\n"
	tests := []struct {
		name                     string
		old, spec                string
		oldAnnotations, annotate map[string]string
		want                     []string // "<right> <field>"
	}{{
		name: "creating without recreate-pods", spec: plain + ns,
		want: []string{"create pods spec.namespaceSelector"},
	}, {
		name: "creating with recreate-pods", spec: plain + ns, annotate: recreate,
		want: []string{"create pods spec.namespaceSelector", "create pods/eviction metadata.annotations[sidecarset-operator.dev/recreate-pods]"},
	}, {
		name: "turning recreate-pods on", old: plain + ns, spec: plain + ns, annotate: recreate,
		want: []string{"create pods spec.namespaceSelector", "create pods/eviction metadata.annotations[sidecarset-operator.dev/recreate-pods]"},
	}, {
		name: "turning recreate-job-pods on", old: plain + ns, oldAnnotations: recreate, spec: plain + ns, annotate: recreateJobs,
		want: []string{"create pods spec.namespaceSelector", "create pods/eviction metadata.annotations[sidecarset-operator.dev/recreate-job-pods]"},
	}, {
		name: "a new image while recreate-pods is on", old: plain + ns, oldAnnotations: recreate,
		spec: strings.Replace(plain, "agent:1", "agent:2", 1) + ns, annotate: recreate,
		want: []string{"create pods spec.namespaceSelector", "create pods/eviction spec"},
	}, {
		name: "a faster pace while recreate-pods is on", old: plain + ns, oldAnnotations: recreate,
		spec: strings.Replace(plain, "containers:", "updateStrategy: {maxUnavailable: 100%}\ncontainers:", 1) + ns, annotate: recreate,
		want: []string{"create pods spec.namespaceSelector", "create pods/eviction spec.updateStrategy"},
	}, {
		name: "resuming while recreate-pods is on", old: paused + ns, oldAnnotations: recreate, spec: plain + ns, annotate: recreate,
		want: []string{"create pods spec.namespaceSelector", "create pods/eviction spec.updateStrategy"},
	}, {
		name: "another of the operator's annotations while recreate-pods is on", old: plain + ns, oldAnnotations: recreate,
		spec: plain + ns, annotate: map[string]string{"sidecarset-operator.dev/recreate-pods": "true", "sidecarset-operator.dev/min-ready-seconds": "0"},
		want: []string{"create pods spec.namespaceSelector", "create pods/eviction metadata.annotations"},
	}, {
		name: "pausing injection while recreate-pods is on evicts nothing", old: plain + ns, oldAnnotations: recreate,
		spec: plain + ns + "injectionStrategy: {paused: true}\n", annotate: recreate,
		want: []string{"create pods spec.namespaceSelector"},
	}, {
		name: "putting back earlier content while recreate-pods is on", old: strings.Replace(plain, "agent:1", "agent:2", 1) + ns, oldAnnotations: recreate,
		spec: plain + ns, annotate: recreate,
		want: []string{"create pods spec.namespaceSelector", "create pods/eviction spec"},
	}, {
		name: "pausing while recreate-pods is on evicts nothing more", old: plain + ns, oldAnnotations: recreate, spec: paused + ns, annotate: recreate,
		want: []string{"create pods spec.namespaceSelector"},
	}, {
		name: "a label while recreate-pods is on evicts nothing more", old: plain + ns, oldAnnotations: recreate,
		spec: plain + ns, annotate: map[string]string{"sidecarset-operator.dev/recreate-pods": "true", "team": "a"},
		want: []string{"create pods spec.namespaceSelector"},
	}, {
		name: "turning recreate-pods off", old: plain + ns, oldAnnotations: recreate, spec: plain + ns,
		want: []string{"create pods spec.namespaceSelector"},
	}, {
		name: "creating with resources resizes nothing", spec: resized + ns,
		want: []string{"create pods spec.namespaceSelector"},
	}, {
		name: "changing a sidecar's resources", old: resized + ns, spec: resizedMore + ns,
		want: []string{"create pods spec.namespaceSelector", "patch pods/resize spec.containers[0].resources"},
	}, {
		name: "adding resources to a sidecar", old: plain + ns, spec: resized + ns,
		want: []string{"create pods spec.namespaceSelector", "patch pods/resize spec.containers[0].resources"},
	}, {
		name: "a new image alone resizes nothing", old: resized + ns, spec: strings.Replace(resized, "agent:1", "agent:2", 1) + ns,
		want: []string{"create pods spec.namespaceSelector"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := Request{Operation: apiadmission.Create, User: &user.DefaultInfo{Name: "bob"}, Object: sidecarSet(t, tc.spec)}
			r.Object.SetAnnotations(tc.annotate)
			if tc.old != "" {
				r.Operation, r.OldObject = apiadmission.Update, sidecarSet(t, tc.old)
				r.OldObject.SetAnnotations(tc.oldAnnotations)
			}
			checks, err := p.NamespaceChecks(t.Context(), r, &grants{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range checks {
				if !slices.Equal(c.Namespaces, []string{"team-a"}) {
					t.Errorf("%s in %q, want team-a", c.right(), c.Namespaces)
				}
				got = append(got, c.right()+" "+c.Field)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("checks (-want +got):\n%s", diff)
			}
		})
	}
}

func TestJudge_EvictionAndResizeNeedTheRights(t *testing.T) {
	t.Parallel()
	p := load(t)
	recreate := map[string]string{"sidecarset-operator.dev/recreate-pods": "true"}
	const bob = `, which user "bob" does not have`
	tests := []struct {
		name    string
		old     string
		spec    string
		allowed []string
		want    string
	}{{
		name: "recreation by an author who may only create pods", spec: plain + "namespace: team-a\n", allowed: []string{podsInTeamA},
		want: `metadata.annotations[sidecarset-operator.dev/recreate-pods]: the operator evicts, for the SidecarSet's author, the pods it ` +
			`selects and cannot upgrade in place (recreate-pods); that requires permission to create pods/eviction in namespace "team-a"` + bob,
	}, {
		name: "recreation by an author who may evict", spec: plain + "namespace: team-a\n",
		allowed: []string{podsInTeamA, "create /pods/eviction team-a/"},
	}, {
		name: "recreation everywhere needs evictions everywhere", spec: plain,
		allowed: []string{allNamespaces, "create /pods/eviction team-a/"},
		want: `metadata.annotations[sidecarset-operator.dev/recreate-pods]: the operator evicts, for the SidecarSet's author, the pods it ` +
			`selects and cannot upgrade in place (recreate-pods); that requires permission to create pods/eviction in every namespace` + bob,
	}, {
		name: "recreation everywhere by an author who may evict everywhere", spec: plain,
		allowed: []string{allNamespaces, "create /pods/eviction /"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := Request{Operation: apiadmission.Create, User: &user.DefaultInfo{Name: "bob"}, Object: sidecarSet(t, tc.spec)}
			r.Object.SetAnnotations(recreate)
			got, err := p.Judge(t.Context(), r, &grants{allowed: tc.allowed})
			if err != nil {
				t.Fatal(err)
			}
			checkDenial(t, tc.want, got)
		})
	}
	t.Run("a resize by an author who may not resize", func(t *testing.T) {
		t.Parallel()
		r := Request{Operation: apiadmission.Update, User: &user.DefaultInfo{Name: "bob"},
			OldObject: sidecarSet(t, plain+"namespace: team-a\n"),
			Object:    sidecarSet(t, plain+"  resources: {limits: {memory: 8Mi}}\nnamespace: team-a\n")}
		got, err := p.Judge(t.Context(), r, &grants{allowed: []string{podsInTeamA}})
		if err != nil {
			t.Fatal(err)
		}
		checkDenial(t, `spec.containers[0].resources: the operator resizes, for the SidecarSet's author, the running pods it selects `+
			`(pods/resize); that requires permission to patch pods/resize in namespace "team-a"`+bob, got)
		got, err = p.Judge(t.Context(), r, &grants{allowed: []string{podsInTeamA, "patch /pods/resize team-a/"}})
		if err != nil || got != nil {
			t.Errorf("with patch pods/resize: denial %v, error %v", got, err)
		}
	})
}

// The garbage collector deletes a SidecarSet whose owner (a Namespace, for
// a SidecarSet that should not outlive it) is gone, and removes its
// finalizers in a foreground deletion; it holds none of the rights the
// write would need from an author, and needs none: it changes nothing
// injected.
func TestJudge_TheGarbageCollectorDeletesOwnedSidecarSets(t *testing.T) {
	t.Parallel()
	p := load(t)
	for _, gc := range []string{"system:serviceaccount:kube-system:generic-garbage-collector", "system:kube-controller-manager"} {
		for _, spec := range []string{plain + "namespace: team-a\n", plain} {
			old := sidecarSet(t, spec)
			old.SetFinalizers([]string{"foregroundDeletion"})
			deleting := Request{Operation: apiadmission.Delete, OldObject: old, User: &user.DefaultInfo{Name: gc}}
			if d, err := p.Judge(t.Context(), deleting, &grants{}); d != nil || err != nil {
				t.Errorf("%s deleting: denial %v, error %v", gc, d, err)
			}
			unfinalized := sidecarSet(t, spec)
			finalizing := Request{Operation: apiadmission.Update, OldObject: old, Object: unfinalized, User: &user.DefaultInfo{Name: gc}}
			if d, err := p.Judge(t.Context(), finalizing, &grants{}); d != nil || err != nil {
				t.Errorf("%s removing its finalizer: denial %v, error %v", gc, d, err)
			}
			// Anything else it would write is judged as anyone's.
			moved := sidecarSet(t, strings.Replace(spec, "app: web", "app: db", 1))
			retargeting := Request{Operation: apiadmission.Update, OldObject: old, Object: moved, User: &user.DefaultInfo{Name: gc}}
			if d, err := p.Judge(t.Context(), retargeting, &grants{}); d == nil || err != nil {
				t.Errorf("%s changing the selector: allowed (error %v)", gc, err)
			}
		}
	}
	// Nobody else.
	deleting := Request{Operation: apiadmission.Delete, OldObject: sidecarSet(t, plain+"namespace: team-a\n"), User: &user.DefaultInfo{Name: "bob"}}
	if d, err := p.Judge(t.Context(), deleting, &grants{}); d == nil || err != nil {
		t.Errorf("bob deleting without rights: allowed (error %v)", err)
	}
}

// resourcesPolicy (v1beta1) computes a sidecar's resources from the pod's:
// changing it resizes running pods too.
func TestNamespaceChecks_ResourcesPolicyResizes(t *testing.T) {
	t.Parallel()
	p := load(t)
	withPolicy := func(memory string) *unstructured.Unstructured {
		obj := sidecarSet(t, plain+"namespace: team-a\n")
		containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "containers")
		containers[0].(map[string]any)["resourcesPolicy"] = map[string]any{
			"targetContainersMode": "sum",
			"resourcesExpr":        map[string]any{"limits": map[string]any{"memory": memory}},
		}
		if err := unstructured.SetNestedSlice(obj.Object, containers, "spec", "containers"); err != nil {
			t.Fatal(err)
		}
		return obj
	}
	r := Request{Operation: apiadmission.Update, User: &user.DefaultInfo{Name: "bob"}, OldObject: withPolicy("memory*20%"), Object: withPolicy("memory*50%")}
	checks, err := p.NamespaceChecks(t.Context(), r, &grants{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range checks {
		got = append(got, c.right()+" "+c.Field)
	}
	want := []string{"create pods spec.namespaceSelector", "patch pods/resize spec.containers[0].resourcesPolicy"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("checks (-want +got):\n%s", diff)
	}
}
