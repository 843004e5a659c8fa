package authoring

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	apiadmission "k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/sidecarset-operator/sidecarset-operator/api/revision"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/policy/authority"
)

// restoreSet builds the SidecarSet agent (UID uid-1) running image, with
// the authority record given ("-": none).
func restoreSet(image, record string) *appsv1beta1.SidecarSet {
	s := &appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "agent", UID: "uid-1"}}
	s.Spec.Containers = []appsv1beta1.SidecarContainer{{Container: corev1.Container{Name: "agent", Image: image}}}
	if record != "-" {
		s.Annotations = map[string]string{authority.Annotation: record}
	}
	return s
}

// revisionOf records s as revision number n, controlled by owner.
func revisionOf(t *testing.T, s *appsv1beta1.SidecarSet, n int64, owner types.UID) appsv1.ControllerRevision {
	t.Helper()
	owned := s.DeepCopy()
	owned.UID = owner
	rev, err := revision.New(owned, "sidecarset-system", n, nil)
	if err != nil {
		t.Fatal(err)
	}
	return *rev
}

func TestCheckRestore(t *testing.T) {
	t.Parallel()
	const all = "inject-all-namespaces"
	privileged := func(s *appsv1beta1.SidecarSet) *appsv1beta1.SidecarSet {
		s.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: new(true)}
		return s
	}
	withVersion := func(s *appsv1beta1.SidecarSet, v string) *appsv1beta1.SidecarSet {
		s.Spec.CustomVersion = v
		return s
	}
	tests := []struct {
		name   string
		old, s *appsv1beta1.SidecarSet
		// revs are recorded as revisions 1, 2... controlled by owner
		// (uid-1 if empty).
		revs  []*appsv1beta1.SidecarSet
		owner types.UID
		want  string // a part of the error; "" for nil
	}{{
		name: "the content of an owned revision, within the record",
		old:  restoreSet("agent:2", all), s: restoreSet("agent:1", all),
		revs: []*appsv1beta1.SidecarSet{restoreSet("agent:1", all), restoreSet("agent:2", all)},
	}, {
		name: "a resume: the content does not change",
		old:  restoreSet("agent:2", all), s: restoreSet("agent:2", all),
	}, {
		name: "content no revision records",
		old:  restoreSet("agent:2", all), s: restoreSet("evil:1", all),
		revs: []*appsv1beta1.SidecarSet{restoreSet("agent:1", all)},
		want: `spec: the content is not that of a revision SidecarSet "agent" owns`,
	}, {
		name: "the content of a revision an earlier SidecarSet of the same name owned",
		old:  restoreSet("agent:2", all), s: restoreSet("agent:1", all),
		revs: []*appsv1beta1.SidecarSet{restoreSet("agent:1", all)}, owner: "uid-0",
		want: `spec: the content is not that of a revision SidecarSet "agent" owns`,
	}, {
		name: "privileged content the record does not cover",
		old:  restoreSet("agent:2", all), s: privileged(restoreSet("agent:1", all)),
		revs: []*appsv1beta1.SidecarSet{privileged(restoreSet("agent:1", all))},
		want: "spec.containers[0].securityContext.privileged needs inject-privileged, which the SidecarSet's recorded authority (inject-all-namespaces) does not hold",
	}, {
		name: "privileged content under a record that holds inject-privileged",
		old:  restoreSet("agent:2", "inject-privileged,inject-all-namespaces"), s: privileged(restoreSet("agent:1", "inject-privileged,inject-all-namespaces")),
		revs: []*appsv1beta1.SidecarSet{privileged(restoreSet("agent:1", all))},
	}, {
		name: "privileged content of a SidecarSet without a record (written before the operator: every verb)",
		old:  restoreSet("agent:2", "-"), s: privileged(restoreSet("agent:1", "-")),
		revs: []*appsv1beta1.SidecarSet{privileged(restoreSet("agent:1", "-"))},
	}, {
		name: "the revision's custom version comes back with its content",
		old:  withVersion(restoreSet("agent:2", all), "v2"), s: withVersion(restoreSet("agent:1", all), "v1"),
		revs: []*appsv1beta1.SidecarSet{withVersion(restoreSet("agent:1", all), "v1")},
	}, {
		name: "another custom version with the content",
		old:  withVersion(restoreSet("agent:2", all), "v2"), s: withVersion(restoreSet("agent:1", all), "v9"),
		revs: []*appsv1beta1.SidecarSet{withVersion(restoreSet("agent:1", all), "v1")},
		want: `spec.customVersion: "v9" is neither the SidecarSet's nor that of revision agent-`,
	}, {
		name: "a custom version without content",
		old:  withVersion(restoreSet("agent:2", all), "v2"), s: withVersion(restoreSet("agent:2", all), "v1"),
		want: "spec.customVersion: it changes without the content",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			owner := tc.owner
			if owner == "" {
				owner = "uid-1"
			}
			var revs []appsv1.ControllerRevision
			for i, set := range tc.revs {
				revs = append(revs, revisionOf(t, set, int64(i+1), owner))
			}
			err := CheckRestore(tc.old, tc.s, revs)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("CheckRestore: %v", err)
			case tc.want != "" && err == nil:
				t.Errorf("CheckRestore: nil, want an error with %q", tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Errorf("CheckRestore: %v, want %q", err, tc.want)
			}
		})
	}
}

func TestRestoredByVerb(t *testing.T) {
	t.Parallel()
	p := load(t)
	paused := sidecarSet(t, plain+"updateStrategy: {paused: true}\n")
	running := sidecarSet(t, plain)
	newer := sidecarSet(t, strings.Replace(plain, "agent:1", "agent:2", 1))
	bob := &user.DefaultInfo{Name: "bob"}
	tests := []struct {
		name    string
		r       Request
		allowed []string
		want    bool
	}{
		{"a resume by rollback", Request{Operation: apiadmission.Update, OldObject: paused, Object: running, User: bob}, []string{rollback}, true},
		{"earlier content by rollback", Request{Operation: apiadmission.Update, OldObject: newer, Object: running, User: bob}, []string{rollback}, true},
		{"a resume without rollback", Request{Operation: apiadmission.Update, OldObject: paused, Object: running, User: bob}, []string{allNamespaces}, false},
		{"a pause by rollback", Request{Operation: apiadmission.Update, OldObject: running, Object: paused, User: bob}, []string{rollback}, false},
		{"a create", Request{Operation: apiadmission.Create, Object: running, User: bob}, []string{rollback}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := p.RestoredByVerb(t.Context(), tc.r, &grants{allowed: tc.allowed})
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("RestoredByVerb = %v, want %v", got, tc.want)
			}
		})
	}
}

// A write judged without the verb rollback: its other answers stay.
func TestWithoutVerb(t *testing.T) {
	t.Parallel()
	authz := WithoutVerb(&grants{all: true}, VerbRollback)
	ask := func(verb, group, resource string) authorizer.Decision {
		d, _, err := authz.Authorize(context.Background(), authorizer.AttributesRecord{Verb: verb, APIGroup: group, Resource: resource, ResourceRequest: true})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := ask(VerbRollback, appsv1beta1.GroupVersion.Group, "sidecarsets"); d == authorizer.DecisionAllow {
		t.Errorf("rollback on sidecarsets: allowed, want no opinion")
	}
	for _, other := range [][3]string{{VerbPauseRollouts, appsv1beta1.GroupVersion.Group, "sidecarsets"}, {"create", "", "pods"}, {VerbRollback, "apps", "deployments"}} {
		if d := ask(other[0], other[1], other[2]); d != authorizer.DecisionAllow {
			t.Errorf("%v: %v, want allowed", other, d)
		}
	}
}
