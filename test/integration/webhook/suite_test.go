// Package webhook_test proves pod injection and SidecarSet admission on a
// real kube-apiserver that calls the operator's webhooks over TLS: envtest
// runs the API server and etcd, and the operator's manager, wired exactly
// as main wires it, serves the webhooks and runs the SidecarSet controller
// (which records the ControllerRevisions that revision pinning reads).
//
// SidecarSets are cluster-scoped, so every spec selects pods with a label
// unique to its namespace (specLabel) and deletes its SidecarSets when it
// ends; specs that change cluster-wide state (the whitelist ConfigMap, the
// webhook configurations) restore it before they end.
package webhook_test

import (
	"os"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset-operator/sidecarset-operator/test/integration/framework"
)

// Timeouts of the suite.
const (
	// eventuallyTimeout bounds every wait: the webhook registry, the
	// controller and the API server's webhook configuration all catch up
	// within a second or two on a loaded machine.
	eventuallyTimeout = 30 * time.Second
	// pollInterval is how often a wait checks again.
	pollInterval = 100 * time.Millisecond
)

// seedDir holds the seed documents' examples, shared with the CRD suite.
const seedDir = "../crd/testdata/seeds/newest"

var (
	env *framework.Env
	// k8s is an admin client whose requests record admission warnings in
	// the collector of their context (framework.WithWarnings).
	k8s client.Client
	// stop stops the operator and the control plane.
	stop func() error
)

func TestWebhooks(t *testing.T) {
	framework.RunSuite(t, "Webhook Suite", eventuallyTimeout, pollInterval)
}

var _ = ginkgo.BeforeSuite(func(ctx ginkgo.SpecContext) {
	var err error
	env, stop, err = framework.StartWithOperator(ctx, seedWhitelist())
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	k8s, err = env.NewWarningClient()
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
}, ginkgo.NodeTimeout(2*time.Minute))

var _ = ginkgo.AfterSuite(func() {
	if stop != nil {
		gomega.Expect(stop()).To(gomega.Succeed())
	}
})

// seedWhitelist is the kruise-configuration ConfigMap exactly as the seed
// document writes it.
func seedWhitelist() *corev1.ConfigMap {
	data, err := os.ReadFile(seedDir + "/19-whitelist-configmap.yaml")
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	cm := &corev1.ConfigMap{}
	gomega.Expect(yaml.UnmarshalStrict(data, cm)).To(gomega.Succeed())
	return cm
}
