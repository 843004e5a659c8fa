// Package generate builds the OLM bundle (bundle/ and bundle.Dockerfile) from
// config/manifests: it runs kustomize in-process and folds the operator's
// Deployment, RBAC and webhook configurations into the ClusterServiceVersion
// the way OLM expects them. Output is deterministic: sorted keys, no clock
// (createdAt comes from config/manifests/releases.yaml or the options).
package generate

import (
	"path/filepath"

	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// Locations of the inputs, relative to the repository root.
const (
	ManifestsDir = "config/manifests"
	ReleasesFile = "config/manifests/releases.yaml"
	IconFile     = "config/manifests/icon.svg"
)

// Generate builds the bundle of the repository at root.
func Generate(fsys filesys.FileSystem, root string, o Options) (Files, error) {
	releasesData, err := fsys.ReadFile(filepath.Join(root, ReleasesFile))
	if err != nil {
		return nil, err
	}
	releases, err := ParseReleases(releasesData)
	if err != nil {
		return nil, err
	}
	icon, err := fsys.ReadFile(filepath.Join(root, IconFile))
	if err != nil {
		return nil, err
	}
	objects, err := Kustomize(fsys, filepath.Join(root, ManifestsDir))
	if err != nil {
		return nil, err
	}
	return Assemble(Inputs{Objects: objects, Releases: releases, Icon: icon, Options: o})
}
