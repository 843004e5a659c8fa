package framework

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// RunSuite runs a package's ginkgo specs with gomega's default waits: every
// Eventually polls every poll and gives up after timeout, even with a
// context (spec contexts have no deadline).
func RunSuite(t *testing.T, name string, timeout, poll time.Duration) {
	t.Helper()
	gomega.RegisterFailHandler(ginkgo.Fail)
	gomega.SetDefaultEventuallyTimeout(timeout)
	gomega.SetDefaultEventuallyPollingInterval(poll)
	gomega.EnforceDefaultTimeoutsWhenUsingContexts()
	ginkgo.RunSpecs(t, name)
}

// StartWithOperator starts the control plane with the webhook
// configurations, creates the operator's namespace and then the given
// objects (namespaces, the whitelist ConfigMap), and runs the operator,
// logging to the spec output. The returned function stops the operator,
// then the control plane.
func StartWithOperator(ctx context.Context, objects ...client.Object) (*Env, func() error, error) {
	ctrl.SetLogger(zap.New(zap.WriteTo(ginkgo.GinkgoWriter), zap.UseDevMode(true)))
	env, err := Start(Options{Webhooks: true})
	if err != nil {
		return nil, nil, err
	}
	objects = append([]client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: OperatorNamespace}}}, objects...)
	for _, obj := range objects {
		if err := env.Client.Create(ctx, obj); err != nil {
			return nil, nil, errors.Join(err, env.Stop())
		}
	}
	mgrCtx, stopManager := context.WithCancel(context.WithoutCancel(ctx))
	if err := env.StartManager(mgrCtx, ManagerOptions{}); err != nil {
		stopManager()
		return nil, nil, errors.Join(err, env.Stop())
	}
	return env, func() error {
		stopManager()
		return env.Stop()
	}, nil
}
