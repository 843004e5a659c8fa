package lifecycle_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sidecarset-operator/sidecarset-operator/test/fixtures"
	"github.com/sidecarset-operator/sidecarset-operator/test/pki"
)

// kruiseManager stands in for OpenKruise's manager: an HTTPS server on
// 127.0.0.1 that allows every AdmissionReview it is sent and counts them by
// path. It injects nothing: the specs only need to know whether a webhook
// OpenKruise registered is answered.
type kruiseManager struct {
	ca       *pki.CA
	server   *http.Server
	listener net.Listener
	addr     string
	mu       sync.Mutex
	reviews  map[string]int
	// objects are the names of the objects reviewed, by path.
	objects map[string]map[string]bool
}

// startKruiseManager starts the stand-in on a free port.
func startKruiseManager() (*kruiseManager, error) {
	ca, err := pki.NewCA("openkruise-stand-in")
	if err != nil {
		return nil, err
	}
	m := &kruiseManager{ca: ca, reviews: map[string]int{}, objects: map[string]map[string]bool{}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	m.addr = l.Addr().String()
	if err := l.Close(); err != nil {
		return nil, err
	}
	return m, m.start()
}

// start serves on the stand-in's address (again, after stop).
func (m *kruiseManager) start() error {
	cert, err := m.ca.Issue("openkruise-stand-in", x509.ExtKeyUsageServerAuth)
	if err != nil {
		return err
	}
	l, err := tls.Listen("tcp", m.addr, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		return err
	}
	m.listener = l
	m.server = &http.Server{Handler: http.HandlerFunc(m.allow), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = m.server.Serve(l) }()
	return nil
}

// stop stops serving, as when OpenKruise's manager is scaled to 0.
func (m *kruiseManager) stop() error {
	if m.server == nil {
		return nil
	}
	err := m.server.Close()
	m.server = nil
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

func (m *kruiseManager) allow(w http.ResponseWriter, r *http.Request) {
	review := &admissionv1.AdmissionReview{}
	if err := json.NewDecoder(r.Body).Decode(review); err != nil || review.Request == nil {
		http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	m.reviews[r.URL.Path]++
	if m.objects[r.URL.Path] == nil {
		m.objects[r.URL.Path] = map[string]bool{}
	}
	m.objects[r.URL.Path][review.Request.Name] = true
	m.mu.Unlock()
	review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
	review.Request = nil
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(review)
}

// answered is how many reviews the stand-in answered on a path.
func (m *kruiseManager) answered(path string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reviews[path]
}

// reviewed says whether the stand-in was sent a review of the named object
// on a path.
func (m *kruiseManager) reviewed(path, name string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.objects[path][name]
}

// kruiseWebhooks are OpenKruise 1.9's webhook configurations as its manager
// wrote them (test/fixtures/kruise-v1.9/webhookconfigurations.yaml: the pod
// and SidecarSet entries, failurePolicy Fail), reaching the stand-in: only
// the URL's host and the CA bundle differ from the fixture.
func (m *kruiseManager) kruiseWebhooks() (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration) {
	mutating := kruiseDoc[admissionregistrationv1.MutatingWebhookConfiguration]("MutatingWebhookConfiguration")
	validating := kruiseDoc[admissionregistrationv1.ValidatingWebhookConfiguration]("ValidatingWebhookConfiguration")
	for i := range mutating.Webhooks {
		m.reach(&mutating.Webhooks[i].ClientConfig)
	}
	for i := range validating.Webhooks {
		m.reach(&validating.Webhooks[i].ClientConfig)
	}
	return mutating, validating
}

// reach points a fixture's client configuration (https://127.0.0.1:19876/
// <path>, the port of the run that wrote it) at the stand-in.
func (m *kruiseManager) reach(c *admissionregistrationv1.WebhookClientConfig) {
	gomega.ExpectWithOffset(2, c.URL).NotTo(gomega.BeNil())
	url := strings.Replace(*c.URL, "127.0.0.1:19876", m.addr, 1)
	gomega.ExpectWithOffset(2, url).NotTo(gomega.Equal(*c.URL), "the fixture's URL changed")
	c.URL = &url
	c.CABundle = m.ca.CertPEM()
}

// kruiseDoc reads the one document of a kind of the fixture, without its
// removed CA bundle and without what the API server set.
func kruiseDoc[T any](kind string) *T {
	docs, err := fixtures.KruiseRawDocs(fixtures.Kruise19, "webhookconfigurations.yaml", kind)
	gomega.ExpectWithOffset(2, err).NotTo(gomega.HaveOccurred())
	gomega.ExpectWithOffset(2, docs).To(gomega.HaveLen(1))
	var raw map[string]any
	gomega.ExpectWithOffset(2, json.Unmarshal(docs[0], &raw)).To(gomega.Succeed())
	meta := raw["metadata"].(map[string]any)
	for _, k := range []string{"uid", "resourceVersion", "creationTimestamp", "generation", "annotations"} {
		delete(meta, k)
	}
	for _, wh := range raw["webhooks"].([]any) {
		delete(wh.(map[string]any)["clientConfig"].(map[string]any), "caBundle")
	}
	js, err := json.Marshal(raw)
	gomega.ExpectWithOffset(2, err).NotTo(gomega.HaveOccurred())
	out := new(T)
	gomega.ExpectWithOffset(2, json.Unmarshal(js, out)).To(gomega.Succeed())
	return out
}

// Names of OpenKruise's configurations and of the entries that handle pods
// and SidecarSets.
const (
	kruiseMutating   = "kruise-mutating-webhook-configuration"
	kruiseValidating = "kruise-validating-webhook-configuration"
)

// kruiseSidecarSetEntries are the entries of OpenKruise's configurations
// that inject pods and admit SidecarSets: the ones a takeover removes
// (docs/migration.md).
var kruiseSidecarSetEntries = []string{"mpod.kb.io", "msidecarset.kb.io", "vsidecarset.kb.io"}

// withoutKruiseEntries removes the named entries from both of OpenKruise's
// configurations, as kubectl patch does (a JSON patch per entry).
func withoutKruiseEntries(ctx context.Context, names []string) {
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{}
	gomega.ExpectWithOffset(1, env.Client.Get(ctx, types.NamespacedName{Name: kruiseMutating}, mutating)).To(gomega.Succeed())
	mutating.Webhooks = slices.DeleteFunc(mutating.Webhooks, func(w admissionregistrationv1.MutatingWebhook) bool { return slices.Contains(names, w.Name) })
	gomega.ExpectWithOffset(1, env.Client.Update(ctx, mutating)).To(gomega.Succeed())
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	gomega.ExpectWithOffset(1, env.Client.Get(ctx, types.NamespacedName{Name: kruiseValidating}, validating)).To(gomega.Succeed())
	validating.Webhooks = slices.DeleteFunc(validating.Webhooks, func(w admissionregistrationv1.ValidatingWebhook) bool { return slices.Contains(names, w.Name) })
	gomega.ExpectWithOffset(1, env.Client.Update(ctx, validating)).To(gomega.Succeed())
}

// createKruiseWebhooks creates OpenKruise's configurations (reaching the
// stand-in), replacing any left.
func createKruiseWebhooks(ctx context.Context, m *kruiseManager) {
	deleteKruiseWebhooks(ctx)
	mutating, validating := m.kruiseWebhooks()
	gomega.ExpectWithOffset(1, env.Client.Create(ctx, mutating)).To(gomega.Succeed())
	gomega.ExpectWithOffset(1, env.Client.Create(ctx, validating)).To(gomega.Succeed())
}

// deleteKruiseWebhooks deletes OpenKruise's configurations, if any.
func deleteKruiseWebhooks(ctx context.Context) {
	for _, o := range []client.Object{
		&admissionregistrationv1.MutatingWebhookConfiguration{}, &admissionregistrationv1.ValidatingWebhookConfiguration{},
	} {
		name := kruiseMutating
		if _, ok := o.(*admissionregistrationv1.ValidatingWebhookConfiguration); ok {
			name = kruiseValidating
		}
		o.SetName(name)
		gomega.ExpectWithOffset(2, client.IgnoreNotFound(env.Client.Delete(ctx, o))).To(gomega.Succeed())
	}
}

// String says what the stand-in answered, for failure messages.
func (m *kruiseManager) String() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return fmt.Sprint(m.reviews)
}
