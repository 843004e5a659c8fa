package inject

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/policy"
	"github.com/sidecarset-operator/sidecarset-operator/policy/podmeta"
)

func TestReadState_DecodesOnlyWhatInjectionUses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		annotations map[string]string
		wantLists   []string
		wantErr     string
	}{
		{name: "a pod without state lists nothing"},
		{
			name: "current, legacy and injected-list entries all count as injected",
			annotations: map[string]string{
				appsv1beta1.SidecarSetHashAnnotation:             `{"a":{"hash":"h","sidecarSetName":"a","updateTimestamp":null,"sidecarList":null}}`,
				appsv1beta1.SidecarSetHashWithoutImageAnnotation: `{"b":"legacy-hash"}`,
				appsv1beta1.SidecarSetListAnnotation:             "c,a",
			},
			wantLists: []string{"a", "b", "c"},
		},
		{
			name: "a malformed in-place update state does not block injection",
			annotations: map[string]string{
				appsv1beta1.InPlaceUpdateStateAnnotation: "{not json",
				appsv1beta1.SidecarSetListAnnotation:     "a",
			},
			wantLists: []string{"a"},
		},
		{
			name:        "a malformed hash annotation denies the pod, naming it",
			annotations: map[string]string{appsv1beta1.SidecarSetHashAnnotation: "[1]"},
			wantErr: "pod malformed annotation kruise.io/sidecarset-hash: neither a map of hash entries nor a map of hashes: " +
				"json: cannot unmarshal array into Go value of type map[string]string; fix or remove it to create the pod",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := readState(tc.annotations)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, n := range []string{"a", "b", "c", "d"} {
				if s.lists(n) {
					got = append(got, n)
				}
			}
			if diff := cmp.Diff(tc.wantLists, got); diff != "" {
				t.Errorf("listed SidecarSets (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPatchMetadata_ProtectsSidecarSetState(t *testing.T) {
	t.Parallel()
	set := newSidecarSet("s", "web", "c")
	set.Spec.PatchPodMetadata = []appsv1beta1.SidecarSetPatchPodMetadata{
		{PatchPolicy: appsv1beta1.SidecarSetOverwritePatchPolicy, Annotations: map[string]string{
			"team":                               "platform",
			appsv1beta1.SidecarSetListAnnotation: "evil",
			"version.sidecarset.kruise.io/x-1":   "9",
		}},
	}
	annotations := map[string]string{"team": "app"}
	warnings, err := patchMetadata(&version{name: "s", set: set}, annotations, anyKey)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"team": "platform"}, annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	wantWarnings := []string{
		`SidecarSet "s": patchPodMetadata: annotation kruise.io/sidecarset-injected-list holds SidecarSet state and was not patched`,
		`SidecarSet "s": patchPodMetadata: annotation version.sidecarset.kruise.io/x-1 holds SidecarSet state and was not patched`,
	}
	if diff := cmp.Diff(wantWarnings, warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

// TestPatchMetadata_WhitelistInForceDecides: each key is checked against
// the whitelist in force when the pod is created, not only when the
// SidecarSet was written: a restored pinned revision may patch keys the live
// spec does not, and the whitelist may have changed since.
func TestPatchMetadata_WhitelistInForceDecides(t *testing.T) {
	t.Parallel()
	set := newSidecarSet("s", "web", "c")
	set.Labels = map[string]string{"sidecar": "log-agent"}
	set.Spec.PatchPodMetadata = []appsv1beta1.SidecarSetPatchPodMetadata{
		{PatchPolicy: appsv1beta1.SidecarSetOverwritePatchPolicy, Annotations: map[string]string{
			"oom-score":              "1",
			"team.example.com/owner": "platform",
		}},
	}
	w, err := policy.ParseWhitelist(`{"rules":[{"selector":{"matchLabels":{"sidecar":"log-agent"}},"allowedAnnotationKeyExprs":["^oom-score$"]}]}`)
	if err != nil {
		t.Fatal(err)
	}
	const notFound = "SidecarSet patch metadata whitelist not found: the kruise-configuration ConfigMap or its " +
		"SidecarSet_PatchPodMetadata_WhiteList key is missing; add a rule allowing these annotation keys, " +
		"or turn on the SidecarSetPatchPodMetadataDefaultsAllowed feature gate"
	tests := []struct {
		name         string
		whitelist    podmeta.Whitelist
		want         map[string]string
		wantWarnings []string
	}{
		{
			name:      "a key the rules selecting the SidecarSet do not allow is not patched",
			whitelist: podmeta.Whitelist{Snapshot: &policy.Snapshot{Whitelist: w, Present: true}},
			want:      map[string]string{"oom-score": "1"},
			wantWarnings: []string{`SidecarSet "s": patchPodMetadata: annotation team.example.com/owner was not patched: ` +
				`sidecarSet patch metadata annotation(team.example.com/owner) is not allowed: ` +
				`it matches no pattern of the whitelist rules that select this SidecarSet: rules[0] ["^oom-score$"]`},
		},
		{
			name:      "without the ConfigMap and with the gate off, nothing is patched",
			whitelist: podmeta.Whitelist{},
			want:      map[string]string{},
			wantWarnings: []string{
				`SidecarSet "s": patchPodMetadata: annotation oom-score was not patched: ` + notFound,
				`SidecarSet "s": patchPodMetadata: annotation team.example.com/owner was not patched: ` + notFound,
			},
		},
		{
			name:      "without the ConfigMap and with the gate on, every key is patched",
			whitelist: anyKey,
			want:      map[string]string{"oom-score": "1", "team.example.com/owner": "platform"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			annotations := map[string]string{}
			warnings, err := patchMetadata(&version{name: "s", set: set}, annotations, tc.whitelist)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, annotations); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantWarnings, warnings, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPatchMetadata_MergeErrorDeniesThePod(t *testing.T) {
	t.Parallel()
	set := newSidecarSet("s", "web", "c")
	set.Spec.PatchPodMetadata = []appsv1beta1.SidecarSetPatchPodMetadata{
		{PatchPolicy: appsv1beta1.SidecarSetMergePatchJSONPatchPolicy, Annotations: map[string]string{"oom-score": `{"agent":1}`}},
	}
	_, err := patchMetadata(&version{name: "s", set: set}, map[string]string{"oom-score": "high"}, anyKey)
	want := `SidecarSet "s": patchPodMetadata: annotation oom-score: merging "{\"agent\":1}" into "high": the pod's value is not JSON`
	if err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q", err, want)
	}
}

func TestRecordInjection_EntriesAndInjectedList(t *testing.T) {
	t.Parallel()
	state, err := readState(map[string]string{
		appsv1beta1.SidecarSetHashAnnotation:             `{"old":"h-old"}`,
		appsv1beta1.SidecarSetHashWithoutImageAnnotation: `{"old":"w-old"}`,
		appsv1beta1.SidecarSetListAnnotation:             "old,zz",
	})
	if err != nil {
		t.Fatal(err)
	}
	plans := []*plan{
		{v: &version{name: "a", hashes: appsv1beta1.Hashes{Hash: "h-a", WithoutImage: "w-a"}, controllerRevision: "a-rev"},
			containers: []sidecar{sc("c", "")}, sidecarList: []string{"c"}},
		{v: &version{name: "empty", hashes: appsv1beta1.Hashes{Hash: "h-e", WithoutImage: "w-e"}}},
	}
	annotations := map[string]string{}
	recordInjection(annotations, state, plans, []string{"a", "empty"}, testNow)

	got, err := readState(annotations)
	if err != nil {
		t.Fatal(err)
	}
	wantHashes := podstate.Hashes{
		"old": {Hash: "h-old", SidecarSetName: "old"},
		"a":   {UpdateTimestamp: testNow, Hash: "h-a", SidecarSetName: "a", SidecarList: []string{"c"}, ControllerRevision: "a-rev"},
	}
	if diff := cmp.Diff(wantHashes, got.hashes); diff != "" {
		t.Errorf("hash entries (-want +got):\n%s", diff)
	}
	wantWithoutImage := podstate.Hashes{
		"old": {Hash: "w-old", SidecarSetName: "old"},
		"a":   {UpdateTimestamp: testNow, Hash: "w-a", SidecarSetName: "a", SidecarList: []string{"c"}},
	}
	if diff := cmp.Diff(wantWithoutImage, got.hashesWithoutImage); diff != "" {
		t.Errorf("without-image entries (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff("a,empty,old,zz", annotations[appsv1beta1.SidecarSetListAnnotation]); diff != "" {
		t.Errorf("injected-list (-want +got):\n%s", diff)
	}
	if _, ok := annotations[appsv1beta1.WorkingHotUpgradeContainerAnnotation]; ok {
		t.Errorf("the working-twin annotation is written without any hot-upgrade sidecar")
	}
}

// readState decodes a pod's annotations as Inject does.
func readState(annotations map[string]string) (podState, error) {
	return stateOf(podstate.ReadInjection(annotations))
}
