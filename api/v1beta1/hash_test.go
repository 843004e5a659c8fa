package v1beta1

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The three hash vectors published in the reference behaviour (and asserted
// by OpenKruise's own unit tests). They pin the hash bit for bit.
func TestComputeHashes_PublishedVectors(t *testing.T) {
	t.Parallel()
	always := corev1.ContainerRestartPolicyAlways
	tests := []struct {
		name             string
		spec             SidecarSetSpec
		defaulted        bool
		wantHash         string
		wantWithoutImage string
	}{
		{
			name: "one container without defaults; a plain init container is ignored",
			spec: SidecarSetSpec{
				Containers:     []SidecarContainer{{Container: corev1.Container{Name: "container1", Image: "test-image"}}},
				InitContainers: []SidecarContainer{{Container: corev1.Container{Name: "init-1", Image: "init-image"}}},
			},
			wantHash:         "w26c4x8fz245642fdv499b464248f974xddx4x55z5dw55bc6x66464fxz77dc78",
			wantWithoutImage: "8wzddb4dvv9c6x8zdc77z4z75987424f457dfv6724ddw6zbdx467wz5x24fc759",
		},
		{
			name: "a native sidecar init container is part of the hash",
			spec: SidecarSetSpec{
				Containers:     []SidecarContainer{{Container: corev1.Container{Name: "container1", Image: "test-image"}}},
				InitContainers: []SidecarContainer{{Container: corev1.Container{Name: "container1", Image: "test-image", RestartPolicy: &always}}},
			},
			wantHash:         "4xwx4d4844vd4v9x79wb4xbxf4xb29475cc4446v8cz2c2f2f5c5bw448vd42z8w",
			wantWithoutImage: "5725fw8bwbx249bw57v5892c847dzf48bww9zb7c86xb95264fdz26654847b2c8",
		},
		{
			name: "one container after full defaulting",
			spec: SidecarSetSpec{
				Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"app": "dns"}},
				Containers: []SidecarContainer{{Container: corev1.Container{Name: "dns-f", Image: "dns:1.0"}}},
			},
			defaulted:        true,
			wantHash:         "6wbd76bd7984x24fb4f44fv9222cw9v9bcf85x766744wddd4zwx927zzz2zb684",
			wantWithoutImage: "82684vwf9d4cb4wz4vffx4ddfbb47ww4z4wwxdbwb8w2zbb7zvf4524cdd49bv94",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := &SidecarSet{Spec: tc.spec}
			if tc.defaulted {
				SetDefaults(s)
			}
			got, err := ComputeHashes(&s.Spec)
			if err != nil {
				t.Fatalf("ComputeHashes: %v", err)
			}
			if got.Hash != tc.wantHash {
				t.Errorf("hash = %s, want %s", got.Hash, tc.wantHash)
			}
			if got.WithoutImage != tc.wantWithoutImage {
				t.Errorf("hash without image = %s, want %s", got.WithoutImage, tc.wantWithoutImage)
			}
		})
	}
}

// The defaulted JSON of the third vector, as the reference behaviour spells
// it out: a change of field order or defaulting shows up here first.
func TestSetDefaults_HashedJSONOfDefaultedContainer(t *testing.T) {
	t.Parallel()
	s := &SidecarSet{Spec: SidecarSetSpec{
		Containers: []SidecarContainer{{Container: corev1.Container{Name: "dns-f", Image: "dns:1.0"}}},
	}}
	SetDefaults(s)
	got, err := json.Marshal(map[string][]SidecarContainer{"containers": s.Spec.Containers})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"containers":[{"name":"dns-f","image":"dns:1.0","resources":{},"terminationMessagePath":"/dev/termination-log",` +
		`"terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent","podInjectPolicy":"BeforeAppContainer",` +
		`"upgradeStrategy":{"upgradeType":"ColdUpgrade"},"shareVolumePolicy":{"type":"disabled"}}]}`
	if string(got) != want {
		t.Errorf("defaulted JSON\n got %s\nwant %s", got, want)
	}
}

func TestComputeHashes_ImageOnlyChangeKeepsWithoutImageHash(t *testing.T) {
	t.Parallel()
	spec := func(image string) *SidecarSetSpec {
		s := &SidecarSet{Spec: SidecarSetSpec{Containers: []SidecarContainer{{Container: corev1.Container{
			Name: "sidecar1", Image: image, Command: []string{"sleep", "999d"},
		}}}}}
		SetDefaults(s)
		return &s.Spec
	}
	a, err := ComputeHashes(spec("centos:6.7"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := ComputeHashes(spec("centos:7"))
	if err != nil {
		t.Fatal(err)
	}
	if a.Hash == b.Hash {
		t.Errorf("hash did not change with the image: %s", a.Hash)
	}
	if a.WithoutImage != b.WithoutImage {
		t.Errorf("hash without image changed with the image: %s != %s", a.WithoutImage, b.WithoutImage)
	}
	if len(a.Hash) != 64 || len(a.WithoutImage) != 64 {
		t.Errorf("hash lengths = %d, %d; want 64", len(a.Hash), len(a.WithoutImage))
	}
}

func TestDefaultPullPolicy(t *testing.T) {
	t.Parallel()
	tests := []struct {
		image string
		want  corev1.PullPolicy
	}{
		{"nginx", corev1.PullAlways},
		{"nginx:latest", corev1.PullAlways},
		{"docker.io/library/nginx:latest", corev1.PullAlways},
		{"nginx:1.25", corev1.PullIfNotPresent},
		{"registry:5000/team/app:v2", corev1.PullIfNotPresent},
		{"nginx@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", corev1.PullIfNotPresent},
		{"", corev1.PullIfNotPresent},
		{"Not A Reference", corev1.PullIfNotPresent},
	}
	for _, tc := range tests {
		if got := DefaultPullPolicy(tc.image); got != tc.want {
			t.Errorf("DefaultPullPolicy(%q) = %s, want %s", tc.image, got, tc.want)
		}
	}
}

func TestHashedFieldChanges(t *testing.T) {
	t.Parallel()
	base := func() SidecarContainer {
		return SidecarContainer{
			Container: corev1.Container{
				Name: "agent", Image: "agent:1", Command: []string{"agent"},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}},
			},
			PodInjectPolicy: BeforeAppContainerType,
		}
	}
	tests := []struct {
		name   string
		change func(*SidecarContainer)
		want   []string
	}{
		{name: "no change is nothing", change: func(*SidecarContainer) {}},
		{name: "a new image is the image", change: func(c *SidecarContainer) { c.Image = "agent:2" }, want: []string{"image"}},
		{name: "an added env list is env", change: func(c *SidecarContainer) {
			c.Env = []corev1.EnvVar{{Name: "A", Value: "1"}}
		}, want: []string{"env"}},
		{name: "a removed command is command", change: func(c *SidecarContainer) { c.Command = nil }, want: []string{"command"}},
		{name: "an empty env list is no change, as in the hash", change: func(c *SidecarContainer) { c.Env = []corev1.EnvVar{} }},
		{name: "the same quantity written another way is a change, as in the hash", change: func(c *SidecarContainer) {
			c.Resources.Requests[corev1.ResourceMemory] = resource.MustParse("1073741824")
		}, want: []string{"resources"}},
		{name: "container fields come before sidecar fields, in declaration order", change: func(c *SidecarContainer) {
			c.TransferEnv = []TransferEnvVar{{SourceContainerName: "main", EnvName: "A"}}
			c.UpgradeStrategy.UpgradeType = SidecarContainerHotUpgrade
			c.Args = []string{"-v"}
			c.Image = "agent:2"
		}, want: []string{"image", "args", "upgradeStrategy", "transferEnv"}},
		{name: "a sidecar field back to its zero value is named", change: func(c *SidecarContainer) { c.PodInjectPolicy = "" },
			want: []string{"podInjectPolicy"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			before := base()
			now := base()
			now.Resources = *before.Resources.DeepCopy()
			tc.change(&now)
			got, err := HashedFieldChanges(&now, &before)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("changed fields (-want +got):\n%s", diff)
			}
			// The answer is the hash's: the hash changes exactly when a
			// field does, the without-image hash when a field but the
			// image does.
			h0, err := ComputeHashes(&SidecarSetSpec{Containers: []SidecarContainer{before}})
			if err != nil {
				t.Fatal(err)
			}
			h1, err := ComputeHashes(&SidecarSetSpec{Containers: []SidecarContainer{now}})
			if err != nil {
				t.Fatal(err)
			}
			notImage := slices.DeleteFunc(slices.Clone(got), func(f string) bool { return f == "image" })
			if (h0.Hash != h1.Hash) != (len(got) > 0) {
				t.Errorf("hash changed: %t, but changed fields %v", h0.Hash != h1.Hash, got)
			}
			if (h0.WithoutImage != h1.WithoutImage) != (len(notImage) > 0) {
				t.Errorf("without-image hash changed: %t, but changed fields other than the image %v", h0.WithoutImage != h1.WithoutImage, notImage)
			}
		})
	}
}
