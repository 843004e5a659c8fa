package validation

import (
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateVolumes checks that each volume has a DNS-1123 label name and
// exactly one source.
func validateVolumes(volumes []corev1.Volume, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range volumes {
		v := &volumes[i]
		vp := path.Index(i)
		if v.Name == "" {
			errs = append(errs, field.Required(vp.Child("name"), "a volume needs a name"))
		} else {
			for _, msg := range utilvalidation.IsDNS1123Label(v.Name) {
				errs = append(errs, field.Invalid(vp.Child("name"), v.Name, msg))
			}
		}
		errs = append(errs, exactlyOne(&v.VolumeSource, vp)...)
	}
	return errs
}

// exactlyOne checks that exactly one of the pointer fields of a "one of"
// struct (a volume source, a probe or lifecycle handler, an env var source)
// is set. The alternatives are read from the type, so a source added by a
// newer Kubernetes API is accepted without change here.
func exactlyOne(oneOf any, path *field.Path) field.ErrorList {
	set, all := pointerFields(oneOf)
	switch len(set) {
	case 1:
		return nil
	case 0:
		return field.ErrorList{field.Required(path, "exactly one of "+strings.Join(all, ", ")+" must be set")}
	default:
		return field.ErrorList{field.Invalid(path, set, "exactly one source must be set, not "+
			strings.Join(set, " and ")+": keep one of them")}
	}
}

// pointerFields returns the JSON names of the set pointer fields of the
// struct oneOf points to, and of all its pointer fields, in declaration order.
func pointerFields(oneOf any) (set, all []string) {
	v := reflect.ValueOf(oneOf).Elem()
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if f.Type.Kind() != reflect.Pointer {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		all = append(all, name)
		if !v.Field(i).IsNil() {
			set = append(set, name)
		}
	}
	return set, all
}
