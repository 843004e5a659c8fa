package podstate

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/expect"
)

// The annotation strings below are written by hand from behavior.md 1.7
// (keys, field names and order: updateTimestamp, hash, sidecarSetName,
// sidecarList, controllerRevision omitted when empty; revision,
// updateTimestamp, lastContainerStatuses), 2.9 and 3.11 (legacy entries are
// upgraded keeping only the hash and the name), as OpenKruise writes them.

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func TestDecodeHashes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		value   string
		want    Hashes
		wantErr string
	}{
		{name: "an absent annotation is no entry", value: "", want: Hashes{}},
		{
			name: "the current format",
			value: `{"proxy":{"updateTimestamp":"2026-01-02T03:04:05Z","hash":"h1","sidecarSetName":"proxy",` +
				`"sidecarList":["envoy","init-proxy"],"controllerRevision":"proxy-5dd58f4f59"}}`,
			want: Hashes{"proxy": {UpdateTimestamp: metav1.NewTime(t0), Hash: "h1", SidecarSetName: "proxy",
				SidecarList: []string{"envoy", "init-proxy"}, ControllerRevision: "proxy-5dd58f4f59"}},
		},
		{
			name:  "the legacy format, a map of hashes",
			value: `{"proxy":"h1","logger":"h2"}`,
			want:  Hashes{"proxy": {Hash: "h1", SidecarSetName: "proxy"}, "logger": {Hash: "h2", SidecarSetName: "logger"}},
		},
		{
			name:  "an entry without sidecarSetName is named by its key",
			value: `{"proxy":{"hash":"h1"}}`,
			want:  Hashes{"proxy": {Hash: "h1", SidecarSetName: "proxy"}},
		},
		{
			name:    "a JSON array is neither format",
			value:   `["proxy"]`,
			wantErr: "neither a map of hash entries nor a map of hashes: json: cannot unmarshal array into Go value of type map[string]string",
		},
		{
			name:    "a number as an entry is neither format",
			value:   `{"proxy":1}`,
			wantErr: "neither a map of hash entries nor a map of hashes: json: cannot unmarshal number into Go value of type string",
		},
		{
			name:    "text that is not JSON is an error",
			value:   `proxy=h1`,
			wantErr: "neither a map of hash entries nor a map of hashes: invalid character 'p' looking for beginning of value",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := DecodeHashes(tc.value)
			if expect.Error(t, err, tc.wantErr) {
				return
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("entries (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHashesEncode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		value Hashes
		want  string
	}{
		{
			name: "keys sorted, fields in OpenKruise's order, controllerRevision omitted when empty",
			value: Hashes{
				"proxy": {UpdateTimestamp: metav1.NewTime(t0), Hash: "h1", SidecarSetName: "proxy", SidecarList: []string{"envoy"},
					ControllerRevision: "proxy-1"},
				"logger": {UpdateTimestamp: metav1.NewTime(t0), Hash: "h2", SidecarSetName: "logger", SidecarList: []string{"fluentbit"}},
			},
			want: `{"logger":{"updateTimestamp":"2026-01-02T03:04:05Z","hash":"h2","sidecarSetName":"logger","sidecarList":["fluentbit"]},` +
				`"proxy":{"updateTimestamp":"2026-01-02T03:04:05Z","hash":"h1","sidecarSetName":"proxy","sidecarList":["envoy"],` +
				`"controllerRevision":"proxy-1"}}`,
		},
		{
			name:  "a legacy entry is rewritten in the current shape, with only its hash and name",
			value: mustDecode(t, `{"proxy":"h1"}`),
			want:  `{"proxy":{"updateTimestamp":null,"hash":"h1","sidecarSetName":"proxy","sidecarList":null}}`,
		},
		{name: "no entry", value: Hashes{}, want: `{}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := tc.value.Encode()
			if got != tc.want {
				t.Errorf("Encode:\n got %s\nwant %s", got, tc.want)
			}
			again, err := DecodeHashes(got)
			if err != nil {
				t.Fatal(err)
			}
			if again.Encode() != got {
				t.Errorf("decoding and encoding again gives %s", again.Encode())
			}
		})
	}
}

func mustDecode(t *testing.T, value string) Hashes {
	t.Helper()
	h, err := DecodeHashes(value)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestInjectedList(t *testing.T) {
	t.Parallel()
	tests := []struct {
		value string
		want  []string
	}{
		{value: "", want: nil},
		{value: "proxy", want: []string{"proxy"}},
		{value: "proxy,logger", want: []string{"logger", "proxy"}},
		{value: " proxy , logger,,proxy ", want: []string{"logger", "proxy"}},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, DecodeInjectedList(tc.value)); diff != "" {
			t.Errorf("DecodeInjectedList(%q) (-want +got):\n%s", tc.value, diff)
		}
	}
	// behavior.md 1.7: comma-joined and alphabetically sorted.
	if got := EncodeInjectedList([]string{"proxy", "logger", "proxy"}); got != "logger,proxy" {
		t.Errorf("EncodeInjectedList = %q, want logger,proxy", got)
	}
	if got := EncodeInjectedList(nil); got != "" {
		t.Errorf("EncodeInjectedList(nil) = %q, want empty", got)
	}
}

func TestInPlaceState(t *testing.T) {
	t.Parallel()
	const value = `{"proxy":{"revision":"h1","updateTimestamp":"2026-01-02T03:04:05Z",` +
		`"lastContainerStatuses":{"envoy":{"imageID":"docker.io/envoyproxy/envoy@sha256:aa"},"init":{}}}}`
	want := map[string]*InPlaceUpdateState{"proxy": {
		Revision: "h1", UpdateTimestamp: metav1.NewTime(t0),
		LastContainerStatuses: map[string]ContainerStatus{"envoy": {ImageID: "docker.io/envoyproxy/envoy@sha256:aa"}, "init": {}},
	}}
	got, err := DecodeInPlaceState(value)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decoded (-want +got):\n%s", diff)
	}
	if enc := EncodeInPlaceState(got); enc != value {
		t.Errorf("EncodeInPlaceState:\n got %s\nwant %s", enc, value)
	}
	if got, err := DecodeInPlaceState(""); err != nil || len(got) != 0 {
		t.Errorf("an absent annotation decodes to %v, %v; want no entry", got, err)
	}
	if _, err := DecodeInPlaceState(`{"proxy":"h1"}`); err == nil {
		t.Error("an entry that is not an object decodes without error")
	}
}

func TestRead(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		annotations map[string]string
		want        State
		wantErr     string
	}{
		{
			name: "a pod without SidecarSet annotations",
			want: State{Hashes: Hashes{}, HashesWithoutImage: Hashes{}, InPlace: map[string]*InPlaceUpdateState{}, WorkingHotUpgrade: map[string]string{}},
		},
		{
			name: "every annotation decoded",
			annotations: map[string]string{
				appsv1beta1.SidecarSetHashAnnotation:             `{"proxy":"h1"}`,
				appsv1beta1.SidecarSetHashWithoutImageAnnotation: `{"proxy":"w1"}`,
				appsv1beta1.SidecarSetListAnnotation:             "proxy",
				appsv1beta1.InPlaceUpdateStateAnnotation:         `{"proxy":{"revision":"h0","updateTimestamp":null,"lastContainerStatuses":{}}}`,
				appsv1beta1.WorkingHotUpgradeContainerAnnotation: `{"envoy":"envoy-2"}`,
				"unrelated": "x",
			},
			want: State{
				Hashes:             Hashes{"proxy": {Hash: "h1", SidecarSetName: "proxy"}},
				HashesWithoutImage: Hashes{"proxy": {Hash: "w1", SidecarSetName: "proxy"}},
				Injected:           []string{"proxy"},
				InPlace:            map[string]*InPlaceUpdateState{"proxy": {Revision: "h0", LastContainerStatuses: map[string]ContainerStatus{}}},
				WorkingHotUpgrade:  map[string]string{"envoy": "envoy-2"},
			},
		},
		{
			name:        "a malformed without-image annotation is named",
			annotations: map[string]string{appsv1beta1.SidecarSetHashWithoutImageAnnotation: "[]"},
			wantErr: "malformed annotation kruise.io/sidecarset-hash-without-image: neither a map of hash entries nor a map of hashes: " +
				"json: cannot unmarshal array into Go value of type map[string]string",
		},
		{
			name:        "a malformed in-place update state is named",
			annotations: map[string]string{appsv1beta1.InPlaceUpdateStateAnnotation: "{"},
			wantErr:     "malformed annotation kruise.io/sidecarset-inplace-update-state: unexpected end of JSON input",
		},
		{
			name:        "a malformed working-twin map is named",
			annotations: map[string]string{appsv1beta1.WorkingHotUpgradeContainerAnnotation: `{"envoy":1}`},
			wantErr: "malformed annotation kruise.io/sidecarset-working-hotupgrade-container: " +
				"json: cannot unmarshal number into Go value of type string",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := Read(tc.annotations)
			if expect.Error(t, err, tc.wantErr) {
				return
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("state (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHotUpgradeKeys(t *testing.T) {
	t.Parallel()
	// behavior.md 2.6 and 1.7: twins <name>-1 and <name>-2, the versionalt.
	// prefix of the code (not the proposal's version_alt.).
	t1, t2 := appsv1beta1.HotUpgradeTwins("envoy")
	got := []string{t1, t2, VersionKey(t1), VersionAltKey(t2)}
	want := []string{"envoy-1", "envoy-2", "version.sidecarset.kruise.io/envoy-1", "versionalt.sidecarset.kruise.io/envoy-2"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := EncodeStringMap(map[string]string{"z": "z-1", "a": "a-2"}); got != `{"a":"a-2","z":"z-1"}` {
		t.Errorf("EncodeStringMap = %s", got)
	}
}

func TestUpgradable(t *testing.T) {
	t.Parallel()
	// behavior.md 3.14: a JSON map from SidecarSet name to a boolean.
	if got := EncodeUpgradable(map[string]bool{"proxy": true, "logger": false}); got != `{"logger":false,"proxy":true}` {
		t.Errorf("EncodeUpgradable = %s", got)
	}
	if diff := cmp.Diff(map[string]bool{"proxy": true}, DecodeUpgradable(`{"proxy":true}`)); diff != "" {
		t.Errorf("DecodeUpgradable (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"", "not json", `{"proxy":"yes"}`} {
		if got := DecodeUpgradable(bad); len(got) != 0 {
			t.Errorf("DecodeUpgradable(%q) = %v, want empty", bad, got)
		}
	}
}

func TestReserved(t *testing.T) {
	t.Parallel()
	tests := []struct {
		key  string
		want bool
	}{
		{"kruise.io/sidecarset-hash", true},
		{"kruise.io/sidecarset-hash-without-image", true},
		{"kruise.io/sidecarset-injected-list", true},
		{"kruise.io/sidecarset-inplace-update-state", true},
		{"kruise.io/sidecarset-working-hotupgrade-container", true},
		{"version.sidecarset.kruise.io/envoy-1", true},
		{"versionalt.sidecarset.kruise.io/envoy-2", true},
		{"sidecarset-operator.dev/reach", true},
		{"sidecarset-operator.dev/restricted", true},
		{"sidecarset-operator.dev/anything-later", true},
		{"team.sidecarset-operator.dev/owner", false},
		{"kruise.io/sidecarset-hash-extra", false},
		{"apps.kruise.io/container-launch-priority", false},
		{"oom-score", false},
		{"version_alt.sidecarset.kruise.io/envoy-2", false},
	}
	for _, tc := range tests {
		if got := Reserved(tc.key); got != tc.want {
			t.Errorf("Reserved(%q) = %v, want %v", tc.key, got, tc.want)
		}
	}
}

func TestSidecarList(t *testing.T) {
	t.Parallel()
	always := corev1.ContainerRestartPolicyAlways
	tests := []struct {
		name string
		spec appsv1beta1.SidecarSetSpec
		want []string
	}{
		{
			name: "containers and native sidecars, sorted; plain init containers not listed",
			spec: appsv1beta1.SidecarSetSpec{
				InitContainers: []appsv1beta1.SidecarContainer{
					{Container: corev1.Container{Name: "setup"}},
					{Container: corev1.Container{Name: "mesh", RestartPolicy: &always}},
				},
				Containers: []appsv1beta1.SidecarContainer{
					{Container: corev1.Container{Name: "logger"}},
					{Container: corev1.Container{Name: "envoy"}, UpgradeStrategy: appsv1beta1.SidecarContainerUpgradeStrategy{
						UpgradeType: appsv1beta1.SidecarContainerHotUpgrade, HotUpgradeEmptyImage: "empty:1"}},
				},
			},
			want: []string{"envoy", "logger", "mesh"},
		},
		{
			name: "only plain init containers: no list",
			spec: appsv1beta1.SidecarSetSpec{InitContainers: []appsv1beta1.SidecarContainer{{Container: corev1.Container{Name: "setup"}}}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, SidecarList(&tc.spec)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestVersionEntries(t *testing.T) {
	t.Parallel()
	v := Version{
		SidecarSet:         "proxy",
		Hashes:             appsv1beta1.Hashes{Hash: "h1", WithoutImage: "w1"},
		SidecarList:        []string{"envoy"},
		ControllerRevision: "proxy-1",
	}
	entry, withoutImage := v.Entries(t0.Add(987 * time.Millisecond))
	got := Hashes{"proxy": entry}.Encode() + "\n" + Hashes{"proxy": withoutImage}.Encode()
	// behavior.md 2.9: the without-image entry has no controllerRevision.
	want := `{"proxy":{"updateTimestamp":"2026-01-02T03:04:05Z","hash":"h1","sidecarSetName":"proxy","sidecarList":["envoy"],"controllerRevision":"proxy-1"}}` + "\n" +
		`{"proxy":{"updateTimestamp":"2026-01-02T03:04:05Z","hash":"w1","sidecarSetName":"proxy","sidecarList":["envoy"]}}`
	if got != want {
		t.Errorf("entries:\n got %s\nwant %s", got, want)
	}
	if !entry.UpdateTimestamp.Equal(&metav1.Time{Time: t0}) {
		t.Errorf("timestamp %v is not truncated to seconds", entry.UpdateTimestamp)
	}
	entry.SidecarList[0] = "changed"
	if v.SidecarList[0] != "envoy" || withoutImage.SidecarList[0] != "envoy" {
		t.Error("the entries share the version's sidecarList")
	}
}
