package main

import (
	"fmt"
	"net/url"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The krew index's plugin manifest format
// (krew.googlecontainertools.github.com/v1alpha2, kind Plugin): the fields
// this plugin's manifest uses.
const (
	krewAPIVersion = "krew.googlecontainertools.github.com/v1alpha2"
	krewKind       = "Plugin"
	// krewName is the plugin's name: kubectl sidecarset.
	krewName = "sidecarset"
)

// KrewPlugin is a krew plugin manifest.
type KrewPlugin struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              KrewPluginSpec `json:"spec"`
}

// KrewPluginSpec is what krew installs.
type KrewPluginSpec struct {
	Version          string         `json:"version"`
	Homepage         string         `json:"homepage,omitempty"`
	ShortDescription string         `json:"shortDescription"`
	Description      string         `json:"description,omitempty"`
	Platforms        []KrewPlatform `json:"platforms"`
}

// KrewPlatform is one platform's archive.
type KrewPlatform struct {
	Selector *metav1.LabelSelector `json:"selector"`
	URI      string                `json:"uri"`
	Sha256   string                `json:"sha256"`
	Files    []KrewFile            `json:"files"`
	Bin      string                `json:"bin"`
}

// KrewFile is a file krew copies out of the archive.
type KrewFile struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// Archive is a built plugin archive.
type Archive struct {
	OS, Arch string
	// Name is the file's name (in dist/ and in the release's downloads).
	Name string
	// Sha256 is the file's SHA-256, hex.
	Sha256 string
}

// krewManifest builds the plugin's krew manifest for a release whose
// archives are downloaded from downloadBase (the release's URL, ending
// before the file name).
func krewManifest(version, homepage, downloadBase string, archives []Archive) (*KrewPlugin, error) {
	if len(archives) == 0 {
		return nil, fmt.Errorf("no archives")
	}
	p := &KrewPlugin{
		TypeMeta:   metav1.TypeMeta{APIVersion: krewAPIVersion, Kind: krewKind},
		ObjectMeta: metav1.ObjectMeta{Name: krewName},
		Spec: KrewPluginSpec{
			Version:          version,
			Homepage:         homepage,
			ShortDescription: "Explain, preview and roll out SidecarSets' sidecar injection",
			Description: "kubectl sidecarset explains which SidecarSets (apps.kruise.io) select a pod and why the others do not,\n" +
				"injects manifests offline as the SidecarSet operator's pod webhook would, plans the next rollout of a\n" +
				"SidecarSet pod by pod, and follows, undoes, pauses and resumes rollouts. It runs the operator's own code:\n" +
				"install the plugin of the operator's release (kubectl sidecarset version compares them).\n",
		},
	}
	for _, a := range archives {
		uri, err := url.JoinPath(downloadBase, a.Name)
		if err != nil {
			return nil, err
		}
		if len(a.Sha256) != 64 || strings.Trim(a.Sha256, "0123456789abcdef") != "" {
			return nil, fmt.Errorf("%s: sha256 %q is not 64 lowercase hex digits", a.Name, a.Sha256)
		}
		p.Spec.Platforms = append(p.Spec.Platforms, KrewPlatform{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"os": a.OS, "arch": a.Arch}},
			URI:      uri,
			Sha256:   a.Sha256,
			Files:    []KrewFile{{From: pluginBinary, To: "."}, {From: "LICENSE", To: "."}},
			Bin:      pluginBinary,
		})
	}
	return p, nil
}
