// Package crd_test proves the SidecarSet CRD on a real kube-apiserver: it
// installs, every seed example applies with kubectl as written, and invalid
// objects are rejected by the schema and its CEL rules with field paths.
package crd_test

import (
	"bytes"
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/sidecarset-operator/sidecarset-operator/test/integration/framework"
)

var env *framework.Env

func TestCRD(t *testing.T) {
	gomega.RegisterFailHandler(ginkgo.Fail)
	ginkgo.RunSpecs(t, "SidecarSet CRD Suite")
}

var _ = ginkgo.BeforeSuite(func() {
	var err error
	env, err = framework.Start(framework.Options{ServeConversion: true})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
})

var _ = ginkgo.AfterSuite(func() {
	gomega.Expect(env.Stop()).To(gomega.Succeed())
})

// kubectl runs the kubectl built with the control plane against envtest.
func kubectl(ctx context.Context, stdin []byte, args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, env.Kubectl, append([]string{"--kubeconfig", env.KubeconfigPath}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(stdin), &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}
