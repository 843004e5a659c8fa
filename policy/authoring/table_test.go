package authoring

import (
	"bufio"
	"bytes"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	apiadmission "k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"sigs.k8s.io/yaml"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/policy/authority"
)

// tableRow is a row of docs/security.md's table of what each field needs.
type tableRow struct {
	field, in, example string
	needs              authority.Verbs
}

// securityTable reads the rows between the authority-table markers.
func securityTable(t *testing.T) []tableRow {
	t.Helper()
	data, err := os.ReadFile("../../docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	start := bytes.Index(data, []byte("<!-- authority-table -->"))
	end := bytes.Index(data, []byte("<!-- /authority-table -->"))
	if start < 0 || end < start {
		t.Fatal("docs/security.md has no authority-table markers")
	}
	var rows []tableRow
	sc := bufio.NewScanner(bytes.NewReader(data[start:end]))
	for sc.Scan() {
		cells := strings.Split(strings.Trim(sc.Text(), "|"), "|")
		if len(cells) != 4 || strings.HasPrefix(strings.TrimSpace(cells[0]), "---") || strings.TrimSpace(cells[0]) == "Field" {
			continue
		}
		row := tableRow{field: strings.TrimSpace(cells[0]), in: strings.TrimSpace(cells[1]), example: strings.Trim(strings.TrimSpace(cells[2]), "`")}
		needs := strings.TrimSpace(cells[3])
		if needs != "nothing" {
			if row.needs, err = authority.Parse(strings.ReplaceAll(needs, "`", "")); err != nil {
				t.Fatalf("row %q: %v", row.field, err)
			}
		}
		rows = append(rows, row)
	}
	if len(rows) < 50 {
		t.Fatalf("the table has %d rows, want every field and volume type", len(rows))
	}
	return rows
}

// rowSidecarSet is a SidecarSet of one namespace, team-a, with the row's
// example in its sidecar, as its one volume (mounted), or in its spec.
func rowSidecarSet(t *testing.T, row tableRow) string {
	t.Helper()
	var example map[string]any
	if err := yaml.Unmarshal([]byte(row.example), &example); err != nil {
		t.Fatalf("row %q: example: %v", row.field, err)
	}
	container := map[string]any{"name": "agent", "image": "agent:1"}
	spec := map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}}, "namespace": "team-a"}
	switch row.in {
	case "container":
		maps.Copy(container, example)
	case "volume":
		example["name"] = "v"
		container["volumeMounts"] = []any{map[string]any{"name": "v", "mountPath": "/v"}}
		spec["volumes"] = []any{example}
	case "spec":
		maps.Copy(spec, example)
	default:
		t.Fatalf("row %q: unknown place %q", row.field, row.in)
	}
	spec["containers"] = []any{container}
	out, err := yaml.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// TestSecurityTable_MatchesThePolicyAndTheInjector checks each row of
// docs/security.md's table three ways: the Go classification the injector
// applies (policy/authority) needs exactly the row's verbs; the policy, as
// the API server evaluates it, refuses the SidecarSet to an author of its
// namespace who lacks any one of them, naming that verb; and allows it to
// one who holds them all.
func TestSecurityTable_MatchesThePolicyAndTheInjector(t *testing.T) {
	t.Parallel()
	p := load(t)
	for _, row := range securityTable(t) {
		t.Run(row.field+" in "+row.in, func(t *testing.T) {
			t.Parallel()
			spec := rowSidecarSet(t, row)
			obj := sidecarSet(t, spec)
			hub := &appsv1beta1.SidecarSet{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, hub); err != nil {
				t.Fatalf("the example is not a SidecarSet: %v", err)
			}
			if got := authority.Sum(authority.SpecNeeds(&hub.Spec)); got != row.needs {
				t.Errorf("policy/authority says %s, the table %s", got, row.needs)
			}
			grant := func(v authority.Verbs) []string {
				out := []string{podsInTeamA}
				for _, name := range v.Names() {
					out = append(out, name+" apps.kruise.io/sidecarsets /agent")
				}
				return out
			}
			evaluate := func(v authority.Verbs) *Denial {
				t.Helper()
				d, err := p.Judge(t.Context(), Request{Operation: apiadmission.Create, Object: obj, User: &user.DefaultInfo{Name: "bob"}},
					&grants{allowed: grant(v)})
				if err != nil {
					t.Fatalf("Evaluate: %v", err)
				}
				return d
			}
			if d := evaluate(row.needs); d != nil {
				t.Errorf("with %s, the policy refuses: %s", row.needs, d.Message)
			}
			for _, name := range row.needs.Names() {
				verb, _ := authority.Parse(name)
				d := evaluate(row.needs &^ verb)
				if d == nil {
					t.Errorf("without %s, the policy allows it", name)
					continue
				}
				if !strings.Contains(d.Message, name) {
					t.Errorf("without %s, the policy refuses naming something else: %s", name, d.Message)
				}
			}
		})
	}
}

// Every volume type of the Kubernetes API the CRD was generated from is in
// the table: a new type is classified on purpose, not by the default.
func TestSecurityTable_HasEveryVolumeType(t *testing.T) {
	t.Parallel()
	var inTable []string
	for _, row := range securityTable(t) {
		if row.in == "volume" {
			inTable = append(inTable, strings.Fields(strings.Trim(row.field, "`"))[0])
		}
	}
	for _, name := range volumeTypeNames() {
		if !slices.ContainsFunc(inTable, func(f string) bool { return strings.Trim(f, "`") == name }) {
			t.Errorf("volume type %s is not in docs/security.md's table", name)
		}
	}
}

// volumeTypeNames are the JSON names of corev1.VolumeSource's fields.
func volumeTypeNames() []string {
	var out []string
	for f := range reflect.TypeFor[corev1.VolumeSource]().Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		out = append(out, name)
	}
	return out
}
