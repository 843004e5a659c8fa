package security

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/policy/authority"
)

// The README prints the table's counts, exactly once.
func TestREADME_PrintsTheCounts(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := strings.Join(strings.Fields(string(raw)), " ")
	want := Count(Attempts).String()
	if !strings.Contains(readme, want) {
		t.Errorf("README.md does not say %q", want)
	}
	if n := len(regexp.MustCompile(`\d+ attempts: `).FindAllString(readme, -1)); n != 1 {
		t.Errorf("README.md states a number of attempts %d times, want once", n)
	}
}

func TestCount(t *testing.T) {
	t.Parallel()
	got := Count([]Attempt{
		{Outcome: Refused, Works: "x"}, {Outcome: Refused, Works: "x"}, {Outcome: Neutralized, Works: "x"}, {Outcome: Ignored, Works: "x"},
	})
	if want := "4 attempts: 2 refused, 1 neutralized, 1 ignored; 4 accepted when authorized"; got.String() != want {
		t.Errorf("Count = %q, want %q", got, want)
	}
	if got := Count([]Attempt{{Outcome: Refused, Works: "x"}}).String(); got != "1 attempts: 1 refused, 0 neutralized; 1 accepted when authorized" {
		t.Errorf("Count without ignored = %q", got)
	}
}

// Issue 22 asks for at least 40 attempts, every outcome explained.
func TestAttempts_AreComplete(t *testing.T) {
	t.Parallel()
	if n := len(Attempts); n < 40 {
		t.Errorf("%d attempts, want at least 40", n)
	}
	ids, names := map[string]bool{}, map[string]bool{}
	for _, a := range Attempts {
		if ids[a.ID] || names[a.Name] {
			t.Errorf("%s: duplicate ID or name", a.ID)
		}
		ids[a.ID], names[a.Name] = true, true
		for _, name := range []string{a.ID + "-ok", "security-e2e/" + a.ID} {
			if msgs := validation.IsDNS1123Label(strings.TrimPrefix(name, "security-e2e/")); len(msgs) > 0 {
				t.Errorf("%s: %q is not a container name: %v", a.ID, name, msgs)
			}
		}
		if a.Name == "" || a.Category == "" || a.Play == "" || a.Works == "" {
			t.Errorf("%s: name, category, play and what works are required", a.ID)
		}
		switch a.Outcome {
		case Refused, Neutralized:
			if a.Message == "" {
				t.Errorf("%s: a %s attempt says what the suite finds (Message)", a.ID, a.Outcome)
			}
		case Ignored:
		default:
			t.Errorf("%s: unknown outcome %q", a.ID, a.Outcome)
		}
		if a.Outcome == Neutralized && a.Category != Upgrade && a.Category != Token && a.Forbidden == "" {
			t.Errorf("%s: a neutralized attempt names the volume the sidecar must not get (Forbidden)", a.ID)
		}
		// The unauthorized actor holds the editor role and at most one
		// verb; pinning another SidecarSet's revision needs both of the
		// pin's to get past the policy to the owner check.
		if len(a.Unauthorized.Verbs.Names()) > 1 && a.Play != PlayPinForeignRevision {
			t.Errorf("%s: the unauthorized actor holds %s, want at most one verb", a.ID, a.Unauthorized)
		}
		if a.Unauthorized.Admin || a.Unauthorized.OtherNamespace {
			t.Errorf("%s: the unauthorized actor is an editor of the team namespace only", a.ID)
		}
	}
}

// The fragments are valid, and a content attempt needs exactly what the
// classification the injector applies says: the authorized actor holds it,
// the unauthorized one does not.
func TestAttempts_MatchTheClassification(t *testing.T) {
	t.Parallel()
	for _, a := range Attempts {
		sidecar, err := a.SidecarContainer(a.ID)
		if err != nil {
			t.Errorf("%s: %v", a.ID, err)
			continue
		}
		volumes, err := a.Volumes()
		if err != nil {
			t.Errorf("%s: %v", a.ID, err)
			continue
		}
		if _, err := Merge(corev1.Pod{}, a.Pod); err != nil {
			t.Errorf("%s: %v", a.ID, err)
		}
		if want := a.ExpectedInPod(); want != "" {
			if _, err := Contains(corev1.Container{}, want); err != nil {
				t.Errorf("%s: %v", a.ID, err)
			}
		}
		if a.AuthorizedVolume != "" {
			authorized, err := a.AuthorizedVolumes()
			if err != nil {
				t.Errorf("%s: %v", a.ID, err)
				continue
			}
			if _, need := authority.VolumeNeeds(&authorized[0]); !a.Authorized.Verbs.Has(need) {
				t.Errorf("%s: the authorized volume needs %s, the authorized actor holds %s", a.ID, need, a.Authorized)
			}
		}
		if a.Play != PlayContent {
			continue
		}
		need := authority.Sum(authority.SpecNeeds(&appsv1beta1.SidecarSetSpec{
			Containers: []appsv1beta1.SidecarContainer{sidecar}, Volumes: volumes,
		}))
		if a.Where == Every || a.Where == Labelled {
			need |= authority.AllNamespaces
		}
		byName := a.Where == Other || a.Where == OtherV1alpha1 || a.Where == TeamAndOther
		switch {
		case need == authority.None && !byName:
			t.Errorf("%s: the SidecarSet needs nothing", a.ID)
		case !a.Authorized.Verbs.Has(need):
			t.Errorf("%s: needs %s, the authorized actor holds %s", a.ID, need, a.Authorized)
		case byName && !a.Authorized.OtherNamespace:
			t.Errorf("%s: the authorized actor may not create pods in the other namespace", a.ID)
		case !byName && a.Unauthorized.Verbs.Has(need):
			t.Errorf("%s: needs %s, which the unauthorized actor (%s) holds", a.ID, need, a.Unauthorized)
		}
	}
}

func TestMergeAndContains(t *testing.T) {
	t.Parallel()
	c, err := Merge(corev1.Container{Name: "a", Ports: []corev1.ContainerPort{{ContainerPort: 1}}},
		`{ports: [{containerPort: 9100, hostPort: 9100}], securityContext: {privileged: true}}`)
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "a" || len(c.Ports) != 1 || c.Ports[0].HostPort != 9100 || !*c.SecurityContext.Privileged {
		t.Errorf("Merge = %+v", c)
	}
	if _, err := Merge(corev1.Container{}, `{securityContext: {priviledged: true}}`); err == nil {
		t.Error("Merge accepted a misspelled field")
	}
	c.Ports = append(c.Ports, corev1.ContainerPort{ContainerPort: 80, Protocol: corev1.ProtocolTCP})
	for fragment, want := range map[string]bool{
		`{ports: [{containerPort: 80}]}`:                           true,
		`{ports: [{containerPort: 80, hostPort: 80}]}`:             false,
		`{securityContext: {privileged: true}, name: a}`:           true,
		`{securityContext: {privileged: false}}`:                   false,
		`{volumeMounts: [{name: data}]}`:                           false,
		`{ports: [{containerPort: 9100}, {containerPort: 80}]}`:    true,
		`{ports: [{containerPort: 9100}, {containerPort: 8080}]}`:  false,
		`{securityContext: {capabilities: {add: [NET_ADMIN]}}}`:    false,
		`{ports: [{containerPort: 9100, protocol: TCP}], name: a}`: false,
	} {
		got, err := Contains(c, fragment)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("Contains(%s) = %v, want %v", fragment, got, want)
		}
	}
}
