package csv

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecode_Strict(t *testing.T) {
	t.Parallel()
	const base = "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: w.v1.0.0\nspec:\n  displayName: W\n  version: 1.0.0\n  provider: {name: P}\n  install: {strategy: deployment, spec: {deployments: []}}\n"
	cases := []struct {
		name    string
		extra   string
		wantErr string
	}{
		{"a known CSV decodes", "", ""},
		{"a misspelt field fails even when only its case differs", "  webhookDefinitions: []\n", `unknown field "spec.webhookDefinitions"`},
		{"an unknown field fails", "  clusterpermissions: []\n", `unknown field "spec.clusterpermissions"`},
		{"a duplicate field fails", "  version: 1.0.1\n", `key "version" already set`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := Decode([]byte(base + tc.extra))
			if tc.wantErr == "" {
				if err != nil || c.Metadata.Name != "w.v1.0.0" {
					t.Errorf("Decode = %v, %v; want the CSV", c, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Decode error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestEncode_RoundTrip(t *testing.T) {
	t.Parallel()
	in := &ClusterServiceVersion{APIVersion: APIVersion, Kind: Kind, Metadata: Metadata{Name: "w.v1.0.0"},
		Spec: Spec{DisplayName: "W", Version: "1.0.0", InstallModes: []InstallMode{{Type: InstallModeAllNamespaces, Supported: true}},
			Install: Install{Strategy: InstallStrategyDeployment}}}
	data, err := Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(in, out); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if !out.Supports(InstallModeAllNamespaces) || out.Supports(InstallModeOwnNamespace) {
		t.Errorf("Supports: AllNamespaces %v, OwnNamespace %v; want true, false", out.Supports(InstallModeAllNamespaces), out.Supports(InstallModeOwnNamespace))
	}
}

func TestServiceName_OLMConvention(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"sidecarset-operator": "sidecarset-operator-service", "my.operator": "my-operator-service"} {
		if got := ServiceName(in); got != want {
			t.Errorf("ServiceName(%q) = %q, want %q", in, got, want)
		}
	}
}
