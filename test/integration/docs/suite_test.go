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
	"context"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

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
	// stopManager stops the operator.
	stopManager context.CancelFunc
)

func TestDocs(t *testing.T) {
	gomega.RegisterFailHandler(ginkgo.Fail)
	gomega.SetDefaultEventuallyTimeout(eventuallyTimeout)
	gomega.SetDefaultEventuallyPollingInterval(pollInterval)
	gomega.EnforceDefaultTimeoutsWhenUsingContexts()
	ginkgo.RunSpecs(t, "User Guide Suite")
}

var _ = ginkgo.BeforeSuite(func(ctx ginkgo.SpecContext) {
	ctrl.SetLogger(zap.New(zap.WriteTo(ginkgo.GinkgoWriter), zap.UseDevMode(true)))
	var err error
	env, err = framework.Start(framework.Options{Webhooks: true})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: framework.OperatorNamespace}}
	gomega.Expect(env.Client.Create(ctx, ns)).To(gomega.Succeed())

	var mgrCtx context.Context
	mgrCtx, stopManager = context.WithCancel(context.WithoutCancel(ctx))
	gomega.Expect(env.StartManager(mgrCtx, framework.ManagerOptions{})).To(gomega.Succeed())
}, ginkgo.NodeTimeout(2*time.Minute))

var _ = ginkgo.AfterSuite(func() {
	if stopManager != nil {
		stopManager()
	}
	gomega.Expect(env.Stop()).To(gomega.Succeed())
})
