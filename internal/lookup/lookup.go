// Package lookup holds the cache reads the pod webhook and the controller
// both make to apply the pod-state rules: a namespace's labels (for
// namespaceSelector matching, api/match) and the ControllerRevision a
// SidecarSet pins (api/revision). The decisions stay in api/; this package
// only fetches their inputs, so both shells fetch them the same way. It
// also asks the API server whether it serves pods/resize, which the
// manager and the kubectl plugin's plan both need.
package lookup

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sidecarset-operator/sidecarset-operator/api/revision"
	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/internal/fieldindex"
)

// NamespaceLabels returns a namespace's labels from the metadata cache
// (match.Namespace adds the kubernetes.io/metadata.name label if they lack
// it). A namespace the reader does not have is an error that
// apierrors.IsNotFound recognises: the pod webhook then reads it from the
// API server (the cache may lag a new namespace), the controller counts the
// namespace as having no labels (its pods are on their way out).
func NamespaceLabels(ctx context.Context, reader client.Reader, name string) (map[string]string, error) {
	ns, err := Namespace(ctx, reader, name)
	if err != nil {
		return nil, err
	}
	return ns.GetLabels(), nil
}

// Namespace returns a namespace's metadata (labels, UID) from the reader,
// as NamespaceLabels: the UID tells whether a SidecarSet that records it
// applies there (match.SameNamespace).
func Namespace(ctx context.Context, reader client.Reader, name string) (*metav1.PartialObjectMetadata, error) {
	ns := NamespaceMetadata()
	if err := reader.Get(ctx, types.NamespacedName{Name: name}, ns); err != nil {
		return nil, err
	}
	return ns, nil
}

// PinnedRevision returns the ControllerRevision a SidecarSet's
// injectionStrategy.revision names, from the cache of the operator's
// namespace, or nil when nothing is pinned. Unlike OpenKruise, a
// revisionName must be this SidecarSet's own, by label and by controller
// (revision.CheckOwned), and a customVersion resolves to the newest
// revision this SidecarSet owns (revision.NewestWithCustomVersion), never to
// one left by an earlier SidecarSet of the same name.
func PinnedRevision(ctx context.Context, reader client.Reader, namespace string, s *appsv1beta1.SidecarSet) (*appsv1.ControllerRevision, error) {
	pin := s.Spec.InjectionStrategy.Revision
	switch {
	case pin == nil:
		return nil, nil
	case pin.RevisionName != nil:
		rev := &appsv1.ControllerRevision{}
		if err := reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: *pin.RevisionName}, rev); err != nil {
			return nil, fmt.Errorf("ControllerRevision %s/%s: %w", namespace, *pin.RevisionName, err)
		}
		if err := revision.CheckOwned(rev, s); err != nil {
			return nil, err
		}
		return rev, nil
	case pin.CustomVersion != nil:
		revisions, err := fieldindex.ListRevisions(ctx, reader, namespace, s.Name)
		if err != nil {
			return nil, err
		}
		newest := revision.NewestWithCustomVersion(s, *pin.CustomVersion, revisions)
		if newest == nil {
			return nil, fmt.Errorf("no ControllerRevision of SidecarSet %q in %s has %s=%s", s.Name, namespace, appsv1beta1.SidecarSetCustomVersionLabel, *pin.CustomVersion)
		}
		return newest, nil
	default:
		return nil, fmt.Errorf("injectionStrategy.revision names neither a revisionName nor a customVersion")
	}
}

// ServesPodResize reports whether the API server serves the pods/resize
// subresource (Kubernetes 1.33 and later), through which the rollout
// resizes sidecars in place.
func ServesPodResize(d discovery.DiscoveryInterface) (bool, error) {
	list, err := d.ServerResourcesForGroupVersion("v1")
	if err != nil {
		return false, err
	}
	for _, r := range list.APIResources {
		if r.Name == "pods/resize" {
			return true, nil
		}
	}
	return false, nil
}

// NamespaceMetadata is an empty namespace as metadata: the object through
// which the cache reads namespaces (the informer NamespaceLabels reads).
func NamespaceMetadata() *metav1.PartialObjectMetadata {
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	return ns
}
