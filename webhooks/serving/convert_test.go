package serving_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/webhook/conversion"

	"github.com/sidecarset-operator/sidecarset-operator/api/install"
	appsv1alpha1 "github.com/sidecarset-operator/sidecarset-operator/api/v1alpha1"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/test/fixtures"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/serving"
)

const (
	alpha = "apps.kruise.io/v1alpha1"
	beta  = "apps.kruise.io/v1beta1"
)

func newScheme() *k8sruntime.Scheme {
	s := k8sruntime.NewScheme()
	install.Install(s)
	return s
}

// review marshals a ConversionReview as the API server sends it (its types'
// field order, an empty response).
func review(t *testing.T, reviewVersion, uid, desired string, objects [][]byte) []byte {
	t.Helper()
	raws := make([]k8sruntime.RawExtension, len(objects))
	for i, o := range objects {
		raws[i] = k8sruntime.RawExtension{Raw: o}
	}
	r := apiextensionsv1.ConversionReview{
		TypeMeta: metav1.TypeMeta{Kind: "ConversionReview", APIVersion: "apiextensions.k8s.io/" + reviewVersion},
		Request:  &apiextensionsv1.ConversionRequest{UID: types.UID("uid-" + uid), DesiredAPIVersion: desired, Objects: raws},
		Response: &apiextensionsv1.ConversionResponse{},
	}
	if objects == nil {
		r.Request.Objects = nil
	}
	out, err := json.Marshal(&r)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sidecarSets returns n SidecarSets of version as JSON, made from
// OpenKruise 1.9's objects under new names.
func sidecarSets(t *testing.T, version string, n int) [][]byte {
	t.Helper()
	var base []any
	if version == alpha {
		for _, s := range fixtures.MustList[appsv1alpha1.SidecarSet](t, fixtures.Kruise19, "sidecarsets-upgraded-v1alpha1.yaml") {
			s.APIVersion, s.Kind = alpha, "SidecarSet"
			base = append(base, s)
		}
	} else {
		for _, s := range fixtures.MustList[appsv1beta1.SidecarSet](t, fixtures.Kruise19, "sidecarsets-upgraded-v1beta1.yaml") {
			s.APIVersion, s.Kind = beta, "SidecarSet"
			base = append(base, s)
		}
	}
	out := make([][]byte, n)
	for i := range n {
		var obj map[string]any
		raw, err := json.Marshal(base[i%len(base)])
		if err == nil {
			err = json.Unmarshal(raw, &obj)
		}
		if err != nil {
			t.Fatal(err)
		}
		md := obj["metadata"].(map[string]any)
		md["name"] = fmt.Sprintf("%s-%d", md["name"], i)
		if out[i], err = json.Marshal(obj); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

type answer struct {
	code        int
	contentType string
	body        string
}

func post(h http.Handler, body []byte) answer {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/convert", bytes.NewReader(body)))
	return answer{code: rec.Code, contentType: rec.Header().Get("Content-Type"), body: rec.Body.String()}
}

// TestConverter_AnswersAsControllerRuntime sends the same reviews to the
// streaming Converter and to controller-runtime's conversion handler (the
// one served before): the answers are byte-identical, including a list of
// 5 000 SidecarSets in one review (as the API server converts a LIST) and
// the reviews whose conversion fails.
func TestConverter_AnswersAsControllerRuntime(t *testing.T) {
	t.Parallel()
	scheme := newScheme()
	old := conversion.NewWebhookHandler(scheme, conversion.NewRegistry())
	streaming := serving.NewConverter(scheme)
	alphas, betas := sidecarSets(t, alpha, 5000), sidecarSets(t, beta, 12)
	tests := []struct {
		name string
		body []byte
	}{
		{"5 000 v1alpha1 to v1beta1", review(t, "v1", "1", beta, alphas)},
		{"v1beta1 to v1alpha1", review(t, "v1", "2", alpha, betas)},
		{"a v1beta1 review", review(t, "v1beta1", "3", beta, alphas[:7])},
		{"one object", review(t, "v1", "4", beta, alphas[:1])},
		{"no objects", review(t, "v1", "5", beta, nil)},
		{"an empty objects array", []byte(`{"kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v1","request":{"uid":"6","desiredAPIVersion":"apps.kruise.io/v1beta1","objects":[]}}`)},
		{"to the same version: fails", review(t, "v1", "7", beta, betas[:2])},
		{"to an unknown version: fails", review(t, "v1", "8", "apps.kruise.io/v9", alphas[:2])},
		{"a null object: fails", review(t, "v1", "9", beta, [][]byte{[]byte("null")})},
		{"an object of unknown kind: fails", review(t, "v1", "10", beta, [][]byte{[]byte(`{"apiVersion":"apps.kruise.io/v1alpha1","kind":"Nope"}`)})},
		{"uid with special characters", review(t, "v1", `<"[0]">&`, beta, alphas[:3])},
		{"unknown fields and case-insensitive keys", []byte(`{"Kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v1","x":[1,{"y":2}],"request":{"UID":"11","extra":"z","desiredAPIVersion":"apps.kruise.io/v1beta1","objects":[` + string(alphas[0]) + `]},"response":{"uid":"","convertedObjects":null}}`)},
		{"no request: 400", []byte(`{"kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v1"}`)},
		{"a null request: 400", []byte(`{"kind":"ConversionReview","request":null}`)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			want, got := post(old, tc.body), post(streaming, tc.body)
			if want.code != got.code {
				t.Errorf("status %d, want %d", got.code, want.code)
			}
			// A review that does not read is refused with a message now
			// (before, with an empty body): only a 200's body is the same.
			if want.code == http.StatusOK && (want.body != got.body || want.contentType != got.contentType) {
				t.Errorf("answers differ (%d and %d bytes):\nwant %.600s\ngot  %.600s", len(want.body), len(got.body), want.body, got.body)
			}
		})
	}
}

// TestConverter_FailsAfterItsFirstObjects: an object that does not convert
// after others were written ends the review in failure (the API server
// reads the result, not the objects, of a failed review).
func TestConverter_FailsAfterItsFirstObjects(t *testing.T) {
	t.Parallel()
	objects := append(sidecarSets(t, alpha, 3), []byte(`{"apiVersion":"apps.kruise.io/v1alpha1","kind":"Nope"}`))
	got := post(serving.NewConverter(newScheme()), review(t, "v1", "1", beta, objects))
	var r apiextensionsv1.ConversionReview
	if err := json.Unmarshal([]byte(got.body), &r); err != nil {
		t.Fatalf("not a review: %v\n%.300s", err, got.body)
	}
	if r.Response == nil || r.Response.UID != "uid-1" || r.Response.Result.Status != metav1.StatusFailure ||
		!strings.Contains(r.Response.Result.Message, "Nope") {
		t.Errorf("response %+v, want a failure of uid-1 naming the kind", r.Response)
	}
}

// TestConverter_RefusesObjectsBeforeTheirVersion: a review whose objects
// come before desiredAPIVersion cannot stream; it is refused.
func TestConverter_RefusesObjectsBeforeTheirVersion(t *testing.T) {
	t.Parallel()
	body := `{"request":{"uid":"1","objects":[` + string(sidecarSets(t, alpha, 1)[0]) + `],"desiredAPIVersion":"apps.kruise.io/v1beta1"}}`
	got := post(serving.NewConverter(newScheme()), []byte(body))
	if got.code != http.StatusBadRequest || !strings.Contains(got.body, "desiredAPIVersion must precede") {
		t.Errorf("answer %d %q, want 400 naming the order", got.code, got.body)
	}
}

// repeatReader streams a prefix, n bytes of fill, and a suffix, without
// holding them.
type repeatReader struct {
	prefix, suffix []byte
	fill           byte
	n              int64
	read           int64
}

func (r *repeatReader) Read(p []byte) (int, error) {
	total := int64(len(r.prefix)) + r.n + int64(len(r.suffix))
	if r.read >= total {
		return 0, io.EOF
	}
	i := 0
	for i < len(p) && r.read < total {
		switch pos := r.read; {
		case pos < int64(len(r.prefix)):
			p[i] = r.prefix[pos]
		case pos < int64(len(r.prefix))+r.n:
			p[i] = r.fill
		default:
			p[i] = r.suffix[pos-int64(len(r.prefix))-r.n]
		}
		i++
		r.read++
	}
	return i, nil
}

// allocated returns the bytes allocated while fn ran.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestConverter_BoundsEachObject posts the review's attack: one 300 MB
// object (streamed). The converter stops reading past its 3 MiB bound and
// answers an error, having allocated less than 20 MB in all (controller-
// runtime's handler decoded the whole body: over 600 MB).
func TestConverter_BoundsEachObject(t *testing.T) {
	const size = 300 << 20
	for _, at := range []struct{ name, prefix, suffix string }{
		{"an object", `{"kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v1","request":{"uid":"1","desiredAPIVersion":"apps.kruise.io/v1beta1","objects":[{"x":"`, `"}]}}`},
		{"an unknown field", `{"kind":"ConversionReview","junk":"`, `"}`},
		{"a key", `{"`, `":1}`},
		{"the request's uid", `{"request":{"uid":"`, `"}}`},
	} {
		body := &repeatReader{prefix: []byte(at.prefix), suffix: []byte(at.suffix), fill: 'a', n: size}
		var rec *httptest.ResponseRecorder
		got := allocated(func() {
			rec = httptest.NewRecorder()
			serving.NewConverter(newScheme()).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/convert", body))
		})
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "larger than 3145728 bytes") {
			t.Errorf("%s: answer %d %q, want 400 naming the bound", at.name, rec.Code, rec.Body.String())
		}
		if body.read > 4<<20 {
			t.Errorf("%s: read %d bytes, want at most the bound and a buffer", at.name, body.read)
		}
		if got > 20<<20 {
			t.Errorf("%s: allocated %d MB, want < 20 MB", at.name, got>>20)
		}
		t.Logf("%s: read %d bytes, allocated %.1f MB", at.name, body.read, float64(got)/(1<<20))
	}
}

// peakWriter records the live heap every so many writes.
type peakWriter struct {
	http.ResponseWriter
	writes int
	base   uint64
	peak   uint64
}

func (w *peakWriter) Write(p []byte) (int, error) {
	w.writes++
	if w.writes%2000 == 0 {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		w.peak = max(w.peak, m.HeapAlloc-min(m.HeapAlloc, w.base))
	}
	return io.Discard.Write(p)
}

// TestConverter_StreamsALargeList converts a review of 60 000 SidecarSets
// (about 100 MB, streamed) with a live heap that stays under 20 MB above its
// start: memory is one object's, whatever the review's size.
func TestConverter_StreamsALargeList(t *testing.T) {
	objects := sidecarSets(t, alpha, 6)
	prefix := []byte(`{"kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v1","request":{"uid":"1","desiredAPIVersion":"apps.kruise.io/v1beta1","objects":[`)
	const n = 60000
	pr, pw := io.Pipe()
	size := 0
	go func() {
		_, _ = pw.Write(prefix)
		for i := range n {
			if i > 0 {
				_, _ = pw.Write([]byte{','})
			}
			o := objects[i%len(objects)]
			size += len(o) + 1
			_, _ = pw.Write(o)
		}
		_ = pw.CloseWithError(func() error { _, err := pw.Write([]byte(`]}}`)); return err }())
	}()
	conv := serving.NewConverter(newScheme())
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	w := &peakWriter{ResponseWriter: httptest.NewRecorder(), base: m.HeapAlloc}
	conv.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/convert", pr))
	if w.writes != 2*n+1 {
		t.Fatalf("%d writes, want the head, %d objects and their separators, and the end", w.writes, n)
	}
	if w.peak > 20<<20 {
		t.Errorf("live heap grew by %d MB converting %d MB, want < 20 MB", w.peak>>20, size>>20)
	}
	t.Logf("converted %d objects (%d MB): live heap at most %.1f MB above its start", n, size>>20, float64(w.peak)/(1<<20))
}

// TestConverter_OverAConnection converts through a real HTTP/1.1
// connection, as the API server calls it: its review carries a response
// after the request, which the converter reads after it has written more
// than a buffer of converted objects (an HTTP/1.1 server makes the request
// body unavailable once the response's head is sent, unless the handler
// asks for full duplex).
func TestConverter_OverAConnection(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(serving.NewConverter(newScheme()))
	defer srv.Close()
	const n = 50
	resp, err := http.Post(srv.URL, "application/json", bytes.NewReader(review(t, "v1", "1", beta, sidecarSets(t, alpha, n))))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var got apiextensionsv1.ConversionReview
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	if resp.StatusCode != http.StatusOK || got.Response == nil || got.Response.Result.Status != metav1.StatusSuccess {
		t.Fatalf("status %d, response %+v", resp.StatusCode, got.Response)
	}
	if len(got.Response.ConvertedObjects) != n {
		t.Errorf("%d objects converted, want %d", len(got.Response.ConvertedObjects), n)
	}
}
