package policy

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/policy/authority"
)

// seedWhitelist is the example of the OpenKruise documentation.
const seedWhitelist = `{
  "rules": [
    {
      "selector": {"matchLabels": {"sidecar": "log-agent"}},
      "allowedAnnotationKeyExprs": [
        "^apps.kruise.io/container-launch-priority$",
        "^oom-score$",
        "^custom.example.com/sidecar-configuration$"
      ]
    }
  ]
}`

func mustParseWhitelist(t *testing.T, data string) *Whitelist {
	t.Helper()
	w, err := ParseWhitelist(data)
	if err != nil {
		t.Fatalf("ParseWhitelist: %v", err)
	}
	return w
}

func TestParseWhitelist_Errors(t *testing.T) {
	t.Parallel()
	patterns := func(n int) string {
		p := make([]string, n)
		for i := range p {
			p[i] = fmt.Sprintf(`"^k%d$"`, i)
		}
		return "[" + strings.Join(p, ",") + "]"
	}
	tests := []struct {
		name    string
		data    string
		wantErr string
	}{{
		name:    "the misspelled key of the Kruise e2e test is reported",
		data:    `{"rules":[{"annotationKeyExprs":["^oom-score$"]}]}`,
		wantErr: `rules[0]: json: unknown field "annotationKeyExprs" (a rule has the fields selector and allowedAnnotationKeyExprs)`,
	}, {
		name:    "an unknown top-level key is reported",
		data:    `{"rule":[]}`,
		wantErr: `SidecarSet_PatchPodMetadata_WhiteList: json: unknown field "rule"`,
	}, {
		name:    "an unknown selector key is reported with its rule",
		data:    `{"rules":[{"selector":{"matchLabel":{"a":"b"}},"allowedAnnotationKeyExprs":["^a$"]}]}`,
		wantErr: `rules[0]: json: unknown field "matchLabel" (a rule has the fields selector and allowedAnnotationKeyExprs)`,
	}, {
		name:    "an invalid pattern names its rule, its index and the pattern",
		data:    `{"rules":[{"allowedAnnotationKeyExprs":["^a$"]},{"allowedAnnotationKeyExprs":["^ok$","[a-"]}]}`,
		wantErr: "rules[1].allowedAnnotationKeyExprs[1]: invalid pattern \"[a-\": error parsing regexp: missing closing ]: `[a-`",
	}, {
		name:    "an invalid selector names its rule",
		data:    `{"rules":[{"selector":{"matchExpressions":[{"key":"a","operator":"Near"}]},"allowedAnnotationKeyExprs":["^a$"]}]}`,
		wantErr: `rules[0].selector: "Near" is not a valid label selector operator`,
	}, {
		name:    "too many rules",
		data:    `{"rules":[` + strings.Repeat(`{"allowedAnnotationKeyExprs":["^a$"]},`, MaxWhitelistRules) + `{}]}`,
		wantErr: "SidecarSet_PatchPodMetadata_WhiteList: 65 rules, the limit is 64",
	}, {
		name:    "too many patterns",
		data:    `{"rules":[{"allowedAnnotationKeyExprs":` + patterns(200) + `},{"allowedAnnotationKeyExprs":` + patterns(57) + `}]}`,
		wantErr: "rules[1].allowedAnnotationKeyExprs: more than 256 patterns in the whitelist",
	}, {
		name:    "a pattern too long",
		data:    `{"rules":[{"allowedAnnotationKeyExprs":["` + strings.Repeat("a", MaxPatternLength+1) + `"]}]}`,
		wantErr: "rules[0].allowedAnnotationKeyExprs[0]: the pattern is 1025 bytes long, the limit is 1024",
	}, {
		name:    "an empty value",
		data:    "  ",
		wantErr: "SidecarSet_PatchPodMetadata_WhiteList: the value is empty, want a JSON object",
	}, {
		name:    "data after the JSON object",
		data:    `{"rules":[]} {}`,
		wantErr: "SidecarSet_PatchPodMetadata_WhiteList: unexpected data after the JSON object",
	}, {
		name:    "YAML instead of JSON",
		data:    "rules: []",
		wantErr: "SidecarSet_PatchPodMetadata_WhiteList: invalid character 'r' looking for beginning of value",
	}, {
		name:    "rules that are not a list",
		data:    `{"rules":{}}`,
		wantErr: "SidecarSet_PatchPodMetadata_WhiteList: json: cannot unmarshal object into Go struct field .rules of type []json.RawMessage",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w, err := ParseWhitelist(tc.data)
			if err == nil {
				t.Fatalf("ParseWhitelist succeeded (%d rules), want error %q", len(w.rules), tc.wantErr)
			}
			if diff := cmp.Diff(tc.wantErr, err.Error()); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseWhitelist_Warnings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		data string
		want []string
	}{{
		name: "the documented example has no warning",
		data: seedWhitelist,
	}, {
		name: "unanchored patterns are accepted with a warning",
		data: `{"rules":[{"allowedAnnotationKeyExprs":["^ok$","key.*","^prefix"]}]}`,
		want: []string{
			`rules[0].allowedAnnotationKeyExprs[1]: pattern "key.*" is not anchored, so it allows every key that contains a match; write ^...$ to match whole keys`,
			`rules[0].allowedAnnotationKeyExprs[2]: pattern "^prefix" is not anchored, so it allows every key that contains a match; write ^...$ to match whole keys`,
		},
	}, {
		name: "a rule without patterns allows nothing",
		data: `{"rules":[{"selector":{"matchLabels":{"a":"b"}}}]}`,
		want: []string{"rules[0].allowedAnnotationKeyExprs: the rule allows no annotation key"},
	}, {
		name: "a whitelist without rules allows nothing",
		data: `{}`,
		want: []string{"rules: the whitelist has no rule, so no patchPodMetadata annotation is allowed"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := mustParseWhitelist(t, tc.data)
			if diff := cmp.Diff(tc.want, w.Warnings()); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

// checkWith checks a SidecarSet under a snapshot of a whitelist (nil: the
// ConfigMap is missing).
func checkWith(w *Whitelist, defaultsAllowed bool, s *appsv1beta1.SidecarSet) field.ErrorList {
	return (&Snapshot{Whitelist: w, Present: w != nil}).Check(defaultsAllowed, s)
}

func TestSnapshotCheck_Whitelist(t *testing.T) {
	t.Parallel()
	sidecarSet := func(labels map[string]string, patches ...map[string]string) *appsv1beta1.SidecarSet {
		s := &appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "s", Labels: labels}}
		for _, p := range patches {
			s.Spec.PatchPodMetadata = append(s.Spec.PatchPodMetadata, appsv1beta1.SidecarSetPatchPodMetadata{Annotations: p})
		}
		return s
	}
	logAgent := map[string]string{"sidecar": "log-agent"}
	path := func(i int, key string) *field.Path {
		return field.NewPath("spec", "patchPodMetadata").Index(i).Child("annotations").Key(key)
	}
	seedRules := `rules[0] ["^apps.kruise.io/container-launch-priority$" "^oom-score$" "^custom.example.com/sidecar-configuration$"]`
	many := `{"rules":[{"allowedAnnotationKeyExprs":["^a$","^b$","^c$","^d$","^e$"]},{"allowedAnnotationKeyExprs":["^f$","^g$","^h$","^i$","^j$"]}]}`
	tests := []struct {
		name            string
		whitelist       string // "" for none
		defaultsAllowed bool
		obj             *appsv1beta1.SidecarSet
		want            field.ErrorList
	}{{
		name: "a SidecarSet without patchPodMetadata needs no whitelist",
		obj:  sidecarSet(logAgent),
	}, {
		name: "a missing whitelist rejects patchPodMetadata with Kruise's message",
		obj:  sidecarSet(logAgent, map[string]string{"oom-score": "1"}),
		want: field.ErrorList{field.Forbidden(field.NewPath("spec", "patchPodMetadata"),
			"SidecarSet patch metadata whitelist not found: the kruise-configuration ConfigMap or its SidecarSet_PatchPodMetadata_WhiteList key is missing; add a rule allowing these annotation keys, or turn on the SidecarSetPatchPodMetadataDefaultsAllowed feature gate")},
	}, {
		name:            "a missing whitelist allows everything with the defaults gate",
		defaultsAllowed: true,
		obj:             sidecarSet(logAgent, map[string]string{"oom-score": "1"}),
	}, {
		name:      "the documented example allows its keys for the selected SidecarSet",
		whitelist: seedWhitelist,
		obj: sidecarSet(logAgent,
			map[string]string{"oom-score": `{"log-agent": 1}`, "custom.example.com/sidecar-configuration": "{}"},
			map[string]string{"apps.kruise.io/container-launch-priority": "Ordered"}),
	}, {
		name:      "a key outside the patterns is rejected, listing the rules that apply",
		whitelist: seedWhitelist,
		obj:       sidecarSet(logAgent, map[string]string{"oom-score": "1"}, map[string]string{"oom-score-adj": "1", "example.com/x": "2"}),
		want: field.ErrorList{
			field.Forbidden(path(1, "example.com/x"), "sidecarSet patch metadata annotation(example.com/x) is not allowed: it matches no pattern of the whitelist rules that select this SidecarSet: "+seedRules),
			field.Forbidden(path(1, "oom-score-adj"), "sidecarSet patch metadata annotation(oom-score-adj) is not allowed: it matches no pattern of the whitelist rules that select this SidecarSet: "+seedRules),
		},
	}, {
		name:      "a SidecarSet no rule selects is rejected key by key",
		whitelist: seedWhitelist,
		obj:       sidecarSet(map[string]string{"sidecar": "other"}, map[string]string{"oom-score": "1"}),
		want: field.ErrorList{field.Forbidden(path(0, "oom-score"),
			`sidecarSet patch metadata annotation(oom-score) is not allowed: no rule of the whitelist allows a key for this SidecarSet (1 rules, 0 selecting its labels "sidecar=other")`)},
	}, {
		name:            "a SidecarSet no rule selects is allowed with the defaults gate",
		whitelist:       seedWhitelist,
		defaultsAllowed: true,
		obj:             sidecarSet(nil, map[string]string{"anything": "1"}),
	}, {
		name:            "the defaults gate does not override the patterns of a rule that applies",
		whitelist:       seedWhitelist,
		defaultsAllowed: true,
		obj:             sidecarSet(logAgent, map[string]string{"anything": "1"}),
		want: field.ErrorList{field.Forbidden(path(0, "anything"),
			"sidecarSet patch metadata annotation(anything) is not allowed: it matches no pattern of the whitelist rules that select this SidecarSet: "+seedRules)},
	}, {
		// Issue 22: an author without inject-privileged labels its own
		// SidecarSet to opt into a rule.
		name:      "a rule selecting the labels grants nothing to an author without inject-privileged",
		whitelist: seedWhitelist,
		obj:       withAuthority(sidecarSet(logAgent, map[string]string{"oom-score": "1"}), "inject-secrets"),
		want: field.ErrorList{field.Forbidden(path(0, "oom-score"),
			`sidecarSet patch metadata annotation(oom-score) is not allowed: no rule of the whitelist allows a key for this SidecarSet (1 rules, 1 selecting its labels "sidecar=log-agent"); `+
				`rules [0] select its labels but grant nothing to a SidecarSet whose author does not hold the inject-privileged verb (its labels are the author's to set)`)},
	}, {
		name:            "a withheld rule still keeps the defaults gate from allowing every key",
		whitelist:       seedWhitelist,
		defaultsAllowed: true,
		obj:             withAuthority(sidecarSet(logAgent, map[string]string{"anything": "1"}), ""),
		want: field.ErrorList{field.Forbidden(path(0, "anything"),
			`sidecarSet patch metadata annotation(anything) is not allowed: no rule of the whitelist allows a key for this SidecarSet (1 rules, 1 selecting its labels "sidecar=log-agent"); `+
				`rules [0] select its labels but grant nothing to a SidecarSet whose author does not hold the inject-privileged verb (its labels are the author's to set)`)},
	}, {
		name:      "a rule selecting the labels applies to an author holding inject-privileged",
		whitelist: seedWhitelist,
		obj:       withAuthority(sidecarSet(logAgent, map[string]string{"oom-score": "1"}), "inject-privileged"),
	}, {
		name:      "a rule without selector applies whatever the authority",
		whitelist: `{"rules":[{"allowedAnnotationKeyExprs":["^y$"]}]}`,
		obj:       withAuthority(sidecarSet(nil, map[string]string{"y": "1"}), ""),
	}, {
		name:      "patterns are unanchored, as in Kruise",
		whitelist: `{"rules":[{"allowedAnnotationKeyExprs":["key.*"]}]}`,
		obj:       sidecarSet(nil, map[string]string{"mykey1": "1"}),
	}, {
		name:      "a rule without selector applies to every SidecarSet",
		whitelist: `{"rules":[{"selector":{"matchLabels":{"a":"b"}},"allowedAnnotationKeyExprs":["^x$"]},{"allowedAnnotationKeyExprs":["^y$"]}]}`,
		obj:       sidecarSet(map[string]string{"a": "b"}, map[string]string{"x": "1", "y": "2"}),
	}, {
		name:      "the message lists at most eight patterns",
		whitelist: many,
		obj:       sidecarSet(nil, map[string]string{"z": "1"}),
		want: field.ErrorList{field.Forbidden(path(0, "z"),
			`sidecarSet patch metadata annotation(z) is not allowed: it matches no pattern of the whitelist rules that select this SidecarSet: rules[0] ["^a$" "^b$" "^c$" "^d$" "^e$"], rules[1] ["^f$" "^g$" "^h$"] and 2 more patterns`)},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var w *Whitelist
			if tc.whitelist != "" {
				w = mustParseWhitelist(t, tc.whitelist)
			}
			got := checkWith(w, tc.defaultsAllowed, tc.obj)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// withAuthority records an author's verbs on a SidecarSet, as the
// defaulting webhook does.
func withAuthority(s *appsv1beta1.SidecarSet, verbs string) *appsv1beta1.SidecarSet {
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	s.Annotations[authority.Annotation] = verbs
	return s
}
