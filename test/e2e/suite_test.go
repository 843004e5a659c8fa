// Package e2e_test runs the end-to-end suites on a kwok cluster (binary
// runtime: a real control plane, simulated kubelets) with the operator's
// manager built from this checkout and running on the host.
package e2e_test

import (
	"context"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/sidecarset-operator/sidecarset-operator/test/e2e/framework"
)

var env *framework.Env

func TestE2E(t *testing.T) {
	gomega.RegisterFailHandler(ginkgo.Fail)
	gomega.SetDefaultEventuallyTimeout(60 * time.Second)
	gomega.SetDefaultEventuallyPollingInterval(250 * time.Millisecond)
	ginkgo.RunSpecs(t, "End-to-end Suite")
}

var _ = ginkgo.BeforeSuite(func(ctx ginkgo.SpecContext) {
	var err error
	env, err = framework.Setup(ctx, framework.Options{Nodes: 3})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
}, ginkgo.NodeTimeout(10*time.Minute))

var _ = ginkgo.AfterSuite(func(ctx ginkgo.SpecContext) {
	keep := ginkgo.CurrentSpecReport().Failed()
	gomega.Expect(env.Teardown(context.WithoutCancel(ctx), keep)).To(gomega.Succeed())
}, ginkgo.NodeTimeout(2*time.Minute))
