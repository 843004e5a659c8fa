package webhookserver

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/sidecarset-operator/sidecarset-operator/api/install"
	"github.com/sidecarset-operator/sidecarset-operator/test/pki"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/names"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/serving"
)

// servingManager gives the Server one webhook server, on the guarded mux
// main gives it.
type servingManager struct {
	*startManager
	server webhook.Server
}

func (m *servingManager) GetWebhookServer() webhook.Server { return m.server }

// startServing starts the webhook Server with guard and returns the mux its
// paths are registered on, once every path is.
func startServing(t *testing.T, guard *serving.Guard) http.Handler {
	t.Helper()
	scheme := k8sruntime.NewScheme()
	install.Install(scheme)
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(metav1.AddMetaToScheme(scheme))
	mux := serving.NewMux()
	m := &servingManager{
		startManager: &startManager{scheme: scheme, cache: &recordingCache{FakeInformers: &informertest.FakeInformers{Scheme: scheme}}},
		server:       webhook.NewServer(webhook.Options{WebhookMux: mux}),
	}
	certReady := make(chan struct{})
	close(certReady)
	s := &Server{mgr: m, certReady: certReady, opts: Options{Registry: emptyRegistry(t)}}
	s.UseGuard(guard)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for !s.started.Load() {
		if time.Now().After(deadline) {
			t.Fatal("the webhook Server did not register its paths in 10 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return mux
}

// servedPaths are every path the Server registers.
var servedPaths = []string{names.ConversionPath, names.PodInjectionPath, names.SidecarSetDefaultPath, names.SidecarSetValidatePath,
	names.LegacySidecarSetDefaultPath, names.LegacySidecarSetValidatePath}

// endless streams a JSON string's opening and then n bytes of 'a', counting
// what was read.
type endless struct {
	prefix string
	n      int64
	read   int64
}

func (e *endless) Read(p []byte) (int, error) {
	if e.read >= e.n {
		return 0, io.EOF
	}
	i := 0
	for ; i < len(p) && e.read < e.n; i++ {
		if e.read < int64(len(e.prefix)) {
			p[i] = e.prefix[e.read]
		} else {
			p[i] = 'a'
		}
		e.read++
	}
	return i, nil
}

// TestServer_BoundsEveryPath posts 300 MB (streamed, no declared length)
// to every path the Server registers, and to an unknown one: each answers an
// error having read at most its bound (7 MiB for an admission review, 3 MiB
// for one object of a ConversionReview, nothing for an unknown path) and
// allocated under 20 MB.
func TestServer_BoundsEveryPath(t *testing.T) {
	guard, err := serving.NewGuard(serving.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mux := startServing(t, guard)
	const size = 300 << 20
	prefixes := map[string]string{
		names.ConversionPath: `{"kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v1","request":{"uid":"1","desiredAPIVersion":"apps.kruise.io/v1beta1","objects":[{"x":"`,
	}
	for _, path := range append(servedPaths, "/unknown") {
		prefix, ok := prefixes[path]
		if !ok {
			prefix = `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"`
		}
		body := &endless{prefix: prefix, n: size}
		rec := httptest.NewRecorder()
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		req := httptest.NewRequest(http.MethodPost, path, body)
		req.Header.Set("Content-Type", "application/json")
		mux.ServeHTTP(rec, req)
		runtime.ReadMemStats(&after)
		allocated := after.TotalAlloc - before.TotalAlloc
		answer := rec.Body.String()
		failed := rec.Code >= 400 || strings.Contains(answer, `"allowed":false`)
		if !failed {
			t.Errorf("%s: answered %d %.200q, want an error", path, rec.Code, answer)
		}
		bound := int64(serving.MaxAdmissionReviewBytes)
		switch path {
		case names.ConversionPath:
			bound = serving.MaxConvertedObjectBytes
		case "/unknown":
			bound = 0
		}
		if body.read > bound+64<<10 {
			t.Errorf("%s: read %d bytes, want at most %d and a buffer", path, body.read, bound)
		}
		if allocated > 20<<20 {
			t.Errorf("%s: allocated %.1f MB, want < 20 MB", path, float64(allocated)/(1<<20))
		}
		t.Logf("%s: %d, read %d bytes, allocated %.1f MB", path, rec.Code, body.read, float64(allocated)/(1<<20))
	}
}

// TestServer_AuthenticatesEveryAdmissionPath: with a client CA, every
// admission path the Server registers refuses a request without a client
// certificate (401, before its handler: no injection, no SubjectAccessReview),
// and the conversion path still converts.
func TestServer_AuthenticatesEveryAdmissionPath(t *testing.T) {
	t.Parallel()
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	// Any CA: the requests here present no certificate.
	if err := os.WriteFile(caFile, selfSignedCA(t), 0o600); err != nil {
		t.Fatal(err)
	}
	guard, err := serving.NewGuard(serving.Options{ClientCAFile: caFile})
	if err != nil {
		t.Fatal(err)
	}
	mux := startServing(t, guard)
	forged := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"1","operation":"CREATE","namespace":"payments",` +
		`"object":{"metadata":{"namespace":"payments","labels":{"app":"web"}},"spec":{"containers":[{"name":"x","image":"x"}]}}}}`
	for _, path := range servedPaths {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(forged))
		req.Header.Set("Content-Type", "application/json")
		mux.ServeHTTP(rec, req)
		if path == names.ConversionPath {
			if rec.Code != http.StatusOK {
				t.Errorf("%s: answered %d %q, want a conversion answer", path, rec.Code, rec.Body.String())
			}
			continue
		}
		if rec.Code != http.StatusUnauthorized || !strings.Contains(rec.Body.String(), "present its admission client certificate") {
			t.Errorf("%s: answered %d %q, want 401 asking for the client certificate", path, rec.Code, rec.Body.String())
		}
	}
}

// selfSignedCA returns a CA certificate, PEM-encoded.
func selfSignedCA(t *testing.T) []byte {
	t.Helper()
	ca, err := pki.NewCA("test-client-ca")
	if err != nil {
		t.Fatal(err)
	}
	return ca.CertPEM()
}
