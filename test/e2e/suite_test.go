// Package e2e_test runs the end-to-end suites on a kwok cluster (binary
// runtime: a real control plane, simulated kubelets) with the operator's
// manager built from this checkout and running on the host.
//
// Specs run one at a time (the manager-restart spec stops the operator) and
// each carries labels naming its area, so that a subset runs with
// -ginkgo.label-filter (for example "strategy && !large").
package e2e_test

import (
	"context"
	"os"
	"testing"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sidecarset-operator/sidecarset-operator/test/e2e/framework"
)

var env *framework.Env

func TestE2E(t *testing.T) {
	gomega.RegisterFailHandler(ginkgo.Fail)
	// Eventually and Consistently get the spec's context: without this they
	// would wait on it forever instead of timing out.
	gomega.EnforceDefaultTimeoutsWhenUsingContexts()
	gomega.SetDefaultEventuallyTimeout(waitTimeout)
	gomega.SetDefaultEventuallyPollingInterval(pollInterval)
	gomega.SetDefaultConsistentlyDuration(holdStill)
	gomega.SetDefaultConsistentlyPollingInterval(pollInterval)
	// The clients' logs (API warnings, for one) go to the spec's output.
	ctrllog.SetLogger(ginkgo.GinkgoLogr)
	suite, reporter := ginkgo.GinkgoConfiguration()
	if !withRealNode() {
		// Without the real node, its specs are left out, by their label.
		if suite.LabelFilter == "" {
			suite.LabelFilter = "!" + realNodeLabel
		} else {
			suite.LabelFilter = "(" + suite.LabelFilter + ") && !" + realNodeLabel
		}
	}
	ginkgo.RunSpecs(t, "End-to-end Suite", suite, reporter)
}

// withRealNode reports whether the suite joins a real node to its cluster
// and runs the specs labelled realnode there: unless SIDECARSET_REAL_NODE
// says off (make test REAL_NODE=off).
func withRealNode() bool {
	return os.Getenv("SIDECARSET_REAL_NODE") != "off"
}

var _ = ginkgo.BeforeSuite(func(ctx ginkgo.SpecContext) {
	var err error
	env, err = framework.Setup(ctx, framework.Options{Nodes: 3, RealNode: withRealNode(), Out: ginkgo.GinkgoWriter})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
}, ginkgo.NodeTimeout(setupTimeout))

var _ = ginkgo.AfterSuite(func(ctx ginkgo.SpecContext) {
	keep := ginkgo.CurrentSpecReport().Failed()
	gomega.Expect(timings.Write(env)).To(gomega.Succeed())
	gomega.Expect(env.Teardown(context.WithoutCancel(ctx), keep)).To(gomega.Succeed())
}, ginkgo.NodeTimeout(teardownTimeout))
