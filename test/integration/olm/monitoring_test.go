package olm_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// monitoringGroup is the Prometheus Operator's API group: the bundle's
// ServiceMonitor and PrometheusRule need its CRDs on the cluster, as OLM
// creates the bundle's manifests only where their kinds are served.
const monitoringGroup = "monitoring.coreos.com"

// serveMonitoringKinds makes the API server serve the Prometheus Operator's
// kinds the manifests use, as on a cluster that runs it: stand-in CRDs that
// accept any content (test/monitoring decodes the shipped objects strictly
// into the Prometheus Operator's types; here only their installation by OLM
// is at stake). It returns the kinds it installed.
func serveMonitoringKinds(ctx context.Context, c client.Client, manifests []*unstructured.Unstructured) ([]string, error) {
	var kinds []string
	for _, m := range manifests {
		gvk := m.GroupVersionKind()
		if gvk.Group != monitoringGroup {
			continue
		}
		plural := strings.ToLower(gvk.Kind) + "s"
		crd := &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: plural + "." + monitoringGroup},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: monitoringGroup,
				Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: gvk.Kind, ListKind: gvk.Kind + "List", Plural: plural, Singular: strings.ToLower(gvk.Kind)},
				Scope: apiextensionsv1.NamespaceScoped,
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
					Name: gvk.Version, Served: true, Storage: true,
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
						Type: "object", XPreserveUnknownFields: new(true),
					}},
				}},
			},
		}
		if err := client.IgnoreAlreadyExists(c.Create(ctx, crd)); err != nil {
			return nil, err
		}
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			got := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, types.NamespacedName{Name: crd.Name}, got); err != nil {
				return false, err
			}
			for _, cond := range got.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return nil, fmt.Errorf("CRD %s not established: %w", crd.Name, err)
		}
		kinds = append(kinds, gvk.Kind)
	}
	return kinds, nil
}
