package policy

import (
	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"

	apiservercel "k8s.io/apiserver/pkg/cel"
)

// The CEL type of the object and oldObject variables is declared here, for
// the SidecarSet fields the rules may read: a rule that names any other
// field fails to compile. Each list, map and string carries the bound the
// cost estimator assumes for it. Where the CRD declares a bound (maxItems,
// maxProperties, maxLength) the same value is used; elsewhere the bound is a
// documented assumption. Objects beyond an assumed bound are still evaluated,
// under the runtime cost limits.
const (
	maxSidecars          = 32   // CRD: spec.containers and spec.initContainers maxItems
	maxVolumes           = 64   // CRD: spec.volumes maxItems
	maxPatchEntries      = 16   // CRD: spec.patchPodMetadata maxItems
	maxPatchAnnotations  = 32   // CRD: patchPodMetadata[].annotations maxProperties
	maxTransferEnv       = 32   // CRD: transferEnv maxItems
	maxVolumeMounts      = 64   // assumed, per container
	maxVolumeDevices     = 8    // assumed, per container
	maxMetadataEntries   = 256  // assumed: labels or annotations of the SidecarSet
	maxNameLength        = 253  // object and container names (DNS subdomain length)
	maxPathLength        = 256  // assumed: mountPath and devicePath
	maxImageLength       = 4096 // assumed
	maxEnumLength        = 32   // enum-like strings (restartPolicy, upgradeType, ...)
	maxAnnotationKey     = 317  // prefix (253) + "/" + name (63)
	maxAnnotationValue   = 4096 // assumed: values the rules compare (canary, base)
	maxLabelValue        = 63
	sidecarSetTypePrefix = "sidecarset."
)

// objectType is the declared CEL type of object and oldObject.
func objectType() *apiservercel.DeclType {
	str := func(maxLength int64) *apiservercel.DeclType {
		t := apiservercel.NewSimpleTypeWithMinSize("string", cel.StringType, types.String(""), apiservercel.MinStringSize)
		t.MaxElements = maxLength
		return t
	}
	obj := func(name string, fields map[string]*apiservercel.DeclType) *apiservercel.DeclType {
		decl := make(map[string]*apiservercel.DeclField, len(fields))
		for n, t := range fields {
			decl[n] = apiservercel.NewDeclField(n, t, false, nil, nil)
		}
		return apiservercel.NewObjectType(sidecarSetTypePrefix+name, decl)
	}
	list := apiservercel.NewListType
	stringMap := apiservercel.NewMapType

	policy := obj("ShareVolumePolicy", map[string]*apiservercel.DeclType{"type": str(maxEnumLength)})
	container := obj("SidecarContainer", map[string]*apiservercel.DeclType{
		"name":          str(maxNameLength),
		"image":         str(maxImageLength),
		"restartPolicy": str(maxEnumLength),
		"volumeMounts": list(obj("VolumeMount", map[string]*apiservercel.DeclType{
			"name":      str(maxNameLength),
			"mountPath": str(maxPathLength),
		}), maxVolumeMounts),
		"volumeDevices": list(obj("VolumeDevice", map[string]*apiservercel.DeclType{
			"name":       str(maxNameLength),
			"devicePath": str(maxPathLength),
		}), maxVolumeDevices),
		"podInjectPolicy": str(maxEnumLength),
		"upgradeStrategy": obj("SidecarContainerUpgradeStrategy", map[string]*apiservercel.DeclType{
			"upgradeType":          str(maxEnumLength),
			"hotUpgradeEmptyImage": str(maxImageLength),
		}),
		"shareVolumePolicy":       policy,
		"shareVolumeDevicePolicy": policy,
		"transferEnv": list(obj("TransferEnvVar", map[string]*apiservercel.DeclType{
			"sourceContainerName": str(maxNameLength),
		}), maxTransferEnv),
		"resourcesPolicy": obj("ResourcesPolicy", map[string]*apiservercel.DeclType{
			"targetContainersMode": str(maxEnumLength),
		}),
	})
	volume := obj("Volume", map[string]*apiservercel.DeclType{
		"name": str(maxNameLength),
		"persistentVolumeClaim": obj("PersistentVolumeClaimVolumeSource", map[string]*apiservercel.DeclType{
			"claimName": str(maxNameLength),
		}),
		"ephemeral": obj("EphemeralVolumeSource", map[string]*apiservercel.DeclType{}),
	})
	spec := obj("SidecarSetSpec", map[string]*apiservercel.DeclType{
		"initContainers": list(container, maxSidecars),
		"containers":     list(container, maxSidecars),
		"volumes":        list(volume, maxVolumes),
		"updateStrategy": obj("SidecarSetUpdateStrategy", map[string]*apiservercel.DeclType{
			"type":   str(maxEnumLength),
			"paused": apiservercel.BoolType,
		}),
		"patchPodMetadata": list(obj("SidecarSetPatchPodMetadata", map[string]*apiservercel.DeclType{
			"annotations": stringMap(str(maxAnnotationKey), str(maxAnnotationValue), maxPatchAnnotations),
			"patchPolicy": str(maxEnumLength),
		}), maxPatchEntries),
	})
	meta := obj("ObjectMeta", map[string]*apiservercel.DeclType{
		"name":        str(maxNameLength),
		"labels":      stringMap(str(maxAnnotationKey), str(maxLabelValue), maxMetadataEntries),
		"annotations": stringMap(str(maxAnnotationKey), str(maxAnnotationValue), maxMetadataEntries),
	})
	return obj("SidecarSet", map[string]*apiservercel.DeclType{
		"apiVersion": str(maxNameLength),
		"kind":       str(maxEnumLength),
		"metadata":   meta,
		"spec":       spec,
	})
}

// normalize adds an empty value for every declared list or map field that is
// absent from an object (Go's omitempty drops them), so rules read
// object.spec.containers without a has() guard. Absent scalar and object
// fields stay absent: their presence means something. The input is modified
// in place and must be owned by the caller.
func normalize(value any, t *apiservercel.DeclType) {
	switch {
	case t.IsObject():
		m, ok := value.(map[string]any)
		if !ok {
			return
		}
		for name, f := range t.Fields {
			v, present := m[name]
			switch {
			case present && v != nil:
				normalize(v, f.Type)
			case f.Type.IsList():
				m[name] = []any{}
			case f.Type.IsMap():
				m[name] = map[string]any{}
			case present:
				delete(m, name) // an explicit null reads as absent
			}
		}
	case t.IsList():
		l, ok := value.([]any)
		if !ok {
			return
		}
		for _, item := range l {
			normalize(item, t.ElemType)
		}
	case t.IsMap():
		m, ok := value.(map[string]any)
		if !ok {
			return
		}
		for _, item := range m {
			normalize(item, t.ElemType)
		}
	}
}
