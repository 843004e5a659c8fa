// Package olm_test proves the OLM bundle on a real kube-apiserver (envtest; a
// fresh one is what the dev cluster is for here, and it runs in make
// test): the committed bundle passes every validator rule, its CRD installs
// and its example is accepted; everything OLM would create from the CSV is
// accepted by server-side apply (dry-run); and the operator runs with exactly
// the permissions the CSV grants.
package olm_test

import (
	"testing"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/sidecarset-operator/sidecarset-operator/test/integration/framework"
)

var env *framework.Env

func TestOLM(t *testing.T) {
	gomega.RegisterFailHandler(ginkgo.Fail)
	ginkgo.RunSpecs(t, "OLM Bundle Suite")
}

var _ = ginkgo.BeforeSuite(func() {
	var err error
	env, err = framework.Start(framework.Options{Webhooks: true})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
})

var _ = ginkgo.AfterSuite(func() {
	gomega.Expect(env.Stop()).To(gomega.Succeed())
})
