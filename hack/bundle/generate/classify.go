package generate

import (
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sidecarset-operator/sidecarset-operator/hack/bundle/csv"
	"github.com/sidecarset-operator/sidecarset-operator/hack/bundle/layout"
)

// sorted is the kustomize output split by what becomes of each object.
type sorted struct {
	// base is the hand-written CSV.
	base *unstructured.Unstructured
	// crds are the CustomResourceDefinitions (manifests/).
	crds []*unstructured.Unstructured
	// examples are the custom resources of owned CRDs (alm-examples).
	examples []*unstructured.Unstructured
	// scorecard is the scorecard Configuration (tests/scorecard/), or nil.
	scorecard *unstructured.Unstructured
	// deployments, webhook configurations, services, service accounts and
	// RBAC objects feed the install strategy and the webhook definitions;
	// what OLM does not create from the CSV is kept as a manifest.
	deployments []*unstructured.Unstructured
	webhooks    []*unstructured.Unstructured
	services    []*unstructured.Unstructured
	accounts    []*unstructured.Unstructured
	rbac        []*unstructured.Unstructured
	// others are supported objects copied to manifests/ as they are.
	others []*unstructured.Unstructured
}

const scorecardGroup = "scorecard.operatorframework.io"

// classify splits the kustomize output. The Namespace of config/default is
// dropped (OLM installs into the OperatorGroup's namespace); any other kind a
// bundle cannot carry is an error rather than a silent omission.
func classify(objects []*unstructured.Unstructured) (sorted, error) {
	var s sorted
	owned := map[schema.GroupKind]bool{}
	for _, o := range objects {
		if o.GetKind() != "CustomResourceDefinition" {
			continue
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, crd); err != nil {
			return s, fmt.Errorf("CustomResourceDefinition %s: %w", o.GetName(), err)
		}
		owned[schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}] = true
	}
	for _, o := range objects {
		gvk := o.GroupVersionKind()
		switch {
		case gvk.Kind == csv.Kind && gvk.GroupVersion().String() == csv.APIVersion:
			if s.base != nil {
				return s, fmt.Errorf("more than one ClusterServiceVersion: %s and %s", s.base.GetName(), o.GetName())
			}
			s.base = o
		case gvk.Kind == "CustomResourceDefinition":
			s.crds = append(s.crds, o)
		case owned[gvk.GroupKind()]:
			s.examples = append(s.examples, o)
		case gvk.Group == scorecardGroup && gvk.Kind == "Configuration":
			if s.scorecard != nil {
				return s, fmt.Errorf("more than one scorecard Configuration")
			}
			s.scorecard = o
		case gvk.Kind == "Namespace" && gvk.Group == "":
			// OLM installs into the namespace of the OperatorGroup.
		case gvk.Kind == "Deployment" && gvk.Group == "apps":
			s.deployments = append(s.deployments, o)
		case gvk.Group == "admissionregistration.k8s.io" &&
			(gvk.Kind == "MutatingWebhookConfiguration" || gvk.Kind == "ValidatingWebhookConfiguration"):
			s.webhooks = append(s.webhooks, o)
		case gvk.Kind == "Service" && gvk.Group == "":
			s.services = append(s.services, o)
		case gvk.Kind == "ServiceAccount" && gvk.Group == "":
			s.accounts = append(s.accounts, o)
		case gvk.Group == "rbac.authorization.k8s.io":
			s.rbac = append(s.rbac, o)
		case layout.Supported(gvk.Kind):
			s.others = append(s.others, o)
		default:
			return s, fmt.Errorf("%s %s cannot be part of an OLM bundle (supported: the CSV, CRDs and %s)",
				gvk.Kind, o.GetName(), "Secret, ConfigMap, RBAC, ServiceAccount, Service, PodDisruptionBudget, PriorityClass, NetworkPolicy, monitoring and console objects")
		}
	}
	if s.base == nil {
		return s, fmt.Errorf("no ClusterServiceVersion base in the kustomization")
	}
	if len(s.deployments) == 0 {
		return s, fmt.Errorf("no Deployment in the kustomization: the CSV would install nothing")
	}
	slices.SortStableFunc(s.webhooks, func(a, b *unstructured.Unstructured) int { return strings.Compare(a.GetName(), b.GetName()) })
	return s, nil
}
