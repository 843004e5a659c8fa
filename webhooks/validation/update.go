package validation

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/sidecarset-operator/sidecarset-operator/api/upgrade"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

// updateWarnings says how each part of an update reaches the pods already
// running, by the rule of package upgrade: images in place; CPU and memory
// (resources, resourcesPolicy) resized in place; anything else by
// recreating the pods when the SidecarSet allows it
// (sidecarset-operator.dev/recreate-pods), else only in pods created from
// now on. A pure image change is the ordinary in-place upgrade and gives no
// warning. Plain init containers, volumes, imagePullSecrets and
// patchPodMetadata are applied at pod creation only (patchPodMetadata
// Overwrite and MergePatchJson entries also at each in-place upgrade).
func updateWarnings(s, old *appsv1beta1.SidecarSet, spec *field.Path) []string {
	now, before := s.DeepCopy(), old.DeepCopy()
	appsv1beta1.SetDefaults(now)
	appsv1beta1.SetDefaults(before)
	diff := upgrade.Compare(&before.Spec, &now.Spec)
	d := differ{hashChanged: diff.HashChanged, recreate: appsv1beta1.RecreatesPods(s)}
	for _, c := range diff.Changes {
		d.change(c, spec)
	}
	d.order(diff.InitOrder, spec.Child("initContainers"))
	d.order(diff.Order, spec.Child("containers"))
	if diff.Path == upgrade.PathRecreate && len(d.warnings) == 0 {
		// A change the field comparison cannot name still changes the hash.
		d.warnings = append(d.warnings, fmt.Sprintf("%s: the sidecar configuration changed beyond images and resources; %s",
			spec.Child("containers"), d.consequence(false, "get it")))
	}
	d.volumes(now.Spec.Volumes, before.Spec.Volumes, spec.Child("volumes"))
	if !equality.Semantic.DeepEqual(now.Spec.ImagePullSecrets, before.Spec.ImagePullSecrets) {
		d.warnings = append(d.warnings, fmt.Sprintf("%s: changed; image pull secrets reach only pods created from now on, "+
			"existing pods keep theirs, so an in-place upgrade to an image that needs a new secret can fail to pull",
			spec.Child("imagePullSecrets")))
	}
	if !equality.Semantic.DeepEqual(now.Spec.PatchPodMetadata, before.Spec.PatchPodMetadata) {
		d.warnings = append(d.warnings, fmt.Sprintf("%s: changed; existing pods get it at their next in-place upgrade: "+
			"Overwrite and MergePatchJson entries, and Retain entries for keys the pod lacks (a Retain key the pod has keeps its value)",
			spec.Child("patchPodMetadata")))
	}
	return d.warnings
}

// differ collects the warnings of one update.
type differ struct {
	// hashChanged: running pods see the change (their recorded
	// without-image hash no longer matches).
	hashChanged bool
	// recreate: the SidecarSet lets its rollout recreate pods.
	recreate bool
	warnings []string
}

// consequence says what happens to a change that cannot be made in place:
// effect is what new pods do ("get it", "go without it").
func (d *differ) consequence(plainInit bool, effect string) string {
	if d.recreate && d.hashChanged {
		what := "this cannot be applied in place"
		if plainInit {
			what = "init containers run only at pod creation"
		}
		return what + ": running pods are recreated to " + effect + " (" + appsv1beta1.RecreatePodsAnnotation +
			"), evicted within the update strategy and their PodDisruptionBudgets"
	}
	if plainInit {
		return "init containers run only at pod creation: only pods created from now on " + effect +
			", existing pods keep their current init containers"
	}
	s := "this cannot be applied in place: only pods created from now on " + effect +
		", existing pods keep their current sidecars"
	if d.hashChanged {
		s += " (status shows them as not upgradable; " + appsv1beta1.RecreatePodsAnnotation + `: "true" has them recreated)`
	}
	return s
}

// resized says what happens to a resources change.
func (d *differ) resized() string {
	s := "running pods are resized in place through pods/resize, without a restart unless the sidecar's resizePolicy asks for one; " +
		"a pod the resize cannot reach (its QoS class would change, or its node refuses it) is "
	if d.recreate {
		return s + "recreated"
	}
	return s + "reported, and keeps its resources"
}

// change words one sidecar's change. Image changes are applied in place,
// except for plain init containers, which never run again.
func (d *differ) change(c upgrade.Change, spec *field.Path) {
	list := spec.Child("containers")
	if c.Init {
		list = spec.Child("initContainers")
	}
	at := list.Index(c.Index)
	switch {
	case c.Added:
		d.warnings = append(d.warnings, fmt.Sprintf("%s (%s): added; %s", at, c.Name, d.consequence(c.Plain, "get it")))
		return
	case c.Removed:
		d.warnings = append(d.warnings, fmt.Sprintf("%s (%s): removed; %s", list, c.Name, d.consequence(c.Plain, "go without it")))
		return
	}
	if c.PullPolicyFollowsTag {
		d.warnings = append(d.warnings, fmt.Sprintf("%s (%s): imagePullPolicy follows the image's tag from %s to %s; "+
			"existing pods are upgraded in place and keep %s (a pod's pull policy cannot change), pods created from now on get %s",
			at, c.Name, c.PullPolicyBefore, c.PullPolicyAfter, c.PullPolicyBefore, c.PullPolicyAfter))
	}
	fields := c.Fields
	if c.Plain && c.Image {
		fields = append([]string{"image"}, fields...)
	}
	switch p := c.Path(); {
	case p == upgrade.PathResize:
		d.warnings = append(d.warnings, fmt.Sprintf("%s (%s): %s changed; %s", at, c.Name, strings.Join(fields, ", "), d.resized()))
	case p == upgrade.PathRecreate || (c.Plain && c.Image):
		d.warnings = append(d.warnings, fmt.Sprintf("%s (%s): %s changed; %s", at, c.Name, strings.Join(fields, ", "),
			d.consequence(c.Plain, "get it")))
	}
}

// order words a new order of a list of sidecars.
func (d *differ) order(o *upgrade.Order, path *field.Path) {
	if o == nil {
		return
	}
	d.warnings = append(d.warnings, fmt.Sprintf("%s: order changed from [%s] to [%s]; %s", path,
		strings.Join(o.Before, ", "), strings.Join(o.After, ", "), d.consequence(false, "get the new order")))
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
