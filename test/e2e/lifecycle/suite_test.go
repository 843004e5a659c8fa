// Package lifecycle_test runs the day-two procedures of docs/uninstall.md
// and docs/migration.md on a kwok cluster of its own: the plain install
// (config/default, reached by URL: install/) with the manager on the host,
// make undeploy and make purge as a user runs them, and taking over from
// OpenKruise and moving back with OpenKruise's webhook configurations
// (test/fixtures/kruise-v1.9) answered by a stand-in for its manager, while
// pods are created without pause. The specs run in order: each starts from
// the cluster the previous one left.
package lifecycle_test

import (
	"context"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sidecarset-operator/sidecarset-operator/test/e2e/framework"
)

var env *framework.Env

// options install config/default (through install/) and run the manager
// with its webhook configurations' real names, those make undeploy deletes.
var options = framework.Options{
	Name:                  "e2e-lifecycle",
	Nodes:                 1,
	Install:               "test/e2e/lifecycle/install",
	WebhookConfigurations: [2]string{mutatingConfiguration, validatingConfiguration},
	Out:                   ginkgo.GinkgoWriter,
}

const (
	mutatingConfiguration   = "sidecarset-operator-mutating"
	validatingConfiguration = "sidecarset-operator-validating"
)

func TestLifecycle(t *testing.T) {
	gomega.RegisterFailHandler(ginkgo.Fail)
	gomega.EnforceDefaultTimeoutsWhenUsingContexts()
	gomega.SetDefaultEventuallyTimeout(2 * time.Minute)
	gomega.SetDefaultEventuallyPollingInterval(250 * time.Millisecond)
	ctrllog.SetLogger(ginkgo.GinkgoLogr)
	suite, reporter := ginkgo.GinkgoConfiguration()
	ginkgo.RunSpecs(t, "Lifecycle Suite", suite, reporter)
}

var _ = ginkgo.BeforeSuite(func(ctx ginkgo.SpecContext) {
	var err error
	env, err = framework.Setup(ctx, options)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
}, ginkgo.NodeTimeout(10*time.Minute))

var _ = ginkgo.AfterSuite(func(ctx ginkgo.SpecContext) {
	keep := ginkgo.CurrentSpecReport().Failed()
	gomega.Expect(env.Teardown(context.WithoutCancel(ctx), keep)).To(gomega.Succeed())
}, ginkgo.NodeTimeout(2*time.Minute))
