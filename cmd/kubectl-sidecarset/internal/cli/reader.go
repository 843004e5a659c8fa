package cli

import (
	"context"
	"fmt"
	"maps"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sidecarset-operator/sidecarset-operator/api/match"
	"github.com/sidecarset-operator/sidecarset-operator/internal/fieldindex"
)

// stateReader serves the pod webhook's reads (decide.Injector.Reader)
// from what the plugin gathered, so that the webhook's own code runs on it:
// namespace metadata, and the ControllerRevisions of the operator's
// namespace with the manager's field indexes (internal/fieldindex).
type stateReader struct {
	namespaces map[string]map[string]string
	revisions  []appsv1.ControllerRevision
	indexes    map[string]client.IndexerFunc
}

var _ client.Reader = &stateReader{}

// newStateReader returns a reader over namespaces (name to labels) and
// revisions, indexed as the manager's cache is.
func newStateReader(ctx context.Context, namespaces map[string]map[string]string, revisions []appsv1.ControllerRevision) (*stateReader, error) {
	r := &stateReader{namespaces: namespaces, revisions: revisions, indexes: map[string]client.IndexerFunc{}}
	if err := fieldindex.Setup(ctx, indexRecorder{r}); err != nil {
		return nil, err
	}
	return r, nil
}

// indexRecorder keeps the ControllerRevision indexes the manager registers.
type indexRecorder struct{ r *stateReader }

func (i indexRecorder) IndexField(_ context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	if _, ok := obj.(*appsv1.ControllerRevision); ok {
		i.r.indexes[field] = extract
	}
	return nil
}

// Get reads a namespace's metadata or a ControllerRevision.
func (r *stateReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	switch o := obj.(type) {
	case *metav1.PartialObjectMetadata:
		if o.GetObjectKind().GroupVersionKind().Kind != "Namespace" {
			return fmt.Errorf("the plugin does not read %s metadata", o.GetObjectKind().GroupVersionKind().Kind)
		}
		labels, ok := r.namespaces[key.Name]
		if !ok {
			return apierrors.NewNotFound(corev1.Resource("namespaces"), key.Name)
		}
		o.SetName(key.Name)
		o.SetLabels(withNameLabel(key.Name, labels))
		return nil
	case *appsv1.ControllerRevision:
		i := slices.IndexFunc(r.revisions, func(rev appsv1.ControllerRevision) bool {
			return rev.Namespace == key.Namespace && rev.Name == key.Name
		})
		if i < 0 {
			return apierrors.NewNotFound(appsv1.Resource("controllerrevisions"), key.Name)
		}
		r.revisions[i].DeepCopyInto(o)
		return nil
	}
	return fmt.Errorf("the plugin does not read %T", obj)
}

// List lists ControllerRevisions by namespace, labels and indexed fields.
func (r *stateReader) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	revs, ok := list.(*appsv1.ControllerRevisionList)
	if !ok {
		return fmt.Errorf("the plugin does not list %T", list)
	}
	lo := &client.ListOptions{}
	lo.ApplyOptions(opts)
	revs.Items = nil
	for i := range r.revisions {
		rev := &r.revisions[i]
		if lo.Namespace != "" && rev.Namespace != lo.Namespace {
			continue
		}
		if lo.LabelSelector != nil && !lo.LabelSelector.Matches(labels.Set(rev.Labels)) {
			continue
		}
		ok, err := r.fieldsMatch(lo.FieldSelector, rev)
		if err != nil {
			return err
		}
		if ok {
			revs.Items = append(revs.Items, *rev.DeepCopy())
		}
	}
	return nil
}

func (r *stateReader) fieldsMatch(sel fields.Selector, rev *appsv1.ControllerRevision) (bool, error) {
	if sel == nil || sel.Empty() {
		return true, nil
	}
	for _, req := range sel.Requirements() {
		extract, ok := r.indexes[req.Field]
		if !ok {
			return false, fmt.Errorf("no index %q on ControllerRevisions", req.Field)
		}
		has := slices.Contains(extract(rev), req.Value)
		if (req.Operator == selection.NotEquals) == has {
			return false, nil
		}
	}
	return true, nil
}

// withNameLabel returns a namespace's labels with the
// kubernetes.io/metadata.name label every namespace carries.
func withNameLabel(name string, labels map[string]string) map[string]string {
	out := map[string]string{match.NamespaceNameLabel: name}
	maps.Copy(out, labels)
	return out
}
