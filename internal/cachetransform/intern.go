package cachetransform

import (
	"encoding/json"
	"reflect"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// Interner shares what many cached objects hold alike: strings
// (namespaces, label and annotation keys, images, condition messages), string
// maps (labels, annotations) and raw data (revisions') of equal content.
// Each object points to one copy instead of its own. Cached objects are
// read-only, so sharing is safe. Strings are shared through the manager's
// table of canonical strings (share); the other tables are bounded: past
// their size they start over (the objects holding their values keep them),
// so that values no object holds any more cannot pile up.
type Interner struct {
	mu sync.Mutex
	// maps are the string maps (labels, annotations, selectors' match
	// labels) by content: a SidecarSet's revision carries its annotations,
	// thousands of SidecarSets the same labels.
	maps interned[any]
	// bytes are raw data by content.
	bytes interned[[]byte]
	// sidecarLists are SidecarSets' sidecars by content.
	sidecarLists interned[[]appsv1beta1.SidecarContainer]
}

// NewInterner returns an empty interner.
func NewInterner() *Interner {
	return &Interner{maps: newInterned[any](maxInternedSets),
		bytes: newInterned[[]byte](maxInternedSets), sidecarLists: newInterned[[]appsv1beta1.SidecarContainer](maxInternedSets)}
}

// Transform is a cache transform that replaces every string of a freshly
// decoded object (its fields, its map keys and values, through pointers,
// slices and maps) by its shared copy; the object is modified in place.
func (in *Interner) Transform(obj any) (any, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.walk(reflect.ValueOf(obj))
	if s, ok := obj.(*appsv1beta1.SidecarSet); ok {
		s.Spec.Containers = in.sidecars(s.Spec.Containers)
		s.Spec.InitContainers = in.sidecars(s.Spec.InitContainers)
	}
	return obj, nil
}

// sidecars returns the shared copy of a SidecarSet's sidecar list of the
// same content: SidecarSets stamped from one template (one per team or
// namespace) declare the same sidecars, and a sidecar is 512 bytes.
func (in *Interner) sidecars(list []appsv1beta1.SidecarContainer) []appsv1beta1.SidecarContainer {
	if len(list) == 0 {
		return list
	}
	key, err := json.Marshal(list)
	if err != nil {
		return list
	}
	return in.sidecarLists.intern(string(key), list, func() []appsv1beta1.SidecarContainer { return list })
}

var uidType = reflect.TypeFor[types.UID]()

// ownFields are the string fields each object holds for itself (its name,
// its resource version, the name of the one object it points to): another
// object holds the same string once or twice at most, and a table entry
// costs more than the copies it would save.
var ownFields = map[reflect.Type][]string{
	reflect.TypeFor[metav1.ObjectMeta]():            {"Name", "ResourceVersion"},
	reflect.TypeFor[metav1.OwnerReference]():        {"Name"},
	reflect.TypeFor[appsv1beta1.SidecarSetStatus](): {"LatestRevision"},
}

func (in *Interner) walk(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			in.walk(v.Elem())
		}
	case reflect.Struct:
		own := ownFields[v.Type()]
		for field, f := range v.Fields() {
			// UIDs are each object's own too.
			if !f.CanSet() || f.Type() == uidType || slices.Contains(own, field.Name) {
				continue
			}
			in.walk(f)
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			in.walkBytes(v)
			return
		}
		for i := range v.Len() {
			in.walk(v.Index(i))
		}
	case reflect.Array:
		for i := range v.Len() {
			in.walk(v.Index(i))
		}
	case reflect.Map:
		in.walkMap(v)
	case reflect.String:
		if v.CanSet() && v.Len() > 0 {
			v.SetString(share(v.String()))
		}
	}
}

// walkBytes replaces raw bytes (a revision's data) by the shared copy of
// the same content: SidecarSets stamped from one template record the same
// data in each of their revisions.
func (in *Interner) walkBytes(v reflect.Value) {
	if v.Len() == 0 || !v.CanSet() || v.Type() != bytesType {
		return
	}
	raw := v.Bytes()
	v.SetBytes(in.bytes.intern(string(raw), raw, func() []byte { return slices.Clone(raw) }))
}

var bytesType = reflect.TypeFor[[]byte]()

// walkMap replaces a map of strings by the shared map of the same content
// (of the same type), with shared keys; its values are not interned: the
// map is already held once per content, and a value held by several
// different maps is short (a label's "true", a SidecarSet's name), cheaper
// to copy than to file. It interns other maps' values.
func (in *Interner) walkMap(v reflect.Value) {
	if v.Len() == 0 {
		return
	}
	t := v.Type()
	if t.Key().Kind() == reflect.String && t.Elem().Kind() == reflect.String {
		if !v.CanSet() {
			return
		}
		pairs := make(map[string]string, v.Len())
		iter := v.MapRange()
		for iter.Next() {
			pairs[iter.Key().String()] = iter.Value().String()
		}
		v.Set(reflect.ValueOf(in.maps.intern(t.String()+"\x00"+pairsKey(pairs), nil, func() any {
			m := reflect.MakeMapWithSize(t, len(pairs))
			for k, e := range pairs {
				m.SetMapIndex(reflect.ValueOf(share(k)).Convert(t.Key()), reflect.ValueOf(e).Convert(t.Elem()))
			}
			return m.Interface()
		})))
		return
	}
	iter := v.MapRange()
	for iter.Next() {
		e := reflect.New(t.Elem()).Elem()
		e.Set(iter.Value())
		in.walk(e)
		v.SetMapIndex(iter.Key(), e)
	}
}
