// Package controller_test runs the SidecarSet controller on envtest: a real
// kube-apiserver and etcd, and the operator's manager wired exactly as main
// wires it (its pod webhook injects the pods). There is no kubelet: the
// tests play it (kubelet_test.go), writing the pods' status the way the
// kwok stages of the e2e suite do, and only when a step says so, so that
// every intermediate state of a rollout can be observed and asserted.
//
// Multi-step rollouts are tables (rollout_test.go): each step is an action
// (change the SidecarSet, run the kubelet, delete a pod, restart the
// manager) and the state the rollout must then settle in: the Progressing
// reason, the status counts and which pods run the new sidecar. A settled
// rollout issues no patch until something changes, so the pods can be
// checked exactly once the status says it is settled.
//
// SidecarSets are cluster-scoped: every spec selects pods with a label
// unique to its namespace (specLabel).
package controller_test

import (
	"context"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sidecarset-operator/sidecarset-operator/test/builder"
	"github.com/sidecarset-operator/sidecarset-operator/test/integration/framework"
)

// Timeouts of the suite.
const (
	// eventuallyTimeout bounds every wait: the controller reacts to a pod
	// or SidecarSet change within a second or two on a loaded machine (pod
	// creations are batched for a second).
	eventuallyTimeout = 30 * time.Second
	// pollInterval is how often a wait checks again.
	pollInterval = 100 * time.Millisecond
	// setupTimeout bounds starting the control plane and the manager.
	setupTimeout = 2 * time.Minute
	// holdStill is how long Consistently watches that nothing more happens:
	// longer than the second pod creations are batched for, so that the
	// controller has had several rounds to do what it must not.
	holdStill = 3 * time.Second
)

// whitelist is the suite's patchPodMetadata whitelist: two keys for every
// SidecarSet, and, for SidecarSets labelled stateKeysLabel, a key holding
// SidecarSet state, which the whitelist cannot make writable.
const whitelist = `{"rules":[` +
	`{"allowedAnnotationKeyExprs":["^oom-score$","^team\\.example\\.com/owner$"]},` +
	`{"selector":{"matchLabels":{"test.sidecarset-operator.dev/state-keys":"allowed"}},` +
	`"allowedAnnotationKeyExprs":["^kruise\\.io/sidecarset-hash$"]}]}`

var (
	env *framework.Env
	// k8s is an admin client whose requests record admission warnings in
	// the collector of their context (framework.WithWarnings).
	k8s client.Client
	// managerCtx is the context the manager runs under (restartManager
	// starts a new one under it).
	managerCtx context.Context
)

func TestController(t *testing.T) {
	gomega.SetDefaultConsistentlyDuration(holdStill)
	gomega.SetDefaultConsistentlyPollingInterval(pollInterval)
	framework.RunSuite(t, "Controller Suite", eventuallyTimeout, pollInterval)
}

var _ = ginkgo.BeforeSuite(func(ctx ginkgo.SpecContext) {
	var err error
	env, err = framework.StartOperator(ctx, builder.WhitelistConfigMap(framework.OperatorNamespace, whitelist))
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	k8s, err = env.NewWarningClient()
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	managerCtx = context.WithoutCancel(ctx)
}, ginkgo.NodeTimeout(setupTimeout))

var _ = ginkgo.AfterSuite(func() {
	gomega.Expect(env.StopManager()).To(gomega.Succeed())
	gomega.Expect(env.Stop()).To(gomega.Succeed())
})

// restartManager stops the operator, runs between (while no operator
// runs), and starts a new one: what a crash or a leader change looks like
// to the cluster. Nothing in memory survives; the new manager knows only
// what the pods and the SidecarSet record.
func restartManager(between func()) {
	gomega.Expect(env.StopManager()).To(gomega.Succeed())
	between()
	gomega.Expect(env.StartManager(managerCtx, framework.ManagerOptions{})).To(gomega.Succeed())
}
