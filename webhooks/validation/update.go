package validation

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// updateWarnings says which parts of an update do not reach existing pods.
// Only image changes of containers and native sidecars are applied in place;
// every other change to a sidecar reaches only pods created from now on, and
// existing pods are then reported as not upgradable. Containers may be added
// and removed. Plain init containers, volumes, imagePullSecrets and
// patchPodMetadata are applied at pod creation only (patchPodMetadata
// Overwrite and MergePatchJson entries also at each in-place upgrade).
func updateWarnings(s, old *appsv1beta1.SidecarSet, spec *field.Path) []string {
	now, before := s.DeepCopy(), old.DeepCopy()
	appsv1beta1.SetDefaults(now)
	appsv1beta1.SetDefaults(before)
	nowHash, errNow := appsv1beta1.ComputeHashes(&now.Spec)
	beforeHash, errBefore := appsv1beta1.ComputeHashes(&before.Spec)
	notUpgradable := errNow != nil || errBefore != nil || nowHash.WithoutImage != beforeHash.WithoutImage
	if notUpgradable && errNow == nil && errBefore == nil {
		// A pull policy defaulted from the new tag is compared as the old
		// one, as the controller does (a full replace without
		// imagePullPolicy moving a tag to or from latest).
		h, substituted, err := appsv1beta1.WithoutImageHashWithPullPolicies(&now.Spec, pullPolicies(&before.Spec))
		notUpgradable = err != nil || !substituted || h != beforeHash.WithoutImage
	}

	d := differ{notUpgradable: notUpgradable}
	d.containers(now.Spec.InitContainers, before.Spec.InitContainers, true, spec.Child("initContainers"))
	d.containers(now.Spec.Containers, before.Spec.Containers, false, spec.Child("containers"))
	if notUpgradable && len(d.warnings) == 0 {
		// A change the field comparison cannot name still changes the hash.
		d.warnings = append(d.warnings, fmt.Sprintf("%s: the sidecar configuration changed beyond images; %s",
			spec.Child("containers"), d.consequence(false, "get it")))
	}
	d.volumes(now.Spec.Volumes, before.Spec.Volumes, spec.Child("volumes"))
	if !equality.Semantic.DeepEqual(now.Spec.ImagePullSecrets, before.Spec.ImagePullSecrets) {
		d.warnings = append(d.warnings, fmt.Sprintf("%s: changed; image pull secrets reach only pods created from now on, "+
			"existing pods keep theirs, so an in-place upgrade to an image that needs a new secret can fail to pull",
			spec.Child("imagePullSecrets")))
	}
	if !equality.Semantic.DeepEqual(now.Spec.PatchPodMetadata, before.Spec.PatchPodMetadata) {
		d.warnings = append(d.warnings, fmt.Sprintf("%s: changed; Retain entries reach only pods created from now on, "+
			"Overwrite and MergePatchJson entries also reach existing pods at their next in-place upgrade",
			spec.Child("patchPodMetadata")))
	}
	return d.warnings
}

// differ collects the warnings of one update.
type differ struct {
	notUpgradable bool
	warnings      []string
}

// consequence says what happens to a change: effect is what new pods do
// ("get it", "go without it").
func (d *differ) consequence(plainInit bool, effect string) string {
	var s string
	if plainInit {
		s = "init containers run only at pod creation: only pods created from now on " + effect +
			", existing pods keep their current init containers"
	} else {
		s = "this cannot be applied in place: only pods created from now on " + effect +
			", existing pods keep their current sidecars"
	}
	if d.notUpgradable {
		s += " (status shows them as not upgradable)"
	}
	return s
}

// containers compares one list of sidecars by name. Image changes are
// applied in place, except for plain init containers, which never run again.
func (d *differ) containers(now, before []appsv1beta1.SidecarContainer, init bool, path *field.Path) {
	plain := func(c *appsv1beta1.SidecarContainer) bool {
		return init && !appsv1beta1.IsNativeSidecar(&c.Container)
	}
	beforeByName := map[string]*appsv1beta1.SidecarContainer{}
	for i := range before {
		beforeByName[before[i].Name] = &before[i]
	}
	nowNames := map[string]bool{}
	var nowOrder []string
	for i := range now {
		c := &now[i]
		nowNames[c.Name] = true
		prev, existed := beforeByName[c.Name]
		if !existed {
			d.warnings = append(d.warnings, fmt.Sprintf("%s (%s): added; %s", path.Index(i), c.Name, d.consequence(plain(c), "get it")))
			continue
		}
		nowOrder = append(nowOrder, c.Name)
		if !plain(c) && c.ImagePullPolicy != prev.ImagePullPolicy && appsv1beta1.PullPolicyFollowsImage(&c.Container) {
			d.warnings = append(d.warnings, fmt.Sprintf("%s (%s): imagePullPolicy follows the image's tag from %s to %s; "+
				"existing pods are upgraded in place and keep %s (a pod's pull policy cannot change), pods created from now on get %s",
				path.Index(i), c.Name, prev.ImagePullPolicy, c.ImagePullPolicy, prev.ImagePullPolicy, c.ImagePullPolicy))
			same := prev.DeepCopy()
			same.ImagePullPolicy = c.ImagePullPolicy
			prev = same
		}
		if changed := changedFields(c, prev, plain(c)); len(changed) > 0 {
			d.warnings = append(d.warnings, fmt.Sprintf("%s (%s): %s changed; %s",
				path.Index(i), c.Name, strings.Join(changed, ", "), d.consequence(plain(c), "get it")))
		}
	}
	var beforeOrder []string
	for i := range before {
		c := &before[i]
		if nowNames[c.Name] {
			beforeOrder = append(beforeOrder, c.Name)
			continue
		}
		d.warnings = append(d.warnings, fmt.Sprintf("%s (%s): removed; %s", path, c.Name, d.consequence(plain(c), "go without it")))
	}
	// The hash covers the order of containers, and of init containers when
	// one of them is a native sidecar; injection sorts init containers.
	if !slices.Equal(nowOrder, beforeOrder) && (!init || appsv1beta1.HasNativeSidecar(now)) {
		d.warnings = append(d.warnings, fmt.Sprintf("%s: order changed from [%s] to [%s]; %s", path,
			strings.Join(beforeOrder, ", "), strings.Join(nowOrder, ", "), d.consequence(false, "get the new order")))
	}
}

// changedFields returns the JSON names of the fields that differ between two
// defaulted sidecars of the same name, in declaration order: first the
// Kubernetes container fields, then the sidecar fields. The image is
// ignored unless withImage is set.
func changedFields(now, before *appsv1beta1.SidecarContainer, withImage bool) []string {
	changed := diffStruct(reflect.ValueOf(&now.Container).Elem(), reflect.ValueOf(&before.Container).Elem(), func(name string) bool {
		return name != "image" || withImage
	})
	return append(changed, diffStruct(reflect.ValueOf(now).Elem(), reflect.ValueOf(before).Elem(), func(string) bool { return true })...)
}

// diffStruct compares the exported, non-embedded fields of two structs of
// the same type as the SidecarSet hash sees them: by their JSON encoding,
// with nil equal to empty. So "1Gi" and "1073741824" differ, as they do in
// the hash, while a nil and an empty env list do not.
func diffStruct(a, b reflect.Value, include func(jsonName string) bool) []string {
	var changed []string
	for i := range a.NumField() {
		f := a.Type().Field(i)
		if f.Anonymous || !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !include(name) {
			continue
		}
		if !sameJSON(a.Field(i), b.Field(i)) {
			changed = append(changed, name)
		}
	}
	return changed
}

func sameJSON(a, b reflect.Value) bool {
	if k := a.Kind(); (k == reflect.Slice || k == reflect.Map) && a.Len() == 0 && b.Len() == 0 {
		return true
	}
	ja, errA := json.Marshal(a.Interface())
	jb, errB := json.Marshal(b.Interface())
	if errA != nil || errB != nil {
		return equality.Semantic.DeepEqual(a.Interface(), b.Interface())
	}
	return bytes.Equal(ja, jb)
}

// volumes compares the defaulted volumes by name.
func (d *differ) volumes(now, before []corev1.Volume, path *field.Path) {
	beforeByName := map[string]*corev1.Volume{}
	for i := range before {
		beforeByName[before[i].Name] = &before[i]
	}
	var changes []string
	nowNames := map[string]bool{}
	for i := range now {
		nowNames[now[i].Name] = true
		prev, existed := beforeByName[now[i].Name]
		switch {
		case !existed:
			changes = append(changes, fmt.Sprintf("%q added", now[i].Name))
		case !equality.Semantic.DeepEqual(&now[i], prev):
			changes = append(changes, fmt.Sprintf("%q changed", now[i].Name))
		}
	}
	for i := range before {
		if !nowNames[before[i].Name] {
			changes = append(changes, fmt.Sprintf("%q removed", before[i].Name))
		}
	}
	if len(changes) > 0 {
		d.warnings = append(d.warnings, fmt.Sprintf("%s: %s; volumes reach only pods created from now on, "+
			"existing pods keep the volumes they were created with", path, strings.Join(changes, ", ")))
	}
}

// pullPolicies returns the pull policy of each of a spec's sidecars by name.
func pullPolicies(spec *appsv1beta1.SidecarSetSpec) func(string) (corev1.PullPolicy, bool) {
	byName := map[string]corev1.PullPolicy{}
	for _, list := range [][]appsv1beta1.SidecarContainer{spec.Containers, spec.InitContainers} {
		for i := range list {
			byName[list[i].Name] = list[i].ImagePullPolicy
		}
	}
	return func(name string) (corev1.PullPolicy, bool) {
		p, ok := byName[name]
		return p, ok
	}
}
