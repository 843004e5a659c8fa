package serving_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sidecarset-operator/sidecarset-operator/test/pki"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/serving"
)

// testCA is a CA of the test.
type testCA struct{ *pki.CA }

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	ca, err := pki.NewCA(name)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{ca}
}

func (ca *testCA) issue(t *testing.T, cn string, usage x509.ExtKeyUsage) tls.Certificate {
	t.Helper()
	c, err := ca.Issue(cn, usage)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// authServer serves an admission route and the conversion route through a
// Guard with a client CA, over TLS; it counts the requests that reached a
// handler.
type authServer struct {
	url      string
	serverCA *x509.CertPool
	reached  atomic.Int32
}

func startAuthServer(t *testing.T, caFile string, names ...string) *authServer {
	t.Helper()
	guard, err := serving.NewGuard(serving.Options{ClientCAFile: caFile, ClientNames: names})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	go func() { _ = guard.Start(ctx) }()
	s := &authServer{}
	handler := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.reached.Add(1)
		_, _ = io.WriteString(w, "served")
	})
	mux := serving.NewMux()
	mux.Handle("/mutate-pod", guard.Wrap(serving.Admission, handler))
	mux.Handle("/convert", guard.Wrap(serving.Conversion, handler))
	serverCA := newTestCA(t, "serving-ca")
	srv := httptest.NewUnstartedServer(mux)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{serverCA.issue(t, "localhost", x509.ExtKeyUsageServerAuth)}}
	guard.ConfigureTLS(srv.TLS)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	s.url = srv.URL
	s.serverCA = x509.NewCertPool()
	s.serverCA.AddCert(serverCA.Cert)
	return s
}

// post sends a small body to path, presenting the client certificate
// given (whatever CAs the server names, as an attacker would).
func (s *authServer) post(path string, certs ...tls.Certificate) (int, string, error) {
	cfg := &tls.Config{RootCAs: s.serverCA}
	if len(certs) > 0 {
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &certs[0], nil }
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
	defer client.CloseIdleConnections()
	resp, err := client.Post(s.url+path, "application/json", strings.NewReader("{}"))
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), nil
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestGuard_AuthenticatesTheAdmissionPaths: with a client CA, an admission
// path serves only a certificate that CA signed for an accepted name; no
// certificate gets 401 and a wrong name 403, before the handler runs; a
// certificate of another CA fails the handshake. The conversion path serves
// without a certificate (the API server presents none to it).
func TestGuard_AuthenticatesTheAdmissionPaths(t *testing.T) {
	t.Parallel()
	clientCA, otherCA := newTestCA(t, "client-ca"), newTestCA(t, "other-ca")
	caFile := filepath.Join(t.TempDir(), "client-ca.crt")
	writeFile(t, caFile, clientCA.CertPEM())
	s := startAuthServer(t, caFile, "kube-apiserver-webhook-client")

	good := clientCA.issue(t, "kube-apiserver-webhook-client", x509.ExtKeyUsageClientAuth)
	tests := []struct {
		name       string
		path       string
		certs      []tls.Certificate
		wantCode   int
		wantBody   string
		handshake  bool // the TLS handshake fails
		wantServed bool
	}{
		{name: "no certificate", path: "/mutate-pod", wantCode: http.StatusUnauthorized, wantBody: "present its admission client certificate"},
		{name: "a wrong name", path: "/mutate-pod", certs: []tls.Certificate{clientCA.issue(t, "system:anonymous", x509.ExtKeyUsageClientAuth)},
			wantCode: http.StatusForbidden, wantBody: `"system:anonymous" is not one the webhook accepts`},
		{name: "another CA", path: "/mutate-pod", certs: []tls.Certificate{otherCA.issue(t, "kube-apiserver-webhook-client", x509.ExtKeyUsageClientAuth)}, handshake: true},
		{name: "a server certificate of the CA", path: "/mutate-pod", certs: []tls.Certificate{clientCA.issue(t, "kube-apiserver-webhook-client", x509.ExtKeyUsageServerAuth)}, handshake: true},
		{name: "the API server's certificate", path: "/mutate-pod", certs: []tls.Certificate{good}, wantCode: http.StatusOK, wantBody: "served", wantServed: true},
		{name: "conversion without a certificate", path: "/convert", wantCode: http.StatusOK, wantBody: "served", wantServed: true},
		{name: "an unknown path", path: "/debug", certs: []tls.Certificate{good}, wantCode: http.StatusNotFound, wantBody: "no webhook at /debug"},
	}
	for _, tc := range tests {
		before := s.reached.Load()
		code, body, err := s.post(tc.path, tc.certs...)
		served := s.reached.Load() != before
		switch {
		case tc.handshake:
			if err == nil {
				t.Errorf("%s: answered %d %q, want the handshake refused", tc.name, code, body)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case code != tc.wantCode || !strings.Contains(body, tc.wantBody):
			t.Errorf("%s: answered %d %q, want %d %q", tc.name, code, body, tc.wantCode, tc.wantBody)
		}
		if served != tc.wantServed {
			t.Errorf("%s: the handler ran: %v, want %v", tc.name, served, tc.wantServed)
		}
	}
}

// TestGuard_ReloadsTheClientCA: a new CA written to the file is used for
// the next connections, without a restart.
func TestGuard_ReloadsTheClientCA(t *testing.T) {
	t.Parallel()
	first, second := newTestCA(t, "first"), newTestCA(t, "second")
	caFile := filepath.Join(t.TempDir(), "client-ca.crt")
	writeFile(t, caFile, first.CertPEM())
	s := startAuthServer(t, caFile)
	if code, _, err := s.post("/mutate-pod", first.issue(t, "apiserver", x509.ExtKeyUsageClientAuth)); err != nil || code != http.StatusOK {
		t.Fatalf("a certificate of the first CA: %d %v, want served", code, err)
	}
	writeFile(t, caFile+".new", second.CertPEM())
	if err := os.Rename(caFile+".new", caFile); err != nil {
		t.Fatal(err)
	}
	cert := second.issue(t, "apiserver", x509.ExtKeyUsageClientAuth)
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, _, err := s.post("/mutate-pod", cert)
		if err == nil && code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a certificate of the new CA is still refused 30 s after the file changed: %d %v", code, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, _, err := s.post("/mutate-pod", first.issue(t, "apiserver", x509.ExtKeyUsageClientAuth)); err == nil {
		t.Error("a certificate of the replaced CA is still accepted")
	}
}

// TestNewGuard_NamesNeedACA: accepted names without a CA would authenticate
// nothing; it is an error, not a silent open server.
func TestNewGuard_NamesNeedACA(t *testing.T) {
	t.Parallel()
	if _, err := serving.NewGuard(serving.Options{ClientNames: []string{"x"}}); err == nil {
		t.Error("names without a client CA: no error")
	}
	g, err := serving.NewGuard(serving.Options{})
	if err != nil || g.Authenticates() {
		t.Errorf("no client CA: %v, authenticates %v; want no error and no authentication", err, g.Authenticates())
	}
}
