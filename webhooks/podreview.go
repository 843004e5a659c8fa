package webhooks

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"sync"
	"unsafe"

	jsoniter "github.com/json-iterator/go"
	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/sidecarset-operator/sidecarset-operator/webhooks/names"
	"github.com/sidecarset-operator/sidecarset-operator/webhooks/serving"
)

// The pod webhook reads its AdmissionReview in one pass. controller-runtime's
// generic admission handler first reads the apiVersion and kind (a parse of
// the whole body), then decodes the review with the pod as raw JSON (a
// second scan), and the handler decodes the pod from it (a third). The pod
// webhook, which the API server calls for every selected pod, decodes the
// pod straight into its type instead.

// reviewJSON decodes the AdmissionReview in one pass (encoding/json scans
// a value whole before decoding it: two passes over the pod), with
// encoding/json's rules; the API types' own UnmarshalJSON still decode
// their fields (times, quantities, int-or-strings). sigs.k8s.io/json, the
// API server's decoder, is encoding/json's two passes: the pod handler's
// benchmark spends more CPU with it (docs/benchmarks.md, "The pod
// handler's decoder").
var reviewJSON = jsoniter.ConfigCompatibleWithStandardLibrary

// maxPodReviewBytes bounds a request body: the admission paths' bound (the
// API server's own limit on a request, 3 MiB, plus the review around it).
const maxPodReviewBytes = serving.MaxAdmissionReviewBytes

// podReview is the part of an admission.k8s.io/v1 AdmissionReview that the
// pod webhook reads.
type podReview struct {
	APIVersion string      `json:"apiVersion"`
	Kind       string      `json:"kind"`
	Request    *podRequest `json:"request"`
}

// podRequest is the part of an AdmissionRequest the pod webhook reads.
type podRequest struct {
	UID         types.UID             `json:"uid"`
	Operation   admissionv1.Operation `json:"operation"`
	SubResource string                `json:"subResource,omitempty"`
	Namespace   string                `json:"namespace,omitempty"`
	DryRun      *bool                 `json:"dryRun,omitempty"`
	Object      *corev1.Pod           `json:"object,omitempty"`
}

func (r *podRequest) isDryRun() bool {
	return r.DryRun != nil && *r.DryRun
}

// decodePodReview reads the request's AdmissionReview.
func decodePodReview(r *http.Request) (*podRequest, error) {
	if r.Method != http.MethodPost {
		return nil, fmt.Errorf("method %s: want POST", r.Method)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		return nil, fmt.Errorf("content type %q: want application/json", ct)
	}
	buf := bodyBuffers.Get().(*[]byte)
	body, err := readBody(r, *buf)
	if err != nil {
		return nil, fmt.Errorf("reading the AdmissionReview: %w", err)
	}
	var review podReview
	err = reviewJSON.Unmarshal(body, &review)
	// The decoded review holds copies of what it read (strings, raw
	// objects, byte slices), so the body's buffer serves the next request.
	if cap(body) <= maxPooledBodyBytes {
		*buf = body[:0]
		bodyBuffers.Put(buf)
	}
	if err != nil {
		return nil, fmt.Errorf("decoding the AdmissionReview: %w", err)
	}
	if review.APIVersion != admissionv1.SchemeGroupVersion.String() || review.Kind != "AdmissionReview" {
		return nil, fmt.Errorf("%s %s: want an %s AdmissionReview", review.APIVersion, review.Kind, admissionv1.SchemeGroupVersion)
	}
	if review.Request == nil {
		return nil, errors.New("the AdmissionReview has no request")
	}
	return review.Request, nil
}

// errPodReviewTooLarge refuses a body over maxPodReviewBytes, before it is
// decoded.
var errPodReviewTooLarge = fmt.Errorf("the AdmissionReview is larger than %d bytes", maxPodReviewBytes)

// bodyBuffers are the buffers request bodies are read into, kept between
// requests up to maxPooledBodyBytes each: a pod's review is 5 to 30 KiB.
var bodyBuffers = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledBodyBytes = 64 << 10

// readBody reads the request's body, at most maxPodReviewBytes, in one
// buffer when the request says its length (the API server does), without
// growing it: buf when it is large enough, else a new one. A longer body is
// an error.
func readBody(r *http.Request, buf []byte) ([]byte, error) {
	body, err := readBodyUpTo(r, maxPodReviewBytes+1, buf)
	if err == nil && len(body) > maxPodReviewBytes {
		return nil, errPodReviewTooLarge
	}
	return body, err
}

func readBodyUpTo(r *http.Request, maxBytes int64, buf []byte) ([]byte, error) {
	limited := io.LimitReader(r.Body, maxBytes)
	if r.ContentLength <= 0 || r.ContentLength > maxBytes {
		return io.ReadAll(limited)
	}
	body := buf[:0]
	if int64(cap(body)) < r.ContentLength+1 {
		body = make([]byte, 0, r.ContentLength+1)
	}
	body = body[:r.ContentLength]
	if _, err := io.ReadFull(limited, body); err != nil {
		return nil, err
	}
	// net/http's server ends the body at its length; a body longer than it
	// said (another caller's) is read whole, as without the length. The
	// probe reads into the buffer's spare byte: nothing more to allocate.
	n, err := limited.Read(body[len(body):cap(body)])
	if n == 0 && errors.Is(err, io.EOF) {
		return body, nil
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	rest, err := io.ReadAll(limited)
	return append(body[:len(body)+n], rest...), err
}

// writePodReview answers with the response in an AdmissionReview, the
// patch encoded by appendPatch. It writes the review as encoding/json
// would, byte for byte, from two pooled buffers: the patch's JSON, and the
// review with the patch's base64 appended in place (encoding/json and
// jsoniter both allocate the base64 text apart, then copy it).
func writePodReview(ctx context.Context, w http.ResponseWriter, req *podRequest, resp admission.Response) {
	var uid types.UID
	if req != nil {
		uid = req.UID
	}
	patchStream := reviewJSON.BorrowStream(nil)
	defer reviewJSON.ReturnStream(patchStream)
	var patch []byte
	if len(resp.Patches) > 0 {
		if err := appendPatch(patchStream, resp.Patches); err != nil {
			resp = admission.Errored(http.StatusInternalServerError, err)
		} else {
			patch, resp.Patches = patchStream.Buffer(), nil
			resp.PatchType = ptr.To(admissionv1.PatchTypeJSONPatch)
		}
	}
	// Sets the UID and the status code; with no Patches left, encodes nothing.
	if err := resp.Complete(admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{UID: uid}}); err != nil {
		resp, patch = admission.Errored(http.StatusInternalServerError, err), nil
		resp.UID = uid
	}
	r := &resp.AdmissionResponse
	if patch == nil {
		patch = r.Patch // a response built with its patch already encoded
	}
	review := reviewOut{Kind: "AdmissionReview", APIVersion: admissionv1.SchemeGroupVersion.String(), Response: &responseOut{
		UID: r.UID, Allowed: r.Allowed, Result: r.Result, Patch: base64JSON(patch), PatchType: r.PatchType,
		AuditAnnotations: r.AuditAnnotations, Warnings: r.Warnings,
	}}
	stream := reviewJSON.BorrowStream(nil)
	defer reviewJSON.ReturnStream(stream)
	stream.WriteVal(&review)
	stream.WriteRaw("\n")
	w.Header().Set("Content-Type", "application/json")
	err := stream.Error
	if err == nil {
		_, err = w.Write(stream.Buffer())
	}
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Writing the admission response", "webhook", names.PodInjectionPath, "UID", uid)
	}
}

// reviewOut is an admission.k8s.io/v1 AdmissionReview with its response,
// as writePodReview writes it.
type reviewOut struct {
	Kind       string       `json:"kind"`
	APIVersion string       `json:"apiVersion"`
	Response   *responseOut `json:"response"`
}

// responseOut is admissionv1.AdmissionResponse, field for field and in its
// order, its patch written in place (base64JSON).
type responseOut struct {
	UID              types.UID              `json:"uid"`
	Allowed          bool                   `json:"allowed"`
	Result           *metav1.Status         `json:"status,omitempty"`
	Patch            base64JSON             `json:"patch,omitempty"`
	PatchType        *admissionv1.PatchType `json:"patchType,omitempty"`
	AuditAnnotations map[string]string      `json:"auditAnnotations,omitempty"`
	Warnings         []string               `json:"warnings,omitempty"`
}

// base64JSON is raw bytes that the review's encoder writes as a base64
// JSON string straight into its buffer.
type base64JSON []byte

func init() {
	jsoniter.RegisterTypeEncoderFunc(reflect.TypeFor[base64JSON]().String(),
		func(ptr unsafe.Pointer, stream *jsoniter.Stream) {
			buf := append(stream.Buffer(), '"')
			buf = base64.StdEncoding.AppendEncode(buf, *(*base64JSON)(ptr))
			stream.SetBuffer(append(buf, '"'))
		},
		func(ptr unsafe.Pointer) bool { return len(*(*base64JSON)(ptr)) == 0 })
}

// encodePatch writes a JSON patch as encoding/json writes it (appendPatch).
func encodePatch(ops []jsonpatch.Operation) ([]byte, error) {
	stream := reviewJSON.BorrowStream(nil)
	defer reviewJSON.ReturnStream(stream)
	if err := appendPatch(stream, ops); err != nil {
		return nil, err
	}
	return bytes.Clone(stream.Buffer()), nil
}

// appendPatch writes a JSON patch as encoding/json writes it through
// jsonpatch.Operation's MarshalJSON (a value always for add and replace,
// never a nil one otherwise), in one pass: encoding/json marshals each
// operation on its own and then scans the result again to compact it.
func appendPatch(stream *jsoniter.Stream, ops []jsonpatch.Operation) error {
	stream.WriteArrayStart()
	for i := range ops {
		op := &ops[i]
		if i > 0 {
			stream.WriteMore()
		}
		stream.WriteObjectStart()
		stream.WriteObjectField("op")
		stream.WriteStringWithHTMLEscaped(op.Operation)
		stream.WriteMore()
		stream.WriteObjectField("path")
		stream.WriteStringWithHTMLEscaped(op.Path)
		if op.Value != nil || op.Operation == "add" || op.Operation == "replace" {
			stream.WriteMore()
			stream.WriteObjectField("value")
			stream.WriteVal(op.Value)
		}
		stream.WriteObjectEnd()
	}
	stream.WriteArrayEnd()
	if stream.Error != nil {
		return fmt.Errorf("encoding the patch: %w", stream.Error)
	}
	return nil
}
