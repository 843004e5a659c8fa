package validate

import (
	"context"
	"errors"
	"os"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// validFS is testdata/valid as an in-memory file system, to break files.
func validFS(t *testing.T) fstest.MapFS {
	t.Helper()
	m := fstest.MapFS{}
	for _, p := range []string{
		"manifests/widget-operator.clusterserviceversion.yaml",
		"manifests/apps.kruise.io_sidecarsets.yaml",
		"manifests/widget-metrics_v1_service.yaml",
		"metadata/annotations.yaml",
		"tests/scorecard/config.yaml",
	} {
		data, err := os.ReadFile("testdata/valid/" + p)
		if err != nil {
			t.Fatal(err)
		}
		m[p] = &fstest.MapFile{Data: data}
	}
	return m
}

func TestLoad_ReportsContentProblems(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		mutate func(m fstest.MapFS)
		want   []string
	}{
		{"the valid bundle loads without findings", func(fstest.MapFS) {}, nil},
		{"an annotations file that does not parse fails", func(m fstest.MapFS) {
			m["metadata/annotations.yaml"] = &fstest.MapFile{Data: []byte("annotations: [")}
		}, []string{"error " + RuleAnnotationsFile}},
		{"a manifest that is not YAML fails", func(m fstest.MapFS) {
			m["manifests/broken.yaml"] = &fstest.MapFile{Data: []byte("kind: [")}
		}, []string{"error " + RuleParse}},
		{"a manifest without kind fails", func(m fstest.MapFS) {
			m["manifests/nokind.yaml"] = &fstest.MapFile{Data: []byte("apiVersion: v1\nmetadata:\n  name: x\n")}
		}, []string{"error " + RuleParse}},
		{"a CSV with a misspelt field fails", func(m fstest.MapFS) {
			data := append([]byte{}, m["manifests/widget-operator.clusterserviceversion.yaml"].Data...)
			data = append(data, []byte("  webhookDefinitions: []\n")...)
			m["manifests/widget-operator.clusterserviceversion.yaml"] = &fstest.MapFile{Data: data}
		}, []string{"error " + RuleCSVSchema}},
		{"a comment-only manifest is ignored", func(m fstest.MapFS) {
			m["manifests/notes.yaml"] = &fstest.MapFile{Data: []byte("# nothing here\n---\n")}
		}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := validFS(t)
			tc.mutate(m)
			b, err := Load(m, nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, summary(b.LoadFindings)); diff != "" {
				t.Errorf("load findings (-want +got):\n%s\n%v", diff, b.LoadFindings)
			}
		})
	}
}

func TestLoad_ReadsTheBundle(t *testing.T) {
	t.Parallel()
	b := loadValid(t)
	var objects []string
	for _, o := range b.Objects {
		objects = append(objects, o.File+" "+o.GetKind())
	}
	got := map[string]any{
		"files":   b.Files,
		"csv":     b.CSVFiles,
		"name":    b.CSV.Metadata.Name,
		"objects": objects,
		"package": b.Annotations["operators.operatorframework.io.bundle.package.v1"],
		"copies":  b.Dockerfile.Copies,
	}
	want := map[string]any{
		"files": []string{
			"manifests/", "manifests/apps.kruise.io_sidecarsets.yaml",
			"manifests/widget-leader_rbac.authorization.k8s.io_v1_role.yaml", "manifests/widget-leader_rbac.authorization.k8s.io_v1_rolebinding.yaml",
			"manifests/widget-metrics_v1_service.yaml",
			"manifests/widget-operator.clusterserviceversion.yaml", "metadata/", "metadata/annotations.yaml",
			"tests/", "tests/scorecard/", "tests/scorecard/config.yaml",
		},
		"csv":  []string{"manifests/widget-operator.clusterserviceversion.yaml"},
		"name": "widget-operator.v1.2.0",
		"objects": []string{
			"manifests/apps.kruise.io_sidecarsets.yaml CustomResourceDefinition",
			"manifests/widget-leader_rbac.authorization.k8s.io_v1_role.yaml Role",
			"manifests/widget-leader_rbac.authorization.k8s.io_v1_rolebinding.yaml RoleBinding",
			"manifests/widget-metrics_v1_service.yaml Service",
		},
		"package": "widget-operator",
		"copies": [][2]string{
			{"bundle/manifests", "/manifests/"}, {"bundle/metadata", "/metadata/"}, {"bundle/tests/scorecard", "/tests/scorecard/"},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("loaded bundle (-want +got):\n%s", diff)
	}
}

func TestParseDockerfile_Labels(t *testing.T) {
	t.Parallel()
	got := ParseDockerfile([]byte("# comment\nFROM scratch\nLABEL a=1 b=\"two\"\nlabel c=3\nCOPY x /y/\nRUN true\n"))
	want := &Dockerfile{Labels: map[string]string{"a": "1", "b": "two", "c": "3"}, Copies: [][2]string{{"x", "/y/"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParseDockerfile (-want +got):\n%s", diff)
	}
}

// fakeAPIServer rejects the CRDs and objects it is told to.
type fakeAPIServer struct {
	rejectCRD, rejectObject string
}

func (f fakeAPIServer) InstallCRD(_ context.Context, crd *apiextensionsv1.CustomResourceDefinition) error {
	if crd.Name == f.rejectCRD {
		return errors.New("spec.validation: Forbidden: estimated rule cost exceeds budget")
	}
	return nil
}

func (f fakeAPIServer) DryRunCreate(_ context.Context, obj *unstructured.Unstructured) error {
	if obj.GetName() == f.rejectObject {
		return errors.New("spec.selector: Required value")
	}
	return nil
}

func TestCheckOnAPIServer_Findings(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		api  fakeAPIServer
		want []Finding
	}{
		{"an accepted bundle has no finding", fakeAPIServer{}, nil},
		{"a CRD the API server rejects fails and the examples are not tried", fakeAPIServer{rejectCRD: "sidecarsets.apps.kruise.io", rejectObject: "example"}, []Finding{{
			Rule: RuleCRDAPIServer, Severity: Error,
			Message: "manifests/apps.kruise.io_sidecarsets.yaml: the API server rejects the CRD: spec.validation: Forbidden: estimated rule cost exceeds budget",
		}}},
		{"an example the API server rejects fails", fakeAPIServer{rejectObject: "example"}, []Finding{{
			Rule: RuleExamplesAPI, Severity: Error,
			Message: "alm-examples[0] (SidecarSet example) is rejected by the API server: spec.selector: Required value",
		}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := CheckOnAPIServer(context.Background(), loadValid(t), tc.api)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidate_CommittedBundle(t *testing.T) {
	t.Parallel()
	df, err := os.ReadFile("../../../bundle.Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Load(os.DirFS("../../../bundle"), df)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]Finding(nil), Validate(b)); diff != "" {
		t.Errorf("findings of bundle/ (-want +got):\n%s", diff)
	}
}
