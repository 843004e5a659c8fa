package validation

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

func TestValidateSidecarSet_Entry(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		s    *appsv1beta1.SidecarSet
		want field.ErrorList
	}{
		{
			name: "a complete SidecarSet like the Kruise documentation example is accepted",
			s: newSidecarSet("test-sidecarset", "nginx", func(s *appsv1beta1.SidecarSet) {
				s.Spec.Containers[0].Command = []string{"sleep", "999d"}
				s.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "log-volume", MountPath: "/var/log"}}
				s.Spec.Volumes = []corev1.Volume{{Name: "log-volume", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
				s.Spec.InitContainers = []appsv1beta1.SidecarContainer{nativeSidecar("istio-proxy", "istio/proxyv2:1.27")}
				s.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry"}}
				s.Spec.PatchPodMetadata = []appsv1beta1.SidecarSetPatchPodMetadata{{Annotations: map[string]string{"example.com/a": "1"}}}
			}),
		},
		{
			name: "errors of every stage are reported together, sorted by field path",
			s: newSidecarSet("Bad", "nginx", func(s *appsv1beta1.SidecarSet) {
				s.Spec.Volumes = []corev1.Volume{{Name: "V"}}
				s.Spec.Containers[0].Image = ""
			}),
			want: field.ErrorList{
				field.Invalid(field.NewPath("metadata", "name"), "Bad",
					"must consist of lowercase letters, digits and '-', and start and end with a letter or digit "+
						"(regex ^[a-z0-9]([-a-z0-9]*[a-z0-9])?$), such as 'istio-proxy': the name is copied into label "+
						"values and pod annotations, which must stay valid"),
				field.Required(c0.Child("image"), "a sidecar needs an image: it is injected into pods as is"),
				field.Invalid(field.NewPath("spec", "volumes").Index(0).Child("name"), "V",
					"a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "+
						"and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "+
						"'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"),
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			errs, warnings := ValidateSidecarSet(tc.s, nil, Options{})
			checkErrors(t, tc.want, errs)
			checkWarnings(t, nil, warnings)
		})
	}
}

func TestValidateSidecarSet_NilIsAnInternalError(t *testing.T) {
	t.Parallel()
	errs, warnings := ValidateSidecarSet(nil, nil, Options{})
	got := errs.ToAggregate().Error()
	if want := field.InternalError(nil, errors.New("no SidecarSet to validate")).Error(); got != want {
		t.Errorf("error = %q, want %q", got, want)
	}
	checkWarnings(t, nil, warnings)
}

func TestValidateSidecarSet_DoesNotModifyInputs(t *testing.T) {
	t.Parallel()
	s := newSidecarSet("mine", "nginx", withVolumes(corev1.Volume{Name: "v"}))
	s.Spec.Volumes[0].VolumeSource = corev1.VolumeSource{} // undefaulted on purpose
	old := s.DeepCopy()
	old.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}}
	other := newSidecarSet("other", "nginx", withContainers(sidecar("x", "x:1")), withVolumes(corev1.Volume{Name: "v"}))
	other.Spec.Volumes[0].VolumeSource = corev1.VolumeSource{}
	sBefore, oldBefore, otherBefore := s.DeepCopy(), old.DeepCopy(), other.DeepCopy()

	errs, _ := ValidateSidecarSet(s, old, Options{Others: []*appsv1beta1.SidecarSet{other}})

	for _, c := range []struct {
		name      string
		got, want *appsv1beta1.SidecarSet
	}{{"new", s, sBefore}, {"old", old, oldBefore}, {"other", other, otherBefore}} {
		if diff := cmpDiffSidecarSet(c.want, c.got); diff != "" {
			t.Errorf("%s SidecarSet modified (-want +got):\n%s", c.name, diff)
		}
	}
	want := field.ErrorList{field.Required(field.NewPath("spec", "volumes").Index(0), "exactly one of hostPath, emptyDir, "+
		"gcePersistentDisk, awsElasticBlockStore, gitRepo, secret, nfs, iscsi, glusterfs, persistentVolumeClaim, rbd, "+
		"flexVolume, cinder, cephfs, flocker, downwardAPI, fc, azureFile, configMap, vsphereVolume, quobyte, azureDisk, "+
		"photonPersistentDisk, projected, portworxVolume, scaleIO, storageos, csi, ephemeral, image must be set")}
	checkErrors(t, want, errs)
}
