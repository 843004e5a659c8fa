package app

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/sidecarset-operator/sidecarset-operator/api/install"
)

// NewScheme returns the manager's scheme: the built-in types, the
// SidecarSet API (both versions) and CustomResourceDefinitions (the
// conversion stanza the manager keeps on its CRD).
func NewScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	install.Install(scheme)
	utilruntime.Must(apiextensionsv1.AddToScheme(scheme))
	return scheme
}
