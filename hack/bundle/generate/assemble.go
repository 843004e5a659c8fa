package generate

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/distribution/reference"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/sidecarset-operator/sidecarset-operator/hack/bundle/csv"
)

// Inputs are everything the bundle is made of.
type Inputs struct {
	// Objects is the output of kustomize build config/manifests.
	Objects []*unstructured.Unstructured
	// Releases are config/manifests/releases.yaml.
	Releases []Release
	// Icon is config/manifests/icon.svg.
	Icon []byte
	// Options choose the version, image and channels.
	Options Options
}

// Assemble builds the bundle's files from the kustomize output: a pure
// function of its inputs, so the same inputs give byte-identical files.
func Assemble(in Inputs) (Files, error) {
	o, err := resolve(in.Options, in.Releases)
	if err != nil {
		return nil, err
	}
	s, err := classify(in.Objects)
	if err != nil {
		return nil, err
	}
	c, err := decodeBase(s.base)
	if err != nil {
		return nil, err
	}
	deployments, err := typedDeployments(s.deployments)
	if err != nil {
		return nil, err
	}
	image, err := setManagerImage(deployments, o)
	if err != nil {
		return nil, err
	}
	services := make([]*corev1.Service, 0, len(s.services))
	for _, u := range s.services {
		svc := &corev1.Service{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, svc, true); err != nil {
			return nil, fmt.Errorf("reading Service %s: %w", u.GetName(), err)
		}
		services = append(services, svc)
	}
	webhooks, webhookServices, err := webhookDefinitions(s.webhooks, services, deployments)
	if err != nil {
		return nil, err
	}
	conversions, conversionServices, err := conversionDefinitions(s.crds, services, deployments)
	if err != nil {
		return nil, err
	}
	webhooks = append(webhooks, conversions...)
	for name := range conversionServices {
		webhookServices[name] = true
	}
	accounts := map[string]bool{}
	for _, d := range deployments {
		accounts[serviceAccount(d)] = true
	}
	rbac, err := foldRBAC(s.rbac, accounts)
	if err != nil {
		return nil, err
	}
	if c.Spec.CustomResourceDefinitions.Owned, err = ownedPerVersion(c.Spec.CustomResourceDefinitions.Owned, s.crds); err != nil {
		return nil, err
	}
	if err := checkOwned(c, s.crds); err != nil {
		return nil, err
	}
	examples, err := almExamples(s.examples)
	if err != nil {
		return nil, err
	}

	c.Metadata.Name = o.pkg + ".v" + o.version.String()
	c.Spec.Version = o.version.String()
	if c.Spec.Replaces == "" {
		c.Spec.Replaces = o.replaces
	}
	if c.Metadata.Annotations == nil {
		c.Metadata.Annotations = map[string]string{}
	}
	c.Metadata.Annotations[csv.AnnotationCreatedAt] = o.createdAt
	c.Metadata.Annotations[csv.AnnotationContainerImage] = image
	c.Metadata.Annotations[csv.AnnotationALMExamples] = examples
	if len(in.Icon) > 0 {
		c.Spec.Icon = []csv.Icon{{Data: base64.StdEncoding.EncodeToString(in.Icon), MediaType: "image/svg+xml"}}
	}
	c.Spec.Install = csv.Install{Strategy: csv.InstallStrategyDeployment, Spec: csv.InstallStrategy{
		ClusterPermissions: rbac.clusterPermissions,
	}}
	for _, d := range deployments {
		c.Spec.Install.Spec.Deployments = append(c.Spec.Install.Spec.Deployments,
			csv.DeploymentSpec{Name: d.Name, Spec: d.Spec, Label: d.Labels})
	}
	c.Spec.WebhookDefinitions = webhooks
	c.Spec.RelatedImages = relatedImages(deployments)

	var manifests []*unstructured.Unstructured
	manifests = append(manifests, s.crds...)
	manifests = append(manifests, s.others...)
	manifests = append(manifests, rbac.kept...)
	for _, u := range s.services {
		if !webhookServices[u.GetName()] {
			manifests = append(manifests, u)
		}
	}
	for _, u := range s.accounts {
		if !accounts[u.GetName()] {
			manifests = append(manifests, u)
		}
	}
	return render(o, c, manifests, s.scorecard)
}

func decodeBase(u *unstructured.Unstructured) (*csv.ClusterServiceVersion, error) {
	data, err := json.Marshal(u.Object)
	if err != nil {
		return nil, err
	}
	return csv.Decode(data)
}

func typedDeployments(objects []*unstructured.Unstructured) ([]*appsv1.Deployment, error) {
	out := make([]*appsv1.Deployment, 0, len(objects))
	for _, u := range objects {
		d := &appsv1.Deployment{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, d, true); err != nil {
			return nil, fmt.Errorf("reading Deployment %s: %w", u.GetName(), err)
		}
		out = append(out, d)
	}
	return out, nil
}

func serviceAccount(d *appsv1.Deployment) string {
	if sa := d.Spec.Template.Spec.ServiceAccountName; sa != "" {
		return sa
	}
	return "default"
}

// setManagerImage sets the image of the manager (the first container of the
// first deployment, and every container running the same image) to the
// chosen image: Options.Image, or by default the configured image retagged
// v<version>, so that a bundle always names the release it describes.
func setManagerImage(deployments []*appsv1.Deployment, o resolved) (string, error) {
	containers := deployments[0].Spec.Template.Spec.Containers
	if len(containers) == 0 {
		return "", fmt.Errorf("deployment %s has no container", deployments[0].Name)
	}
	current := containers[0].Image
	image := o.image
	if image == "" {
		named, err := reference.ParseNormalizedNamed(current)
		if err != nil {
			return "", fmt.Errorf("manager image %q: %w", current, err)
		}
		tagged, err := reference.WithTag(reference.TrimNamed(named), "v"+o.version.String())
		if err != nil {
			return "", err
		}
		image = reference.FamiliarString(tagged)
	}
	if _, err := reference.ParseNormalizedNamed(image); err != nil {
		return "", fmt.Errorf("image %q: %w", image, err)
	}
	for _, d := range deployments {
		for i := range d.Spec.Template.Spec.Containers {
			if d.Spec.Template.Spec.Containers[i].Image == current {
				d.Spec.Template.Spec.Containers[i].Image = image
			}
		}
	}
	return image, nil
}

// relatedImages lists every container and init container image of the
// deployments once, named after the first container running it.
func relatedImages(deployments []*appsv1.Deployment) []csv.RelatedImage {
	seen := map[string]bool{}
	var out []csv.RelatedImage
	for _, d := range deployments {
		spec := d.Spec.Template.Spec
		for _, c := range append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...) {
			if !seen[c.Image] {
				seen[c.Image] = true
				out = append(out, csv.RelatedImage{Name: c.Name, Image: c.Image})
			}
		}
	}
	return out
}

// checkOwned requires the owned APIs of the CSV base and the CRDs to be the
// same set, each owned entry naming a version and kind the CRD serves.
func checkOwned(c *csv.ClusterServiceVersion, crds []*unstructured.Unstructured) error {
	byName := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, u := range crds {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd); err != nil {
			return fmt.Errorf("CustomResourceDefinition %s: %w", u.GetName(), err)
		}
		byName[crd.Name] = crd
	}
	owned := map[string]bool{}
	for _, d := range c.Spec.CustomResourceDefinitions.Owned {
		owned[d.Name] = true
		crd, ok := byName[d.Name]
		if !ok {
			return fmt.Errorf("the CSV owns %s but no such CRD is in the kustomization", d.Name)
		}
		if crd.Spec.Names.Kind != d.Kind || !serves(crd, d.Version) {
			return fmt.Errorf("the CSV owns %s %s/%s but the CRD serves kind %s", d.Name, d.Version, d.Kind, crd.Spec.Names.Kind)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		if !owned[name] {
			return fmt.Errorf("CRD %s is not listed in the CSV's owned customresourcedefinitions", name)
		}
	}
	return nil
}

func serves(crd *apiextensionsv1.CustomResourceDefinition, version string) bool {
	for _, v := range crd.Spec.Versions {
		if v.Name == version && v.Served {
			return true
		}
	}
	return false
}

// almExamples is the alm-examples annotation: the custom resources of
// config/samples as an indented JSON list (keys sorted).
func almExamples(examples []*unstructured.Unstructured) (string, error) {
	list := make([]map[string]any, 0, len(examples))
	for _, u := range examples {
		list = append(list, maps.Clone(u.Object))
	}
	data, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return "", err
	}
	return string(data), nil
}
