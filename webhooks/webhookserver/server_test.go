package webhookserver

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/sidecarset-operator/sidecarset-operator/api/install"
	"github.com/sidecarset-operator/sidecarset-operator/internal/candidate"
)

// startManager is what the webhook Server asks of the manager, recorded.
// Anything else it asked would panic (the embedded Manager is nil).
type startManager struct {
	manager.Manager
	scheme *runtime.Scheme
	cache  *recordingCache

	mu             sync.Mutex
	serverAskedFor bool
}

func (m *startManager) GetScheme() *runtime.Scheme  { return m.scheme }
func (m *startManager) GetCache() ctrlcache.Cache   { return m.cache }
func (m *startManager) GetAPIReader() client.Reader { return m.cache }

// GetWebhookServer is where the manager starts its webhook server, which
// reads the certificate's files.
func (m *startManager) GetWebhookServer() webhook.Server {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.serverAskedFor = true
	return webhook.NewServer(webhook.Options{})
}

// recordingCache records the informers asked for.
type recordingCache struct {
	*informertest.FakeInformers
	mu   sync.Mutex
	kind []string
}

func (c *recordingCache) GetInformer(ctx context.Context, obj client.Object, opts ...ctrlcache.InformerGetOption) (ctrlcache.Informer, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.kind = append(c.kind, fmt.Sprintf("%T", obj))
	return c.FakeInformers.GetInformer(ctx, obj, opts...)
}

func (c *recordingCache) requested() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.kind)
}

// The webhook server is asked for (and so started by the manager) only
// once the certificate is ready: on a first start its files do not exist
// before, and the server fails to start. The informers the handlers read
// start before, while the certificate is made ready (the SidecarSets' is
// the registry follower's, which runs beside the server).
func TestServer_StartsTheWebhookServerOnceTheCertificateIsReady(t *testing.T) {
	t.Parallel()
	scheme := runtime.NewScheme()
	install.Install(scheme)
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(metav1.AddMetaToScheme(scheme))
	m := &startManager{scheme: scheme, cache: &recordingCache{FakeInformers: &informertest.FakeInformers{Scheme: scheme}}}
	certReady := make(chan struct{})
	s := &Server{mgr: m, certReady: certReady, opts: Options{Registry: emptyRegistry(t)}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	}()

	deadline := time.Now().Add(5 * time.Second)
	handlersRead := func() bool {
		got := m.cache.requested()
		return slices.Contains(got, "*v1.ControllerRevision") && slices.Contains(got, "*v1.PartialObjectMetadata")
	}
	for !handlersRead() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !handlersRead() {
		t.Fatalf("before the certificate is ready, the informers asked for are %v, want the revisions' and the namespaces'", m.cache.requested())
	}
	time.Sleep(100 * time.Millisecond)
	m.mu.Lock()
	asked := m.serverAskedFor
	m.mu.Unlock()
	if asked {
		t.Fatal("the webhook server was asked for (and so started) before the certificate was ready")
	}

	close(certReady)
	for time.Now().Before(deadline) {
		m.mu.Lock()
		asked = m.serverAskedFor
		m.mu.Unlock()
		if asked {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the certificate is ready and the webhook server was never asked for")
}

// emptyRegistry is a registry of no SidecarSet, synced.
func emptyRegistry(t *testing.T) *candidate.Registry {
	t.Helper()
	r, err := candidate.New()
	if err != nil {
		t.Fatal(err)
	}
	return r
}
