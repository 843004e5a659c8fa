package serving

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/conversion"
	webhookconversion "sigs.k8s.io/controller-runtime/pkg/webhook/conversion"
	conversionmetrics "sigs.k8s.io/controller-runtime/pkg/webhook/conversion/metrics"
)

// MaxConvertedObjectBytes bounds one object of a ConversionReview, as JSON.
// The API server sends the objects it converts: one it was given in a
// request, whose body it refuses over 3 MiB, or one it stored, which etcd
// refuses over 1.5 MiB (its default --max-request-bytes). The review as a
// whole has no bound: the API server converts a LIST in one review, every
// item at once, so its size grows with the number of SidecarSets (etcd's
// database, 2 GiB by default, is the only limit); the converter holds one
// object at a time whatever the total.
const MaxConvertedObjectBytes = 3 << 20

// Converter serves the CRD conversion webhook as controller-runtime's
// conversion handler does (conversion.NewWebhookHandler with an empty
// registry: the Hub and Convertible implementations convert), with the same
// response for the same review, but reading the review as a stream: each
// object is decoded, converted and written out before the next is read, so
// that memory is one object's whatever the review's size, and an object over
// MaxObjectBytes ends the request (the rest is not read).
//
// It needs the review's fields in the order the API server writes them:
// kind and apiVersion, then request with uid and desiredAPIVersion before
// objects. A review whose objects come first is refused (400).
type Converter struct {
	scheme  *runtime.Scheme
	decoder *webhookconversion.Decoder
	// MaxObjectBytes bounds one object (MaxConvertedObjectBytes by default).
	MaxObjectBytes int64
}

// NewConverter returns a Converter for the types of scheme.
func NewConverter(scheme *runtime.Scheme) *Converter {
	return &Converter{scheme: scheme, decoder: webhookconversion.NewDecoder(scheme), MaxObjectBytes: MaxConvertedObjectBytes}
}

var _ http.Handler = (*Converter)(nil)

// errTooLarge ends the read of a value over its budget.
var errTooLarge = errors.New("too large")

// budgetReader reads at most limit bytes in all; the converter moves the
// limit forward before each value it decodes, so that the decoder buffers at
// most one value (and the bytes after it it read ahead).
type budgetReader struct {
	r           io.Reader
	read, limit int64
}

func (b *budgetReader) Read(p []byte) (int, error) {
	if b.read >= b.limit {
		return 0, errTooLarge
	}
	if int64(len(p)) > b.limit-b.read {
		p = p[:b.limit-b.read]
	}
	n, err := b.r.Read(p)
	b.read += int64(n)
	return n, err
}

// reviewStream is one ConversionReview being read and answered.
type reviewStream struct {
	c   *Converter
	dec *json.Decoder
	in  *budgetReader
	w   http.ResponseWriter

	typeMeta  metav1.TypeMeta
	uid       types.UID
	desired   string
	seenReq   bool
	nilReq    bool
	committed bool // the response's head and at least one object are written
	suffix    []byte
	converted int
	raw       json.RawMessage
}

// ServeHTTP converts the review's objects one by one.
func (c *Converter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The converted objects are written while the review is still read: an
	// HTTP/1.1 server makes the request body unavailable once the
	// response's head is sent unless the handler asks for full duplex
	// (HTTP/2 always is; there the call returns an error, ignored).
	_ = http.NewResponseController(w).EnableFullDuplex()
	in := &budgetReader{r: r.Body}
	s := &reviewStream{c: c, in: in, dec: json.NewDecoder(in), w: w}
	err := s.run(r)
	if err == nil {
		return
	}
	log := ctrl.LoggerFrom(r.Context()).WithName("conversion-webhook")
	var conv conversionError
	switch {
	case s.committed:
		// The status line and objects are sent: the review ends in failure.
		log.Error(err, "Conversion failed after its first objects", "request", s.uid, "converted", s.converted)
		s.fail(err)
	case errors.As(err, &conv):
		// As controller-runtime's handler answers a failed conversion.
		log.Error(err, "failed to convert", "request", s.uid)
		s.writeErrored(conv.err)
	default:
		log.Error(err, "failed to read conversion request")
		http.Error(w, err.Error(), http.StatusBadRequest)
	}
}

// conversionError is an object that did not convert (as opposed to a
// review that did not read).
type conversionError struct{ err error }

func (e conversionError) Error() string { return e.err.Error() }
func (e conversionError) Unwrap() error { return e.err }

// budget lets the decoder read the next value, of at most n bytes.
func (s *reviewStream) budget(n int64) {
	s.in.limit = s.dec.InputOffset() + n
}

// readErr names what was too large.
func (s *reviewStream) readErr(what string, err error) error {
	if errors.Is(err, errTooLarge) {
		return fmt.Errorf("%s is larger than %d bytes", what, s.c.MaxObjectBytes)
	}
	return fmt.Errorf("reading %s: %w", what, err)
}

// token reads a delimiter, key or literal of at most MaxObjectBytes.
func (s *reviewStream) token(what string) (json.Token, error) {
	s.budget(s.c.MaxObjectBytes)
	t, err := s.dec.Token()
	if err != nil {
		return nil, s.readErr(what, err)
	}
	return t, nil
}

// value decodes one value of at most MaxObjectBytes into v.
func (s *reviewStream) value(what string, v any) error {
	s.budget(s.c.MaxObjectBytes)
	if err := s.dec.Decode(v); err != nil {
		return s.readErr(what, err)
	}
	return nil
}

func (s *reviewStream) expectDelim(what string, want json.Delim) (bool, error) {
	t, err := s.token(what)
	if err != nil {
		return false, err
	}
	if t == nil {
		return false, nil
	}
	if d, ok := t.(json.Delim); !ok || d != want {
		return false, fmt.Errorf("%s: want %q, got %v", what, want, t)
	}
	return true, nil
}

// run reads the review and answers it.
func (s *reviewStream) run(r *http.Request) error {
	if _, err := s.expectDelim("the ConversionReview", '{'); err != nil {
		return err
	}
	for s.dec.More() {
		key, err := s.key()
		if err != nil {
			return err
		}
		switch {
		case strings.EqualFold(key, "kind"):
			err = s.header("kind", &s.typeMeta.Kind)
		case strings.EqualFold(key, "apiVersion"):
			err = s.header("apiVersion", &s.typeMeta.APIVersion)
		case strings.EqualFold(key, "request"):
			err = s.request(r)
		default:
			// response, and unknown fields: skipped, bounded.
			err = s.value("the review's "+key, &s.raw)
		}
		if err != nil {
			return err
		}
	}
	if _, err := s.token("the ConversionReview"); err != nil {
		return err
	}
	if !s.seenReq || s.nilReq {
		return errors.New("conversion request is nil")
	}
	return s.finish()
}

func (s *reviewStream) key() (string, error) {
	t, err := s.token("a key")
	if err != nil {
		return "", err
	}
	key, ok := t.(string)
	if !ok {
		return "", fmt.Errorf("want a key, got %v", t)
	}
	return key, nil
}

// header reads a field that the response's head repeats: it must come
// before the first object.
func (s *reviewStream) header(name string, into *string) error {
	if s.committed {
		return fmt.Errorf("the review's %s follows its objects", name)
	}
	return s.value("the review's "+name, into)
}

// request reads the ConversionRequest, converting its objects as they come.
func (s *reviewStream) request(r *http.Request) error {
	s.seenReq = true
	ok, err := s.expectDelim("the request", '{')
	if err != nil {
		return err
	}
	s.nilReq = !ok
	if !ok {
		return nil
	}
	for s.dec.More() {
		key, err := s.key()
		if err != nil {
			return err
		}
		switch {
		case strings.EqualFold(key, "uid"):
			err = s.header("uid", (*string)(&s.uid))
		case strings.EqualFold(key, "desiredAPIVersion"):
			err = s.header("desiredAPIVersion", &s.desired)
		case strings.EqualFold(key, "objects"):
			err = s.objects(r)
		default:
			err = s.value("the request's "+key, &s.raw)
		}
		if err != nil {
			return err
		}
	}
	_, err = s.token("the request")
	return err
}

// objects converts each object of the request's array and writes it out.
func (s *reviewStream) objects(r *http.Request) error {
	if s.committed {
		return errors.New("the request has objects twice")
	}
	ok, err := s.expectDelim("the objects", '[')
	if err != nil || !ok {
		return err
	}
	for i := 0; s.dec.More(); i++ {
		if s.desired == "" {
			return errors.New("the request's desiredAPIVersion must precede its objects")
		}
		if err := s.value(fmt.Sprintf("object %d", i), &s.raw); err != nil {
			return err
		}
		raw := []byte(s.raw)
		if bytes.Equal(raw, []byte("null")) {
			raw = nil // as runtime.RawExtension reads it
		}
		out, err := s.c.convert(r, raw, s.desired)
		if err != nil {
			return conversionError{err}
		}
		if err := s.writeObject(out); err != nil {
			return err
		}
	}
	_, err = s.token("the objects")
	return err
}

// writeObject writes the response's head before the first object, and a
// separator before the others.
func (s *reviewStream) writeObject(obj []byte) error {
	if !s.committed {
		head, suffix, err := s.split(successResult())
		if err != nil {
			return err
		}
		s.suffix = suffix
		s.committed = true
		if _, err := s.w.Write(head); err != nil {
			return err
		}
	} else if _, err := s.w.Write([]byte{','}); err != nil {
		return err
	}
	s.converted++
	_, err := s.w.Write(obj)
	return err
}

// objectsMarker stands for the converted objects in a response marshalled
// to be split: a JSON string cannot hold it unescaped, so the first match is
// the objects' place.
const objectsMarker = `"convertedObjects":[0]`

// split marshals the response as controller-runtime's handler does, with a
// placeholder object, and returns what goes before the objects and after.
func (s *reviewStream) split(result metav1.Status) (head, tail []byte, err error) {
	out, err := s.marshal([]runtime.RawExtension{{Raw: []byte("0")}}, result)
	if err != nil {
		return nil, nil, err
	}
	i := bytes.Index(out, []byte(objectsMarker))
	if i < 0 {
		return nil, nil, errors.New("no place for the converted objects in the response")
	}
	cut := i + len(objectsMarker) - len("0]")
	return out[:cut], out[cut+1:], nil
}

// marshal encodes the response review as controller-runtime's handler
// does: the request's kind and apiVersion, the response, a newline.
func (s *reviewStream) marshal(objects []runtime.RawExtension, result metav1.Status) ([]byte, error) {
	review := apiextensionsv1.ConversionReview{TypeMeta: s.typeMeta, Response: &apiextensionsv1.ConversionResponse{
		UID: s.uid, ConvertedObjects: objects, Result: result}}
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(&review); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func successResult() metav1.Status { return metav1.Status{Status: metav1.StatusSuccess} }

func failureResult(err error) metav1.Status {
	return metav1.Status{Status: metav1.StatusFailure, Message: err.Error()}
}

// finish writes the end of a successful response.
func (s *reviewStream) finish() error {
	if !s.committed {
		out, err := s.marshal(nil, successResult())
		if err != nil {
			return err
		}
		_, err = s.w.Write(out)
		return err
	}
	_, err := s.w.Write(s.suffix)
	return err
}

// writeErrored answers a review none of whose objects was written with the
// failure, as controller-runtime's handler does.
func (s *reviewStream) writeErrored(err error) {
	out, merr := s.marshal(nil, failureResult(err))
	if merr != nil {
		http.Error(s.w, merr.Error(), http.StatusInternalServerError)
		return
	}
	_, _ = s.w.Write(out)
}

// fail ends a response whose first objects are written with the failure:
// the API server reads the result, not the objects, of a failed review.
func (s *reviewStream) fail(err error) {
	_, tail, serr := s.split(failureResult(err))
	if serr != nil {
		return
	}
	_, _ = s.w.Write(tail)
}

// convert converts one object to the desired version, as
// controller-runtime's handler does.
func (c *Converter) convert(r *http.Request, raw []byte, desired string) (_ []byte, retErr error) {
	defer func() {
		if p := recover(); p != nil {
			conversionmetrics.WebhookPanics.WithLabelValues().Inc()
			for _, fn := range utilruntime.PanicHandlers {
				fn(r.Context(), p)
			}
			retErr = errors.New("internal error occurred during conversion")
		}
	}()
	src, gvk, err := c.decoder.Decode(raw)
	if err != nil {
		return nil, err
	}
	dst, err := c.allocate(desired, gvk.Kind)
	if err != nil {
		return nil, err
	}
	if err := c.convertObject(src, dst); err != nil {
		return nil, err
	}
	return json.Marshal(dst)
}

// allocate returns a new object of the desired version and kind.
func (c *Converter) allocate(apiVersion, kind string) (runtime.Object, error) {
	obj, err := c.scheme.New(schema.FromAPIVersionAndKind(apiVersion, kind))
	if err != nil {
		return obj, err
	}
	t, err := meta.TypeAccessor(obj)
	if err != nil {
		return obj, err
	}
	t.SetAPIVersion(apiVersion)
	t.SetKind(kind)
	return obj, nil
}

// convertObject converts src into dst through the Hub and Convertible
// implementations.
func (c *Converter) convertObject(src, dst runtime.Object) error {
	srcGVK, dstGVK := src.GetObjectKind().GroupVersionKind(), dst.GetObjectKind().GroupVersionKind()
	if srcGVK.GroupKind() != dstGVK.GroupKind() {
		return fmt.Errorf("src %T and dst %T does not belong to same API Group", src, dst)
	}
	if srcGVK == dstGVK {
		return fmt.Errorf("conversion is not allowed between same type %T", src)
	}
	srcHub, srcIsHub := src.(conversion.Hub)
	dstHub, dstIsHub := dst.(conversion.Hub)
	srcConv, srcIsConvertible := src.(conversion.Convertible)
	dstConv, dstIsConvertible := dst.(conversion.Convertible)
	switch {
	case srcIsHub && dstIsConvertible:
		return dstConv.ConvertFrom(srcHub)
	case dstIsHub && srcIsConvertible:
		return srcConv.ConvertTo(dstHub)
	case srcIsConvertible && dstIsConvertible:
		return c.convertViaHub(srcConv, dstConv)
	default:
		return fmt.Errorf("%T is not convertible to %T", src, dst)
	}
}

func (c *Converter) convertViaHub(src, dst conversion.Convertible) error {
	hub, err := c.hub(src)
	if err != nil {
		return err
	}
	if hub == nil {
		return fmt.Errorf("%s does not have any Hub defined", src)
	}
	if err := src.ConvertTo(hub); err != nil {
		return fmt.Errorf("%T failed to convert to hub version %T : %w", src, hub, err)
	}
	if err := dst.ConvertFrom(hub); err != nil {
		return fmt.Errorf("%T failed to convert from hub version %T : %w", dst, hub, err)
	}
	return nil
}

// hub returns a new object of the Hub version of obj's kind.
func (c *Converter) hub(obj runtime.Object) (conversion.Hub, error) {
	kinds, _, err := c.scheme.ObjectKinds(obj)
	if err != nil {
		return nil, err
	}
	if len(kinds) != 1 {
		return nil, fmt.Errorf("expect to get only one GVK for %v", obj)
	}
	var hub conversion.Hub
	for gvk := range c.scheme.AllKnownTypes() {
		if gvk.GroupKind() != kinds[0].GroupKind() {
			continue
		}
		instance, err := c.scheme.New(gvk)
		if err != nil {
			return nil, fmt.Errorf("failed to allocate an instance for gvk %v: %w", gvk, err)
		}
		if h, ok := instance.(conversion.Hub); ok {
			if hub != nil {
				return nil, fmt.Errorf("multiple hub version defined for %T", obj)
			}
			hub = h
		}
	}
	return hub, nil
}
