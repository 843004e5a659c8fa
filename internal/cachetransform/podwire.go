package cachetransform

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
)

// The pod watch's protobuf stream carries whole pods, and decoding them is
// most of what a pod event costs the manager: its managedFields, volumes,
// environment, probes and tolerations, none of which Trim keeps. The
// filter below drops, from each pod of the stream, the fields Trim does not
// read, before client-go decodes it: the cache then holds the same pods,
// decoded from a fraction of the bytes.
//
// wireFilter is one protobuf message's fields to keep, by number; a kept
// field with a filter of its own is a message filtered in turn, one
// without (nil) is kept whole. The filters name exactly what Trim reads
// (TestFilterPod_TrimSeesTheSamePod holds them to it).
type wireFilter map[protowire.Number]wireFilter

var (
	// podWire is a core/v1 Pod: metadata 1, spec 2, status 3.
	podWire = wireFilter{1: objectMetaWire, 2: podSpecWire, 3: podStatusWire}
	// objectMetaWire keeps all of ObjectMeta but selfLink (4) and
	// managedFields (17).
	objectMetaWire = wireFilter{1: nil, 2: nil, 3: nil, 5: nil, 6: nil, 7: nil, 8: nil, 9: nil, 10: nil, 11: nil, 12: nil, 13: nil, 14: nil}
	// podSpecWire: containers 2, restartPolicy 3, nodeName 10,
	// initContainers 20, os 36, resources 40.
	podSpecWire = wireFilter{2: containerWire, 3: nil, 10: nil, 20: containerWire, 36: nil, 40: nil}
	// containerWire: name 1, image 2, resources 8, imagePullPolicy 14,
	// restartPolicy 24.
	containerWire = wireFilter{1: nil, 2: nil, 8: nil, 14: nil, 24: nil}
	// podStatusWire: phase 1, conditions 2, containerStatuses 8, qosClass
	// 9, initContainerStatuses 10, observedGeneration 17.
	podStatusWire = wireFilter{1: nil, 2: nil, 8: containerStatusWire, 9: nil, 10: containerStatusWire, 17: nil}
	// containerStatusWire: name 1, state 2, lastState 3, ready 4,
	// restartCount 5, image 6, imageID 7, started 9, resources 11.
	containerStatusWire = wireFilter{1: nil, 2: nil, 3: nil, 4: nil, 5: nil, 6: nil, 7: nil, 9: nil, 11: nil}
)

// appendFiltered appends the fields of the message src that f keeps to dst;
// ok is false when src is not a well-formed message.
func (f wireFilter) appendFiltered(dst, src []byte) (_ []byte, ok bool) {
	for len(src) > 0 {
		num, typ, n, size, ok := nextField(src)
		if !ok {
			return dst, false
		}
		whole := src[:size]
		src = src[size:]
		sub, kept := f[num]
		switch {
		case !kept:
		case sub == nil || typ != protowire.BytesType:
			dst = append(dst, whole...)
		default:
			value, _ := protowire.ConsumeBytes(whole[n:])
			if dst, ok = sub.appendMessage(dst, num, value); !ok {
				return dst, false
			}
		}
	}
	return dst, true
}

// appendMessage appends the message value, filtered by f, as field num.
// The filtered message goes after room for the longest varint its length
// can take, and moves back once its length is known.
func (f wireFilter) appendMessage(dst []byte, num protowire.Number, value []byte) (_ []byte, ok bool) {
	dst = protowire.AppendTag(dst, num, protowire.BytesType)
	at := len(dst)
	dst = append(dst, make([]byte, binary.MaxVarintLen32)...)
	if dst, ok = f.appendFiltered(dst, value); !ok {
		return dst, false
	}
	size := len(dst) - at - binary.MaxVarintLen32
	if uint64(size) > math.MaxUint32 {
		return dst, false
	}
	n := len(protowire.AppendVarint(dst[at:at], uint64(size)))
	copy(dst[at+n:], dst[at+binary.MaxVarintLen32:])
	return dst[:at+n+size], true
}

// protobufMagic starts every object the API server encodes in protobuf,
// before its runtime.Unknown envelope.
var protobufMagic = []byte{0x6b, 0x38, 0x73, 0x00}

// filterWatchEvent appends to dst a frame of a protobuf watch stream (a
// metav1.WatchEvent: type 1, object 2, a runtime.RawExtension whose raw 1
// is the object with its magic and runtime.Unknown envelope: typeMeta 1,
// raw 2) with its v1 Pod filtered (podWire), the pod filtered into
// scratch on the way. Any other frame, and one it cannot read, is appended
// as it is. It returns dst and scratch, for the caller to reuse: a stream's
// events then cost no allocation once its buffers have grown.
func filterWatchEvent(dst, scratch, frame []byte) (_, _ []byte) {
	start := len(dst)
	asItIs := func() ([]byte, []byte) { return append(dst[:start], frame...), scratch }
	var object []byte
	for rest := frame; len(rest) > 0; {
		num, typ, n, size, ok := nextField(rest)
		if !ok {
			return asItIs()
		}
		if num == 2 && typ == protowire.BytesType {
			ext, _ := protowire.ConsumeBytes(rest[n:])
			raw, ok := field(ext, 1)
			if !ok || object != nil {
				return asItIs()
			}
			if scratch, ok = filterPodObject(scratch[:0], raw); !ok {
				return asItIs()
			}
			object = scratch
			dst = protowire.AppendTag(dst, 2, protowire.BytesType)
			dst = protowire.AppendVarint(dst, uint64(protowire.SizeTag(1)+protowire.SizeBytes(len(object))))
			dst = protowire.AppendTag(dst, 1, protowire.BytesType)
			dst = protowire.AppendBytes(dst, object)
		} else {
			dst = append(dst, rest[:size]...)
		}
		rest = rest[size:]
	}
	if object == nil {
		return asItIs()
	}
	return dst, scratch
}

// unknownWire is the runtime.Unknown envelope of a Pod: typeMeta 1, raw
// 2 (the Pod), contentEncoding 3, contentType 4.
var unknownWire = wireFilter{1: nil, 2: podWire, 3: nil, 4: nil}

// filterPodObject appends to dst an encoded object (magic,
// runtime.Unknown) that is a v1 Pod, filtered; ok is false for any other
// object.
func filterPodObject(dst, obj []byte) (_ []byte, ok bool) {
	unknown, found := bytes.CutPrefix(obj, protobufMagic)
	if !found {
		return dst, false
	}
	typeMeta, ok := field(unknown, 1)
	if !ok {
		return dst, false
	}
	apiVersion, _ := field(typeMeta, 1)
	kind, _ := field(typeMeta, 2)
	if string(apiVersion) != "v1" || string(kind) != "Pod" {
		return dst, false
	}
	return unknownWire.appendFiltered(append(dst, protobufMagic...), unknown)
}

// nextField reads the first field of a message: its number, its wire
// type, the length of its tag and of the whole field; ok is false when it
// is malformed.
func nextField(msg []byte) (num protowire.Number, typ protowire.Type, tagLen, size int, ok bool) {
	num, typ, tagLen = protowire.ConsumeTag(msg)
	if tagLen < 0 {
		return 0, 0, 0, 0, false
	}
	m := protowire.ConsumeFieldValue(num, typ, msg[tagLen:])
	if m < 0 {
		return 0, 0, 0, 0, false
	}
	return num, typ, tagLen, tagLen + m, true
}

// field returns the value of the last length-delimited field num of a
// message; ok is false when there is none or the message is malformed.
func field(msg []byte, num protowire.Number) (value []byte, ok bool) {
	for len(msg) > 0 {
		n, typ, tagLen, size, wellFormed := nextField(msg)
		if !wellFormed {
			return nil, false
		}
		if n == num && typ == protowire.BytesType {
			value, _ = protowire.ConsumeBytes(msg[tagLen:size])
			ok = true
		}
		msg = msg[size:]
	}
	return value, ok
}

// FilterPodWatches wraps a client's transport (rest.Config.Wrap): the
// protobuf watch streams of core/v1 pods it receives have their pods
// filtered as Trim would trim them (filterWatchEvent). Only the manager's
// cache watches pods, and it keeps them trimmed.
func FilterPodWatches(rt http.RoundTripper) http.RoundTripper {
	return podWatchFilter{next: rt}
}

type podWatchFilter struct {
	next http.RoundTripper
}

// RoundTrip filters the body of a pod watch's protobuf stream.
func (f podWatchFilter) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := f.next.RoundTrip(req)
	if err != nil || req.Method != http.MethodGet || !isPodWatch(req) || resp.StatusCode != http.StatusOK ||
		!strings.HasPrefix(resp.Header.Get("Content-Type"), "application/vnd.kubernetes.protobuf;stream=watch") {
		return resp, err
	}
	resp.Body = &watchBody{in: resp.Body}
	return resp, nil
}

// isPodWatch reports whether a request watches core/v1 pods, of a
// namespace or of all.
func isPodWatch(req *http.Request) bool {
	if w := req.URL.Query().Get("watch"); w != "true" && w != "1" {
		return false
	}
	_, path, ok := strings.Cut(req.URL.Path, "/api/v1/")
	if !ok {
		return false
	}
	parts := strings.Split(path, "/")
	return path == "pods" || (len(parts) == 3 && parts[0] == "namespaces" && parts[2] == "pods")
}

// watchBody reads a protobuf watch stream (frames of a 4-byte big-endian
// length and a watch event) and returns it with each event filtered.
type watchBody struct {
	in    io.ReadCloser
	frame []byte
	out   []byte
	// pod is the filtered pod of the last frame (filterWatchEvent).
	pod []byte
	// pending is what of out is not read yet.
	pending []byte
	err     error
}

// maxFrame is the largest frame read, client-go's own limit for one
// object of a stream.
const maxFrame = 16 << 20

func (b *watchBody) Read(p []byte) (int, error) {
	for len(b.pending) == 0 {
		if b.err != nil {
			return 0, b.err
		}
		b.err = b.next()
	}
	n := copy(p, b.pending)
	b.pending = b.pending[n:]
	return n, nil
}

// next reads one frame and makes it pending, filtered.
func (b *watchBody) next() error {
	var header [4]byte
	if _, err := io.ReadFull(b.in, header[:]); err != nil {
		return err
	}
	size := binary.BigEndian.Uint32(header[:])
	if size > maxFrame {
		return fmt.Errorf("a frame of the pod watch holds %d bytes, more than %d", size, maxFrame)
	}
	if cap(b.frame) < int(size) {
		b.frame = make([]byte, size)
	}
	b.frame = b.frame[:size]
	if _, err := io.ReadFull(b.in, b.frame); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	b.out, b.pod = filterWatchEvent(append(b.out[:0], 0, 0, 0, 0), b.pod, b.frame)
	binary.BigEndian.PutUint32(b.out, uint32(len(b.out)-4))
	b.pending = b.out
	return nil
}

func (b *watchBody) Close() error { return b.in.Close() }
