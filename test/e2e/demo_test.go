package e2e_test

import (
	"path/filepath"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/sidecarset-operator/sidecarset-operator/test/demo"
)

// `make demo` (the user manual's walkthrough, checked step by step) runs
// here too, on the e2e cluster, so that it stays green.
var _ = ginkgo.Describe("make demo", ginkgo.Label("demo"), func() {
	ginkgo.It("should behave as the user manual says, step by step", func(ctx ginkgo.SpecContext) {
		var transcript strings.Builder
		err := demo.Run(ctx, demo.Options{
			Kubectl:    env.Cluster.Kubectl(),
			Kubeconfig: env.Cluster.KubeconfigPath(),
			Dir:        filepath.Join(env.Dir, "demo"),
			Out:        &transcript,
		})
		gomega.Expect(err).NotTo(gomega.HaveOccurred(), transcript.String())
		gomega.Expect(transcript.String()).To(gomega.ContainSubstring("The demo behaved as the user manual says."))
	})
})
