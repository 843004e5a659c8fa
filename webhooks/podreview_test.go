package webhooks

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/internal/candidate"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/decide"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/names"
)

// serve sends a body to the pod webhook and decodes its AdmissionReview.
func serve(t *testing.T, h http.Handler, method, contentType string, body []byte) admissionv1.AdmissionResponse {
	t.Helper()
	req := httptest.NewRequest(method, names.PodInjectionPath, bytes.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &review); err != nil {
		t.Fatalf("the answer is not an AdmissionReview: %v\n%s", err, rec.Body.String())
	}
	if review.APIVersion != "admission.k8s.io/v1" || review.Kind != "AdmissionReview" || review.Response == nil {
		t.Fatalf("answer %+v: want an admission.k8s.io/v1 AdmissionReview with a response", review)
	}
	return *review.Response
}

// agentRegistry holds one SidecarSet, agent, selecting app=web.
func agentRegistry(t *testing.T) *candidate.Registry {
	t.Helper()
	s := &appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "agent"}}
	s.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	s.Spec.Containers = []appsv1beta1.SidecarContainer{{Container: corev1.Container{Name: "agent", Image: "agent:1.0"}}}
	registry, err := candidate.New(s)
	if err != nil {
		t.Fatal(err)
	}
	return registry
}

func TestPodInjector_ServeHTTP_InjectsFromOneDecode(t *testing.T) {
	t.Parallel()
	registry := agentRegistry(t)
	h := &PodInjector{Injector: decide.Injector{Registry: registry, Namespace: "kruise-system"}}
	resp := serve(t, h, http.MethodPost, "application/json", admissionReviewBody(t, deploymentPod()))
	if !resp.Allowed || resp.UID != "4b9e3f0c-1d2a-4e5f-9a8b-7c6d5e4f3a2b" || resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
		t.Fatalf("response %+v: want allowed, the request's UID and a JSON patch", resp)
	}
	var ops []map[string]any
	if err := json.Unmarshal(resp.Patch, &ops); err != nil {
		t.Fatalf("patch %q: %v", base64.StdEncoding.EncodeToString(resp.Patch), err)
	}
	found := false
	for _, op := range ops {
		if op["path"] == "/spec/containers/0" && op["op"] == "add" {
			found = op["value"].(map[string]any)["name"] == "agent"
		}
	}
	if !found {
		t.Fatalf("the patch does not add the sidecar first: %s", resp.Patch)
	}
}

func TestPodInjector_ServeHTTP_RefusesWhatIsNotAPodReview(t *testing.T) {
	t.Parallel()
	h := &PodInjector{Injector: decide.Injector{Registry: candidate.NewRegistry()}}
	good := admissionReviewBody(t, deploymentPod())
	tests := []struct {
		name, method, contentType string
		body                      []byte
		want                      string
	}{
		{"GET", http.MethodGet, "application/json", good, "method GET: want POST"},
		{"not JSON", http.MethodPost, "application/yaml", good, `content type "application/yaml": want application/json`},
		{"malformed", http.MethodPost, "application/json", []byte(`{"apiVersion":`), "decoding the AdmissionReview"},
		{"v1beta1", http.MethodPost, "application/json", bytes.Replace(good, []byte(`admission.k8s.io/v1"`), []byte(`admission.k8s.io/v1beta1"`), 1),
			"want an admission.k8s.io/v1 AdmissionReview"},
		{"no request", http.MethodPost, "application/json", []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`),
			"the AdmissionReview has no request"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			resp := serve(t, h, tc.method, tc.contentType, tc.body)
			if resp.Allowed || resp.Result == nil || resp.Result.Code != http.StatusBadRequest || !strings.Contains(resp.Result.Message, tc.want) {
				t.Fatalf("response %+v: want a 400 refusal saying %q", resp, tc.want)
			}
		})
	}
}

// The one-pass decoder reads a pod exactly as encoding/json does, the API
// types' own decoders included (times, quantities, int-or-strings, raw
// managed fields).
func TestDecodePodReview_AsEncodingJSON(t *testing.T) {
	t.Parallel()
	pod := deploymentPod()
	pod.CreationTimestamp = metav1.Now().Rfc3339Copy()
	pod.Spec.Containers[0].LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
		Path: "/healthz", Port: intstr.FromString("http")}}}
	body := admissionReviewBody(t, pod)
	req := httptest.NewRequest(http.MethodPost, names.PodInjectionPath, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	got, err := decodePodReview(req)
	if err != nil {
		t.Fatal(err)
	}
	var want podReview
	if err := json.Unmarshal(body, &want); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want.Request, got); diff != "" {
		t.Errorf("decoded request (-encoding/json +ours):\n%s", diff)
	}
	if !apiequality.Semantic.DeepEqual(got.Object, pod) {
		t.Errorf("the decoded pod differs from the one sent")
	}
}

// The one-pass patch encoder writes what encoding/json writes through
// jsonpatch.Operation's MarshalJSON, byte for byte: the API types' own
// encoders (quantities, int-or-strings), HTML-escaped strings, a null value
// for an add or replace without one, no value for a remove.
func TestEncodePatch_AsEncodingJSON(t *testing.T) {
	t.Parallel()
	s := &appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "agent"}}
	s.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	s.Spec.Containers = []appsv1beta1.SidecarContainer{{Container: corev1.Container{Name: "agent", Image: "agent:1.0",
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}},
		Ports:     []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
		LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: "/healthz?a=<b>&c", Port: intstr.FromString("http")}}}}}}
	s.Spec.Volumes = []corev1.Volume{{Name: "logs", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	registry, err := candidate.New(s)
	if err != nil {
		t.Fatal(err)
	}
	h := &decide.Injector{Registry: registry, Namespace: "kruise-system"}
	d, err := h.Decide(context.Background(), deploymentPod(), "default")
	if err != nil || len(d.Output.Patch) == 0 {
		t.Fatalf("Decide: %v, %d ops: want an injection", err, len(d.Output.Patch))
	}
	ops := append(slices.Clone(d.Output.Patch),
		jsonpatch.NewOperation("add", "/metadata/annotations/a~1<b>&c", "x\u2028y\"z"),
		jsonpatch.NewOperation("add", "/metadata/labels", map[string]string{"b": "2", "a": "<1>"}),
		jsonpatch.NewOperation("replace", "/spec/x", nil),
		jsonpatch.NewOperation("remove", "/spec/imagePullSecrets/1", nil),
		jsonpatch.NewOperation("add", "/spec/y", ""))
	got, err := encodePatch(ops)
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(ops)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("patch:\n ours          %s\n encoding/json %s", got, want)
	}
}

// The answer is the AdmissionReview encoding/json would write, byte for
// byte (the patch in base64, the status, the warnings).
func TestPodInjector_ServeHTTP_AnswersAsEncodingJSON(t *testing.T) {
	t.Parallel()
	registry := agentRegistry(t)
	for name, h := range map[string]*PodInjector{
		"injected":  {Injector: decide.Injector{Registry: registry, Namespace: "kruise-system"}},
		"unchanged": {Injector: decide.Injector{Registry: candidate.NewRegistry(), Namespace: "kruise-system"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequest(http.MethodPost, names.PodInjectionPath, bytes.NewReader(admissionReviewBody(t, deploymentPod())))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			var review admissionv1.AdmissionReview
			if err := json.Unmarshal(rec.Body.Bytes(), &review); err != nil {
				t.Fatal(err)
			}
			want, err := json.Marshal(review)
			if err != nil {
				t.Fatal(err)
			}
			if got := bytes.TrimSuffix(rec.Body.Bytes(), []byte("\n")); !bytes.Equal(got, want) {
				t.Errorf("answer:\n ours          %s\n encoding/json %s", got, want)
			}
			if (name == "injected") != (review.Response.PatchType != nil && len(review.Response.Patch) > 0) {
				t.Errorf("patch type %v, patch %q", review.Response.PatchType, review.Response.Patch)
			}
		})
	}
}

// The body is read whole whether or not the request says its length, and a
// body shorter than it said is an error.
func TestReadBody(t *testing.T) {
	t.Parallel()
	body := admissionReviewBody(t, deploymentPod())
	for name, length := range map[string]int64{"length said": int64(len(body)), "length unknown": -1, "said shorter": 10} {
		req := httptest.NewRequest(http.MethodPost, names.PodInjectionPath, bytes.NewReader(body))
		req.ContentLength = length
		got, err := readBody(req, nil)
		if err != nil || !bytes.Equal(got, body) {
			t.Errorf("%s: read %d bytes, %v: want the %d bytes sent", name, len(got), err, len(body))
		}
	}
	// Into a buffer large enough: the body is read into it, whatever it held.
	buf := bytes.Repeat([]byte("x"), len(body)+1)
	req := httptest.NewRequest(http.MethodPost, names.PodInjectionPath, bytes.NewReader(body))
	if got, err := readBody(req, buf[:3]); err != nil || !bytes.Equal(got, body) || &got[0] != &buf[0] {
		t.Errorf("into a buffer: read %d bytes, %v: want the %d bytes sent, in the buffer given", len(got), err, len(body))
	}
	req = httptest.NewRequest(http.MethodPost, names.PodInjectionPath, bytes.NewReader(body))
	req.ContentLength = int64(len(body)) + 1
	if _, err := readBody(req, nil); err == nil {
		t.Errorf("a body shorter than its length was read without an error")
	}
}

// The decoded review holds nothing of the body it was read from: the
// body's buffer serves the next request.
func TestDecodePodReview_KeepsNothingOfTheBody(t *testing.T) {
	t.Parallel()
	pod := deploymentPod()
	pod.Spec.Containers[0].Args = []string{"--mode=\\u00e9t\u00e9"}
	body := admissionReviewBody(t, pod)
	var review podReview
	if err := reviewJSON.Unmarshal(body, &review); err != nil {
		t.Fatal(err)
	}
	want := review.Request.Object.DeepCopy()
	for i := range body {
		body[i] = 'x'
	}
	if diff := cmp.Diff(want, review.Request.Object); diff != "" {
		t.Errorf("the pod changed with the body's buffer (-before +after):\n%s", diff)
	}
}
