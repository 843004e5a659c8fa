package webhooks

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sidecarset-operator/sidecarset-operator/webhooks/decide"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/names"
)

// discardWriter is a ResponseWriter that keeps the last answer's length and
// allocates nothing per answer: what the test counts is the handler's.
type discardWriter struct {
	header  http.Header
	n       int
	code    int
	patched bool
}

func (w *discardWriter) Header() http.Header { return w.header }
func (w *discardWriter) Write(b []byte) (int, error) {
	w.n += len(b)
	w.patched = w.patched || bytes.Contains(b, []byte(`"patch":`))
	return len(b), nil
}
func (w *discardWriter) WriteHeader(code int) { w.code = code }

// maxAllocsPerInjection bounds the heap allocations of one pod admission
// that injects one SidecarSet's sidecar, from the request's body to the
// written AdmissionReview (BenchmarkPodInjector_Handle's pod): allocations
// are what the webhook costs the garbage collector, which runs on the cores
// the API server uses.
const maxAllocsPerInjection = 380

// The pod webhook's allocations per admission stay under their bound.
func TestPodInjector_AllocationsPerInjection(t *testing.T) {
	handler := &PodInjector{Injector: decide.Injector{Registry: agentRegistry(t), Namespace: "kruise-system"}}
	body := admissionReviewBody(t, deploymentPod())
	req := httptest.NewRequest(http.MethodPost, names.PodInjectionPath, nil)
	req.Header.Set("Content-Type", "application/json")
	req.ContentLength = int64(len(body))
	reader := bytes.NewReader(body)
	req.Body = io.NopCloser(reader)
	w := &discardWriter{header: http.Header{}}
	allocs := testing.AllocsPerRun(200, func() {
		reader.Reset(body)
		w.n = 0
		handler.ServeHTTP(w, req)
	})
	if !w.patched || w.code != 0 && w.code != http.StatusOK {
		t.Fatalf("no patch in the answer (status %d)", w.code)
	}
	t.Logf("%.0f allocations per admission", allocs)
	if allocs > maxAllocsPerInjection {
		t.Errorf("one pod admission allocates %.0f times, more than %d", allocs, maxAllocsPerInjection)
	}
}
