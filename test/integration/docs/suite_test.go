// Package docs_test proves the user guide (docs/*.md): every ```yaml example
// is a complete, valid object that the API server accepts with the
// operator's webhooks in the loop. envtest runs a real kube-apiserver and
// etcd; the operator's manager, wired exactly as main wires it, serves the
// SidecarSet defaulting and validating webhooks and the pod injection
// webhook, and runs the SidecarSet controller (which records the
// ControllerRevisions that the revision-pinning examples name).
//
// The examples of one page are applied with kubectl apply, in the order the
// page shows them, and deleted before the next page: a page is a story that
// a reader can replay on a fresh cluster.
package docs_test

import (
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/sidecarset-operator/sidecarset-operator/test/integration/framework"
)

// Timeouts of the suite.
const (
	// eventuallyTimeout bounds every wait: the webhook registry, the
	// whitelist watcher and the controller catch up within a second or two
	// on a loaded machine; an example that needs a ControllerRevision
	// recorded by the controller is retried until it is.
	eventuallyTimeout = 45 * time.Second
	// pollInterval is how often a wait checks again.
	pollInterval = 250 * time.Millisecond
)

var (
	env *framework.Env
	// stop stops the operator and the control plane.
	stop func() error
)

func TestDocs(t *testing.T) {
	framework.RunSuite(t, "User Guide Suite", eventuallyTimeout, pollInterval)
}

var _ = ginkgo.BeforeSuite(func(ctx ginkgo.SpecContext) {
	var err error
	env, stop, err = framework.StartWithOperator(ctx)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
}, ginkgo.NodeTimeout(2*time.Minute))

var _ = ginkgo.AfterSuite(func() {
	if stop != nil {
		gomega.Expect(stop()).To(gomega.Succeed())
	}
})
