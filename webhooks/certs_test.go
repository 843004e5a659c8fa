package webhooks

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestSecretByName: the certificate rotator's list and watch of the Secrets
// of the operator's namespace ask for the certificate Secret only, so that a
// grant limited to it (resourceNames) allows them; other requests pass
// unchanged (issue 22: the manager could read every Secret there).
func TestSecretByName(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
	}))
	defer srv.Close()
	rt := secretByName{next: http.DefaultTransport, path: "/api/v1/namespaces/ops/secrets", selector: "metadata.name=cert"}
	for _, tc := range []struct{ method, url, want string }{
		{"GET", "/api/v1/namespaces/ops/secrets?limit=500", "GET /api/v1/namespaces/ops/secrets?fieldSelector=metadata.name%3Dcert&limit=500"},
		{"GET", "/api/v1/namespaces/ops/secrets?watch=true&resourceVersion=7", "GET /api/v1/namespaces/ops/secrets?fieldSelector=metadata.name%3Dcert&resourceVersion=7&watch=true"},
		{"GET", "/api/v1/namespaces/ops/secrets?fieldSelector=type%3Dx", "GET /api/v1/namespaces/ops/secrets?fieldSelector=type%3Dx%2Cmetadata.name%3Dcert"},
		{"GET", "/api/v1/namespaces/ops/secrets/cert", "GET /api/v1/namespaces/ops/secrets/cert?"},
		{"GET", "/api/v1/namespaces/other/secrets", "GET /api/v1/namespaces/other/secrets?"},
		{"PUT", "/api/v1/namespaces/ops/secrets", "PUT /api/v1/namespaces/ops/secrets?"},
		{"GET", "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", "GET /apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations?"},
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
		{"self-managed certificates keep the CRD's conversion webhook", CertOptions{Source: CertSourceSelf, MutatingConfig: MutatingConfigName}, true},
		{"cert-manager's certificates leave it to cert-manager's CA injector", CertOptions{Source: CertSourceExternal, MutatingConfig: MutatingConfigName}, false},
		{"OLM's certificates leave it to OLM", CertOptions{Source: CertSourceExternal}, false},
		{"without a named configuration there is no CA bundle to copy", CertOptions{Source: CertSourceSelf}, false},
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
