// Package fieldindex registers the cache indexes shared by the webhooks and
// the controllers, so that a reconcile touches only its own pods and
// revisions, and a pinned revision is found without listing every revision.
// (The pod webhook finds a pod's candidate SidecarSets in its own registry,
// api/candidate, bucketed by namespace and label.)
package fieldindex

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sidecarset-operator/sidecarset-operator/api/podstate"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
)

const (
	// PodBySidecarSet indexes pods by the SidecarSets in their
	// kruise.io/sidecarset-injected-list annotation.
	PodBySidecarSet = "pod.sidecarsets"
	// RevisionBySidecarSet indexes ControllerRevisions by the
	// kruise.io/sidecarset-name label.
	RevisionBySidecarSet = "controllerrevision.sidecarset"
)

// Setup registers every index with the manager's field indexer.
func Setup(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, &corev1.Pod{}, PodBySidecarSet, PodSidecarSets); err != nil {
		return err
	}
	return indexer.IndexField(ctx, &appsv1.ControllerRevision{}, RevisionBySidecarSet, RevisionSidecarSet)
}

// PodSidecarSets is the PodBySidecarSet extractor: the SidecarSets a pod's
// injected-list names.
func PodSidecarSets(o client.Object) []string {
	return podstate.DecodeInjectedList(o.GetAnnotations()[appsv1beta1.SidecarSetListAnnotation])
}

// RevisionSidecarSet is the RevisionBySidecarSet extractor: the SidecarSet
// a ControllerRevision's kruise.io/sidecarset-name label names.
func RevisionSidecarSet(o client.Object) []string {
	if name := o.GetLabels()[appsv1beta1.SidecarSetNameLabel]; name != "" {
		return []string{name}
	}
	return nil
}
