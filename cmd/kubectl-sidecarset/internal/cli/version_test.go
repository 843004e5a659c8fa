package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/sidecarset-operator/sidecarset-operator/version"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/names"
)

// webhookConfig is a MutatingWebhookConfiguration holding the pod webhook,
// with the given annotations.
func webhookConfig(name string, annotations map[string]string) *admissionregistrationv1.MutatingWebhookConfiguration {
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations},
		Webhooks:   []admissionregistrationv1.MutatingWebhook{{Name: names.PodWebhookName}, {Name: names.PodBestEffortWebhookName}},
	}
}

// runVersion runs kubectl sidecarset version with a client of the given
// objects, whose calls funcs may intercept.
func runVersion(t *testing.T, funcs interceptor.Funcs, objs []client.Object, args ...string) (string, string, error) {
	t.Helper()
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithInterceptorFuncs(funcs).Build()
	var out, errOut bytes.Buffer
	cmd := newRootCommand(&options{sidecarSetsFrom: fromCluster, cl: c}, Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	cmd.SetArgs(append([]string{"version"}, args...))
	err := cmd.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

var forbidden = func(resource string) error {
	return apierrors.NewForbidden(schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: resource}, "", nil)
}

func TestVersion_PrintsBothAndWarnsOnSkew(t *testing.T) {
	t.Parallel()
	cfg := webhookConfig(names.MutatingConfigName, version.Info{Version: "v0.1.0", Revision: "abc"}.Annotations())
	out, errOut, err := runVersion(t, interceptor.Funcs{}, []client.Object{cfg})
	if err != nil {
		t.Fatal(err)
	}
	want := "Plugin:   " + version.DevelVersion + "\n" +
		"Operator: v0.1.0 (abc) (MutatingWebhookConfiguration " + names.MutatingConfigName + ")\n"
	if out != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", out, want)
	}
	// The plugin of a test is a development build: no comparison, said so.
	if !strings.HasPrefix(errOut, "Warning: ") || !strings.Contains(errOut, "development build") {
		t.Errorf("stderr %q, want a warning that a development build cannot be compared", errOut)
	}
}

func TestVersion_JSON(t *testing.T) {
	t.Parallel()
	cfg := webhookConfig(names.MutatingConfigName, version.Info{Version: "v0.2.0", Revision: "def"}.Annotations())
	out, _, err := runVersion(t, interceptor.Funcs{}, []client.Object{cfg}, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var r VersionReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	if r.Operator == nil || r.Operator.Version != "v0.2.0" || r.Operator.Revision != "def" || r.Operator.Configuration != names.MutatingConfigName {
		t.Errorf("operator %+v in %s", r.Operator, out)
	}
	if r.Plugin.Version != version.DevelVersion || r.Skew == nil || r.Skew.Level != version.SkewUnknown {
		t.Errorf("plugin %+v, skew %+v", r.Plugin, r.Skew)
	}
}

// A user who may neither get nor list the configurations still learns the
// plugin's version, and why the operator's is unknown; the exit code is 0.
func TestVersion_UnreadableConfigurationStillPrintsThePlugin(t *testing.T) {
	t.Parallel()
	funcs := interceptor.Funcs{
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return forbidden("mutatingwebhookconfigurations")
		},
		List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
			return forbidden("mutatingwebhookconfigurations")
		},
	}
	out, errOut, err := runVersion(t, funcs, nil)
	if err != nil {
		t.Fatalf("error %v, want none (exit 0)", err)
	}
	if !strings.Contains(out, "Plugin:   "+version.DevelVersion+"\n") || !strings.Contains(out, "Operator: unknown: the MutatingWebhookConfiguration "+
		names.MutatingConfigName+": Forbidden, and the configurations cannot be listed: Forbidden") {
		t.Errorf("stdout:\n%s", out)
	}
	if !strings.Contains(errOut, "the operator's version is unknown") {
		t.Errorf("stderr %q", errOut)
	}
}

// --client reads nothing from the cluster.
func TestVersion_ClientOnly(t *testing.T) {
	t.Parallel()
	funcs := interceptor.Funcs{
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			t.Error("--client read the cluster")
			return nil
		},
	}
	out, errOut, err := runVersion(t, funcs, nil, "--client", "-o", "yaml")
	if err != nil {
		t.Fatal(err)
	}
	if out != "plugin:\n  version: "+version.DevelVersion+"\n" || errOut != "" {
		t.Errorf("stdout %q, stderr %q", out, errOut)
	}
}

// Under OLM the configuration has a generated name: the one holding the pod
// webhook is found in the list.
func TestVersion_FindsOLMsConfiguration(t *testing.T) {
	t.Parallel()
	other := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "istio"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "sidecar-injector.istio.io"}}}
	olm := webhookConfig("mpod.sidecarset-operator.dev-7fc4x", version.Info{Version: "v0.3.1"}.Annotations())
	out, _, err := runVersion(t, interceptor.Funcs{}, []client.Object{other, olm})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "Operator: v0.3.1 (MutatingWebhookConfiguration mpod.sidecarset-operator.dev-7fc4x)\n") {
		t.Errorf("stdout:\n%s", out)
	}
}

func TestOperatorVersionIn(t *testing.T) {
	t.Parallel()
	v1 := version.Info{Version: "v0.1.0", Revision: "a"}
	for _, c := range []struct {
		name    string
		configs []*admissionregistrationv1.MutatingWebhookConfiguration
		want    *OperatorVersion
		why     string
	}{
		{"recorded", []*admissionregistrationv1.MutatingWebhookConfiguration{webhookConfig("m", v1.Annotations())},
			&OperatorVersion{Info: v1, Configuration: "m"}, ""},
		{"the first by name that records one", []*admissionregistrationv1.MutatingWebhookConfiguration{
			webhookConfig("b", version.Info{Version: "v0.2.0"}.Annotations()), webhookConfig("a", nil), webhookConfig("c", v1.Annotations())},
			&OperatorVersion{Info: version.Info{Version: "v0.2.0"}, Configuration: "b"}, ""},
		{"none recorded", []*admissionregistrationv1.MutatingWebhookConfiguration{webhookConfig("m", nil)},
			nil, "m records no version"},
		{"not installed", nil, nil, "no MutatingWebhookConfiguration has the pod webhook"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var configs []admissionregistrationv1.MutatingWebhookConfiguration
			for _, cfg := range c.configs {
				configs = append(configs, *cfg)
			}
			got, why := operatorVersionIn(configs)
			if (got == nil) != (c.want == nil) || (got != nil && *got != *c.want) {
				t.Errorf("operator %+v, want %+v", got, c.want)
			}
			if !strings.Contains(why, c.why) || (c.why == "") != (why == "") {
				t.Errorf("reason %q, want one containing %q", why, c.why)
			}
		})
	}
}
