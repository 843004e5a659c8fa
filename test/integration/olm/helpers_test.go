package olm_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/cert"

	"github.com/sidecarset-operator/sidecarset-operator/hack/bundle/olm"
	"github.com/sidecarset-operator/sidecarset-operator/hack/bundle/validate"
	"github.com/sidecarset-operator/sidecarset-operator/test/integration/framework"
)

// installNamespace is where the bundle is installed: the operator's
// namespace in the integration framework (and the recommended one).
const installNamespace = framework.OperatorNamespace

// operatorAccount is the user the operator's pods authenticate as.
const operatorAccount = "system:serviceaccount:" + installNamespace + ":sidecarset-operator"

// loadBundle reads the committed bundle/ and bundle.Dockerfile.
func loadBundle() (*validate.Bundle, error) {
	root, err := framework.RepoRoot()
	if err != nil {
		return nil, err
	}
	df, err := os.ReadFile(filepath.Join(root, "bundle.Dockerfile"))
	if err != nil {
		return nil, err
	}
	return validate.Load(os.DirFS(filepath.Join(root, "bundle")), df)
}

// renderInstall renders what OLM creates for the bundle in an
// AllNamespaces OperatorGroup of installNamespace, with a serving
// certificate for OLM's webhook Service.
func renderInstall(b *validate.Bundle) (*olm.Objects, error) {
	host := olm.ServiceName("sidecarset-operator") + "." + installNamespace + ".svc"
	certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey(host, nil, nil)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(certPEM)
	manifests := make([]*unstructured.Unstructured, 0, len(b.Objects))
	for _, o := range b.Objects {
		manifests = append(manifests, o.Unstructured)
	}
	return olm.Render(b.CSV, manifests, olm.Install{
		Namespace: installNamespace, OperatorGroup: "global-operators",
		CABundle: certPEM, ServingCert: certPEM, ServingKey: keyPEM, CAHash: hex.EncodeToString(sum[:]),
	})
}

// apply applies an object server-side as OLM's field manager, in dry-run
// or for real, and returns what the API server answered.
func apply(ctx context.Context, dyn dynamic.Interface, mapper meta.RESTMapper, obj *unstructured.Unstructured, dryRun bool) (*unstructured.Unstructured, error) {
	obj = obj.DeepCopy()
	unstructured.RemoveNestedField(obj.Object, "status")
	unstructured.RemoveNestedField(obj.Object, "metadata", "creationTimestamp")
	gvk := obj.GroupVersionKind()
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, err
	}
	if gvk.Kind == "CustomResourceDefinition" {
		// OLM creates or updates CRDs (a conversion webhook it writes
		// replaces the one the CRD had, which an apply would merge with).
		ri := dyn.Resource(mapping.Resource)
		live, err := ri.Get(ctx, obj.GetName(), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return ri.Create(ctx, obj, metav1.CreateOptions{FieldManager: "olm", DryRun: dryRunAll(dryRun)})
		case err != nil:
			return nil, err
		}
		obj.SetResourceVersion(live.GetResourceVersion())
		return ri.Update(ctx, obj, metav1.UpdateOptions{FieldManager: "olm", DryRun: dryRunAll(dryRun)})
	}
	opts := metav1.ApplyOptions{FieldManager: "olm", Force: true, DryRun: dryRunAll(dryRun)}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		return dyn.Resource(mapping.Resource).Namespace(obj.GetNamespace()).Apply(ctx, obj.GetName(), obj, opts)
	}
	return dyn.Resource(mapping.Resource).Apply(ctx, obj.GetName(), obj, opts)
}

func dryRunAll(dryRun bool) []string {
	if dryRun {
		return []string{metav1.DryRunAll}
	}
	return nil
}
