package serving

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
)

// MaxAdmissionReviewBytes bounds the body of an admission request: the API
// server refuses an object over 3 MiB in a request, and an AdmissionReview
// carries the object and, on UPDATE and DELETE, the old object, with the
// request's metadata around them (controller-runtime's admission handler
// reads the same 7 MiB at most).
const MaxAdmissionReviewBytes = 7 << 20

// Route says how one path is served.
type Route struct {
	// MaxBodyBytes bounds the request body; 0 leaves the bound to the
	// handler (the Converter bounds each object of a review it streams).
	MaxBodyBytes int64
	// Authenticated paths require the API server's client certificate when
	// the Guard has a client CA.
	Authenticated bool
}

var (
	// Admission is the route of the admission webhooks.
	Admission = Route{MaxBodyBytes: MaxAdmissionReviewBytes, Authenticated: true}
	// Conversion is the route of the CRD conversion webhook: the API server
	// presents no client certificate to conversion webhooks (apiextensions
	// builds their client with no authentication), so it is open; it leaks
	// nothing (it converts what it is given) and its reads are bounded.
	Conversion = Route{}
)

// Options configure the Guard.
type Options struct {
	// ClientCAFile holds the CAs of the certificates the API server presents
	// to the admission webhooks (its --admission-control-config-file
	// kubeconfig). Empty: admission requests are not authenticated.
	ClientCAFile string
	// ClientNames are the accepted certificates' subject common names;
	// empty accepts any certificate a CA of ClientCAFile signed.
	ClientNames []string
}

// Guard applies each route's bounds and client authentication.
type Guard struct {
	ca    *dynamiccertificates.DynamicFileCAContent
	names sets.Set[string]

	mu        sync.Mutex
	base      *tls.Config
	pool      *x509.CertPool
	perClient *tls.Config
}

// NewGuard reads the client CA file, if any.
func NewGuard(o Options) (*Guard, error) {
	g := &Guard{names: sets.New(o.ClientNames...)}
	if o.ClientCAFile == "" {
		if len(o.ClientNames) > 0 {
			return nil, errors.New("accepted client names need a client CA file")
		}
		return g, nil
	}
	ca, err := dynamiccertificates.NewDynamicCAContentFromFile("webhook-client-ca", o.ClientCAFile)
	if err != nil {
		return nil, fmt.Errorf("reading the webhook client CA: %w", err)
	}
	g.ca = ca
	return g, nil
}

// Authenticates reports whether admission requests need a client
// certificate.
func (g *Guard) Authenticates() bool { return g.ca != nil }

// Start reloads the client CA file when it changes (an fsnotify watch,
// which follows a file replaced by a rename, as a mounted ConfigMap's is)
// until ctx ends; without a client CA it returns.
func (g *Guard) Start(ctx context.Context) error {
	if g.ca != nil {
		g.ca.Run(ctx, 1)
	}
	return nil
}

// NeedLeaderElection is false: every replica serves the webhooks.
func (g *Guard) NeedLeaderElection() bool { return false }

// ConfigureTLS makes the server verify a client certificate when one is
// given, against the client CA file's current content. It does nothing
// without a client CA.
func (g *Guard) ConfigureTLS(c *tls.Config) {
	if g.ca == nil {
		return
	}
	g.base = c
	c.ClientAuth = tls.VerifyClientCertIfGiven
	c.GetConfigForClient = g.configForClient
}

// configForClient is the server's configuration with the current client
// CAs; it is cloned again only when the CA file changes.
func (g *Guard) configForClient(*tls.ClientHelloInfo) (*tls.Config, error) {
	opts, ok := g.ca.VerifyOptions()
	if !ok {
		return nil, errors.New("no webhook client CA loaded")
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.perClient == nil || g.pool != opts.Roots {
		c := g.base.Clone()
		c.GetConfigForClient = nil
		c.ClientAuth = tls.VerifyClientCertIfGiven
		c.ClientCAs = opts.Roots
		g.pool, g.perClient = opts.Roots, c
	}
	return g.perClient, nil
}

// Refusal is why a request is refused before its handler runs.
type Refusal struct {
	Code    int
	Message string
}

// Authorize decides whether a request over the TLS connection state may
// reach an authenticated path: a certificate verified against the client CA
// (verified chains, which the TLS layer builds only then), whose subject
// common name is among names when names is not empty.
func Authorize(state *tls.ConnectionState, names sets.Set[string]) *Refusal {
	if state == nil || len(state.VerifiedChains) == 0 || len(state.VerifiedChains[0]) == 0 {
		return &Refusal{Code: http.StatusUnauthorized,
			Message: "this webhook serves the API server only: present its admission client certificate"}
	}
	cn := state.VerifiedChains[0][0].Subject.CommonName
	if names.Len() > 0 && !names.Has(cn) {
		return &Refusal{Code: http.StatusForbidden,
			Message: fmt.Sprintf("client certificate %q is not one the webhook accepts", cn)}
	}
	return nil
}

// Check decides, for a request reaching route, whether it is refused before
// its handler reads anything: unauthenticated, or a body longer than the
// route's bound by its declared length.
func (g *Guard) Check(route Route, r *http.Request) *Refusal {
	if route.Authenticated && g.ca != nil {
		if refusal := Authorize(r.TLS, g.names); refusal != nil {
			return refusal
		}
	}
	if route.MaxBodyBytes > 0 && r.ContentLength > route.MaxBodyBytes {
		return &Refusal{Code: http.StatusRequestEntityTooLarge,
			Message: fmt.Sprintf("the request body of %d bytes exceeds this webhook's limit of %d bytes", r.ContentLength, route.MaxBodyBytes)}
	}
	return nil
}

// Wrap serves h on route: a refused request gets its status and message and
// the connection is closed (its body is not read); the body of an accepted
// one ends in an error past the route's bound.
func (g *Guard) Wrap(route Route, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refusal := g.Check(route, r); refusal != nil {
			refuse(w, refusal)
			return
		}
		if route.MaxBodyBytes > 0 {
			r.Body = http.MaxBytesReader(w, r.Body, route.MaxBodyBytes)
		}
		h.ServeHTTP(w, r)
	})
}

// refuse answers without reading the body: Connection: close keeps the
// server from draining it.
func refuse(w http.ResponseWriter, refusal *Refusal) {
	w.Header().Set("Connection", "close")
	http.Error(w, refusal.Message, refusal.Code)
}

// NewMux returns the webhook server's multiplexer: a path no webhook is
// registered at is answered 404 without reading its body.
func NewMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		refuse(w, &Refusal{Code: http.StatusNotFound, Message: fmt.Sprintf("no webhook at %s", r.URL.Path)})
	})
	return mux
}
