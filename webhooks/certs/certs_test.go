package certs

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sidecarset-operator/sidecarset-operator/webhooks/names"
)

// TestOwnObjects: the certificate rotator's list and watch of the Secrets
// of the operator's namespace, and of the webhook configurations, ask for
// the certificate Secret and the two named configurations only, so that
// grants limited to them (resourceNames) allow them, and the manager reads
// no other Secret and no other webhook configuration; other requests pass
// unchanged.
func TestOwnObjects(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
	}))
	defer srv.Close()
	rt := byName{next: http.DefaultTransport, selectors: ownSelectors(CertOptions{
		Namespace: "ops", SecretName: "cert", MutatingConfig: "m", ValidatingConfig: "v",
	})}
	const admission = "/apis/admissionregistration.k8s.io/v1/"
	for _, tc := range []struct{ method, url, want string }{
		{"GET", "/api/v1/namespaces/ops/secrets?limit=500", "GET /api/v1/namespaces/ops/secrets?fieldSelector=metadata.name%3Dcert&limit=500"},
		{"GET", "/api/v1/namespaces/ops/secrets?watch=true&resourceVersion=7", "GET /api/v1/namespaces/ops/secrets?fieldSelector=metadata.name%3Dcert&resourceVersion=7&watch=true"},
		{"GET", "/api/v1/namespaces/ops/secrets?fieldSelector=type%3Dx", "GET /api/v1/namespaces/ops/secrets?fieldSelector=type%3Dx%2Cmetadata.name%3Dcert"},
		{"GET", "/api/v1/namespaces/ops/secrets/cert", "GET /api/v1/namespaces/ops/secrets/cert?"},
		{"GET", "/api/v1/namespaces/other/secrets", "GET /api/v1/namespaces/other/secrets?"},
		{"PUT", "/api/v1/namespaces/ops/secrets", "PUT /api/v1/namespaces/ops/secrets?"},
		{"GET", admission + "mutatingwebhookconfigurations?limit=500", "GET " + admission + "mutatingwebhookconfigurations?fieldSelector=metadata.name%3Dm&limit=500"},
		{"GET", admission + "validatingwebhookconfigurations?watch=true", "GET " + admission + "validatingwebhookconfigurations?fieldSelector=metadata.name%3Dv&watch=true"},
		{"GET", admission + "mutatingwebhookconfigurations/m", "GET " + admission + "mutatingwebhookconfigurations/m?"},
		{"PUT", admission + "mutatingwebhookconfigurations/m", "PUT " + admission + "mutatingwebhookconfigurations/m?"},
	} {
		got = nil
		req, err := http.NewRequest(tc.method, srv.URL+tc.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if len(got) != 1 || got[0] != tc.want {
			t.Errorf("%s %s: sent %v, want %q", tc.method, tc.url, got, tc.want)
		}
	}
}

func TestCertOptions_KeepsConversion(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		o    CertOptions
		want bool
	}{
		{"self-managed certificates keep the CRD's conversion webhook", CertOptions{Source: names.CertSourceSelf, MutatingConfig: names.MutatingConfigName}, true},
		{"cert-manager's certificates leave it to cert-manager's CA injector", CertOptions{Source: names.CertSourceExternal, MutatingConfig: names.MutatingConfigName}, false},
		{"OLM's certificates leave it to OLM", CertOptions{Source: names.CertSourceExternal}, false},
		{"without a named configuration there is no CA bundle to copy", CertOptions{Source: names.CertSourceSelf}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := tc.o.KeepsConversion(); got != tc.want {
				t.Errorf("KeepsConversion() = %v, want %v", got, tc.want)
			}
		})
	}
}
