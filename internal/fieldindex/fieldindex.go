// Package fieldindex registers the cache indexes shared by the webhooks and
// the controllers, so that a pod admission touches only the SidecarSets that
// can apply to its namespace, and a reconcile touches only its own pods and
// revisions.
package fieldindex

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sidecarset-operator/sidecarset-operator/api/match"
	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	appsv1alpha1 "github.com/sidecarset-operator/sidecarset-operator/api/v1alpha1"
)

const (
	// SidecarSetByNamespace indexes SidecarSets by the namespace they are
	// pinned to, or match.ClusterScope.
	SidecarSetByNamespace = "sidecarset.namespace"
	// PodBySidecarSet indexes pods by the SidecarSets in their
	// kruise.io/sidecarset-injected-list annotation.
	PodBySidecarSet = "pod.sidecarsets"
	// RevisionBySidecarSet indexes ControllerRevisions by the
	// kruise.io/sidecarset-name label.
	RevisionBySidecarSet = "controllerrevision.sidecarset"
)

// Setup registers every index with the manager's field indexer.
func Setup(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, &appsv1alpha1.SidecarSet{}, SidecarSetByNamespace, func(o client.Object) []string {
		return match.IndexValues(o.(*appsv1alpha1.SidecarSet))
	}); err != nil {
		return err
	}
	if err := indexer.IndexField(ctx, &corev1.Pod{}, PodBySidecarSet, func(o client.Object) []string {
		return podstate.DecodeInjectedList(o.GetAnnotations()[appsv1alpha1.SidecarSetListAnnotation])
	}); err != nil {
		return err
	}
	return indexer.IndexField(ctx, &appsv1.ControllerRevision{}, RevisionBySidecarSet, func(o client.Object) []string {
		if name := o.GetLabels()[appsv1alpha1.SidecarSetNameLabel]; name != "" {
			return []string{name}
		}
		return nil
	})
}
