// Package incluster_test runs the operator as users run it: installed from
// the plain install (config/default) in the cluster, from its release image
// (built as make image builds it), two replicas on the real node (test/node)
// behind the webhooks' Service. No manager runs on the host. It needs the
// real node: with SIDECARSET_REAL_NODE=off nothing runs.
package incluster_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sidecarset-operator/sidecarset-operator/test/e2e/framework"
)

var (
	env *framework.Env
	// imageDigest is the digest of the manager image the suite built.
	imageDigest string
	// installed is when the suite applied the install, and installReady
	// how long its two replicas took to become ready: measured by the
	// first spec that waits for them (the specs run in random order, and
	// the upgrade specs replace the install).
	installed    time.Time
	installReady time.Duration
	timings      framework.Timings
)

// timing reports a measured time of the current spec, and records it for
// make test to print.
func timing(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	ginkgo.AddReportEntry("timing", line, ginkgo.ReportEntryVisibilityAlways)
	timings.Record(ginkgo.CurrentSpecReport().LeafNodeText, line)
}

// realNodeLabel labels the specs that need the real node.
const realNodeLabel = "realnode"

func TestInCluster(t *testing.T) {
	gomega.RegisterFailHandler(ginkgo.Fail)
	gomega.EnforceDefaultTimeoutsWhenUsingContexts()
	gomega.SetDefaultEventuallyTimeout(3 * time.Minute)
	gomega.SetDefaultEventuallyPollingInterval(250 * time.Millisecond)
	ctrllog.SetLogger(ginkgo.GinkgoLogr)
	suite, reporter := ginkgo.GinkgoConfiguration()
	if os.Getenv("SIDECARSET_REAL_NODE") == "off" {
		suite.LabelFilter = "!" + realNodeLabel
	}
	ginkgo.RunSpecs(t, "In-cluster Suite", suite, reporter)
}

var _ = ginkgo.BeforeSuite(func(ctx ginkgo.SpecContext) {
	var err error
	env, err = framework.Setup(ctx, framework.Options{Name: "e2e-incluster", Nodes: 2, RealNode: true, InCluster: true, Out: ginkgo.GinkgoWriter})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	imageDigest, err = env.InstallFromImage(ctx)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	installed = time.Now()
}, ginkgo.NodeTimeout(10*time.Minute))

var _ = ginkgo.AfterSuite(func(ctx ginkgo.SpecContext) {
	keep := ginkgo.CurrentSpecReport().Failed()
	gomega.Expect(timings.Write(env)).To(gomega.Succeed())
	gomega.Expect(env.Teardown(context.WithoutCancel(ctx), keep)).To(gomega.Succeed())
}, ginkgo.NodeTimeout(2*time.Minute))

// recordInstallReady records, once, how long the suite's install took to
// have its replicas ready; call it right after waiting for them.
func recordInstallReady() time.Duration {
	if installReady == 0 {
		installReady = time.Since(installed)
	}
	return installReady
}
