package certs

import (
	"net/http"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// ownObjects returns the manager as cert-controller sees it: its informers
// list and watch every Secret of the namespace and every webhook
// configuration of the cluster, which would need read access to all of
// them; through this manager's configuration they ask for the certificate
// Secret and the two named configurations only (a metadata.name field
// selector), which grants limited by resourceNames allow.
func ownObjects(mgr manager.Manager, o CertOptions) manager.Manager {
	cfg := rest.CopyConfig(mgr.GetConfig())
	selectors := ownSelectors(o)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return byName{next: rt, selectors: selectors}
	})
	return configManager{Manager: mgr, cfg: cfg}
}

// ownSelectors maps the collection paths of the certificate Secret and the
// named webhook configurations to a field selector on their name.
func ownSelectors(o CertOptions) map[string]string {
	const admission = "/apis/admissionregistration.k8s.io/v1/"
	out := map[string]string{"/api/v1/namespaces/" + o.Namespace + "/secrets": "metadata.name=" + o.SecretName}
	if o.MutatingConfig != "" {
		out[admission+"mutatingwebhookconfigurations"] = "metadata.name=" + o.MutatingConfig
	}
	if o.ValidatingConfig != "" {
		out[admission+"validatingwebhookconfigurations"] = "metadata.name=" + o.ValidatingConfig
	}
	return out
}

// configManager is a manager with another REST configuration.
type configManager struct {
	manager.Manager
	cfg *rest.Config
}

func (m configManager) GetConfig() *rest.Config { return m.cfg }

// byName adds a field selector to the list and watch requests of some
// collections, by path.
type byName struct {
	next      http.RoundTripper
	selectors map[string]string // by collection path
}

func (b byName) RoundTrip(req *http.Request) (*http.Response, error) {
	selector, ok := b.selectors[req.URL.Path]
	if req.Method != http.MethodGet || !ok {
		return b.next.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	q := req.URL.Query()
	if existing := q.Get("fieldSelector"); existing != "" && existing != selector {
		q.Set("fieldSelector", existing+","+selector)
	} else {
		q.Set("fieldSelector", selector)
	}
	req.URL.RawQuery = q.Encode()
	return b.next.RoundTrip(req)
}
